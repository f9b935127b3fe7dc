// Public text functions (neardup/text.h) and the code point classes of the tokeniser.
#include <array>
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
AsciiMasks ClassifyBlock(const unsigned char* p, size_t n) {
  AsciiMasks m;
#if defined(__SSE2__)
  if (n == 64) {
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
#endif
  for (size_t i = 0; i < n; ++i) {
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
