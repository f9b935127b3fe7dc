// Public text functions (neardup/text.h) and the code point classes of the tokeniser.
#include <array>
#include <cstring>
#include <memory>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "neardup/text.h"
#include "text/normalizer.h"
#include "text/tokenizer.h"
#include "text/unicode.h"
#include "text/utf8.h"

namespace neardup {
namespace text_internal {
namespace {

constexpr uint64_t kHighBits = 0x8080808080808080ULL;
constexpr uint64_t kLowBits7 = 0x7F7F7F7F7F7F7F7FULL;

constexpr uint64_t Repeat(uint8_t byte) { return 0x0101010101010101ULL * byte; }

// High bit of each byte set where the byte (< 0x80) is in [lo, hi]: adding to bytes of at most
// 0x7F never carries into the next byte.
inline uint64_t InRange(uint64_t low7, uint8_t lo, uint8_t hi) {
  const uint64_t at_least_lo = low7 + Repeat(static_cast<uint8_t>(0x80 - lo));
  const uint64_t above_hi = low7 + Repeat(static_cast<uint8_t>(0x7F - hi));
  return at_least_lo & ~above_hi & kHighBits;
}

// Bit i of the result: the high bit of byte i of `bits` (the other bits must be clear).
inline uint64_t GatherHighBits(uint64_t bits) {
  return ((bits >> 7) * 0x0102040810204080ULL) >> 56;
}

}  // namespace

AsciiMasks ClassifyBlockPortable(const unsigned char* p, size_t n) {
  AsciiMasks m;
  size_t i = 0;
  // Eight bytes at a time, in a 64-bit word (byte i of the word is p[i] in either byte order,
  // since the bytes are assembled here).
  for (; i + 8 <= n; i += 8) {
    uint64_t word = 0;
    for (int b = 7; b >= 0; --b) word = (word << 8) | p[i + static_cast<size_t>(b)];
    const uint64_t non_ascii = word & kHighBits;
    const uint64_t low7 = word & kLowBits7;
    const uint64_t digit = InRange(low7, '0', '9') & ~non_ascii;
    const uint64_t letter = InRange(low7 | Repeat(0x20), 'a', 'z') & ~non_ascii;
    m.non_ascii |= GatherHighBits(non_ascii) << i;
    m.letter |= GatherHighBits(letter) << i;
    m.word |= GatherHighBits(letter | digit) << i;
  }
  for (; i < n; ++i) {
    const unsigned char c = p[i];
    if (c >= 0x80) {
      m.non_ascii |= uint64_t{1} << i;
    } else if (kAsciiClasses[c] != CharClass::kSeparator) {
      m.word |= uint64_t{1} << i;
      if (kAsciiClasses[c] == CharClass::kLetter) m.letter |= uint64_t{1} << i;
    }
  }
  return m;
}

AsciiMasks ClassifyBlock(const unsigned char* p, size_t n) {
#if defined(__SSE2__)
  // The last block of a text is padded with zero bytes, which are in no class, so that its bits
  // past n stay clear (faster than the portable path's words and byte loop).
  alignas(16) unsigned char padded[64];
  if (n < 64) {
    std::memcpy(padded, p, n);
    std::memset(padded + n, 0, 64 - n);
    p = padded;
  }
  {
    AsciiMasks m;
    for (int i = 0; i < 4; ++i) {
      const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * i));
      // Signed compares: bytes >= 0x80 are negative and fall outside every ASCII range.
      const __m128i digit = _mm_and_si128(_mm_cmpgt_epi8(v, _mm_set1_epi8('0' - 1)),
                                          _mm_cmplt_epi8(v, _mm_set1_epi8('9' + 1)));
      const __m128i folded = _mm_or_si128(v, _mm_set1_epi8(0x20));  // 'A'..'Z' -> 'a'..'z'
      const __m128i letter = _mm_and_si128(_mm_cmpgt_epi8(folded, _mm_set1_epi8('a' - 1)),
                                           _mm_cmplt_epi8(folded, _mm_set1_epi8('z' + 1)));
      const auto shift = static_cast<unsigned>(16 * i);
      m.letter |= static_cast<uint64_t>(static_cast<uint16_t>(_mm_movemask_epi8(letter))) << shift;
      m.word |= static_cast<uint64_t>(
                    static_cast<uint16_t>(_mm_movemask_epi8(_mm_or_si128(letter, digit))))
                << shift;
      m.non_ascii |= static_cast<uint64_t>(static_cast<uint16_t>(_mm_movemask_epi8(v))) << shift;
    }
    return m;
  }
#else
  return ClassifyBlockPortable(p, n);
#endif
}

CharClass ClassifyNonAscii(char32_t cp) {
  static const std::unique_ptr<std::array<CharClass, 0x10000>> bmp = [] {
    auto table = std::make_unique<std::array<CharClass, 0x10000>>();
    for (char32_t c = 0; c < 0x10000; ++c) {
      (*table)[c] = c < 0x80 ? AsciiClass(static_cast<unsigned char>(c)) : UnicodeCharClass(c);
    }
    return table;
  }();
  return cp < 0x10000 ? (*bmp)[cp] : UnicodeCharClass(cp);
}

}  // namespace text_internal

size_t FindInvalidUtf8(std::string_view text) {
  const auto* begin = reinterpret_cast<const unsigned char*>(text.data());
  const auto* end = begin + text.size();
  const unsigned char* p = begin;
  while (p < end) {
    p += text_internal::AsciiPrefixLength(p, end);
    if (p >= end) break;
    char32_t cp;
    int n = text_internal::DecodeUtf8(p, end, &cp);
    if (n <= 0) return static_cast<size_t>(p - begin);
    p += n;
  }
  return text.size();
}

std::string ReplaceInvalidUtf8(std::string_view text, size_t* replaced) {
  std::string out;
  out.reserve(text.size());
  size_t count = 0;
  const auto* begin = reinterpret_cast<const unsigned char*>(text.data());
  const auto* end = begin + text.size();
  const unsigned char* p = begin;
  while (p < end) {
    char32_t cp;
    int n = text_internal::DecodeUtf8(p, end, &cp);
    if (n > 0) {
      out.append(reinterpret_cast<const char*>(p), static_cast<size_t>(n));
      p += n;
      continue;
    }
    out.append("\xEF\xBF\xBD");
    ++count;
    p += (n == 0) ? (end - p) : -n;
  }
  if (replaced != nullptr) *replaced = count;
  return out;
}

Result<std::string> NormalizeText(std::string_view text) {
  text_internal::StreamNormalizer normalizer(/*normalize=*/true, InvalidUtf8::kReject);
  std::string out;
  NEARDUP_RETURN_IF_ERROR(normalizer.Update(text, &out));
  NEARDUP_RETURN_IF_ERROR(normalizer.Finish(&out));
  return out;
}

std::vector<Token> Tokenize(std::string_view text) {
  std::vector<Token> tokens;
  text_internal::TokenizeSome(text, /*final=*/true, [&](const Token& t) { tokens.push_back(t); });
  return tokens;
}

}  // namespace neardup
