// Internal tokeniser: classifies code points and cuts normalised text into tokens, in pieces.
#ifndef NEARDUP_TEXT_TOKENIZER_H_
#define NEARDUP_TEXT_TOKENIZER_H_

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "neardup/text.h"
#include "text/utf8.h"

namespace neardup::text_internal {

enum class CharClass : uint8_t { kSeparator, kLetter, kDigit, kCjk };

// Class of a non-ASCII code point (ICU properties, cached for the BMP).
CharClass ClassifyNonAscii(char32_t cp);

inline constexpr CharClass AsciiClass(unsigned char c) {
  return (c >= '0' && c <= '9')                               ? CharClass::kDigit
         : ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) ? CharClass::kLetter
                                                              : CharClass::kSeparator;
}

inline constexpr auto kAsciiClasses = [] {
  std::array<CharClass, 128> table{};
  for (int c = 0; c < 128; ++c) table[c] = AsciiClass(static_cast<unsigned char>(c));
  return table;
}();

// Class and length of the code point at p (p < end, valid UTF-8).
inline CharClass ClassifyAt(const unsigned char* p, const unsigned char* end, int* length) {
  if (*p < 0x80) {
    *length = 1;
    return kAsciiClasses[*p];
  }
  char32_t cp;
  const int n = DecodeUtf8(p, end, &cp);
  if (n <= 0) {  // not expected in checked text; treat the byte as a separator
    *length = 1;
    return CharClass::kSeparator;
  }
  *length = n;
  return ClassifyNonAscii(cp);
}

// Bit i of each mask describes byte i of a block of up to 64 bytes.
struct AsciiMasks {
  uint64_t word = 0;       // ASCII letter or digit
  uint64_t letter = 0;     // ASCII letter
  uint64_t non_ascii = 0;  // byte >= 0x80
};

// Classifies a block of n <= 64 bytes (SSE2 on x86-64, ClassifyBlockPortable elsewhere).
AsciiMasks ClassifyBlock(const unsigned char* p, size_t n);
// The same without SIMD: eight bytes at a time in a 64-bit word (WebAssembly, other CPUs).
AsciiMasks ClassifyBlockPortable(const unsigned char* p, size_t n);

// Finds token boundaries in ASCII text 64 bytes at a time, so the tokeniser does not branch per
// byte.
class BlockScanner {
 public:
  BlockScanner(const unsigned char* base, size_t size) : base_(base), size_(size) {}

  // First position >= pos holding an ASCII word byte or a non-ASCII byte; size() if none.
  size_t NextCandidate(size_t pos) {
    while (pos < size_) {
      const AsciiMasks& m = At(pos / 64);
      const uint64_t bits = (m.word | m.non_ascii) >> (pos % 64);
      if (bits != 0) return pos + static_cast<size_t>(std::countr_zero(bits));
      pos = (pos / 64 + 1) * 64;
    }
    return size_;
  }

  // First position >= pos that is not an ASCII word byte; size() if none.
  size_t WordEnd(size_t pos) {
    while (pos < size_) {
      const AsciiMasks& m = At(pos / 64);
      const uint64_t bits = (~m.word) >> (pos % 64);
      if (bits != 0) return std::min(size_, pos + static_cast<size_t>(std::countr_zero(bits)));
      pos = (pos / 64 + 1) * 64;
    }
    return size_;
  }

  bool NonAscii(size_t pos) { return (At(pos / 64).non_ascii >> (pos % 64)) & 1; }

  // Whether [from, to) holds an ASCII letter.
  bool HasLetter(size_t from, size_t to) {
    for (size_t pos = from; pos < to; pos = (pos / 64 + 1) * 64) {
      const size_t stop = std::min(to, (pos / 64 + 1) * 64);
      const uint64_t span = stop - pos == 64 ? ~uint64_t{0} : (uint64_t{1} << (stop - pos)) - 1;
      if ((At(pos / 64).letter >> (pos % 64)) & span) return true;
    }
    return false;
  }

 private:
  const AsciiMasks& At(size_t block) {
    if (block != block_) {
      masks_ = ClassifyBlock(base_ + block * 64, std::min<size_t>(64, size_ - block * 64));
      block_ = block;
    }
    return masks_;
  }

  const unsigned char* base_;
  size_t size_;
  size_t block_ = SIZE_MAX;
  AsciiMasks masks_;
};

// Cuts text (valid UTF-8) into tokens and calls emit(Token) for each, in order. When `final` is
// false the token touching the end of `text` may continue in the next piece: it is not emitted, and
// the return value is its start (the caller passes text from there again). Returns text.size()
// otherwise.
template <typename Emit>
size_t TokenizeSome(std::string_view text, bool final, Emit&& emit) {
  const auto* base = reinterpret_cast<const unsigned char*>(text.data());
  const auto* end = base + text.size();
  BlockScanner scanner(base, text.size());
  size_t pos = 0;
  while (true) {
    pos = scanner.NextCandidate(pos);
    if (pos >= text.size()) break;
    if (!scanner.NonAscii(pos)) {
      // Fast path: an ASCII word followed by an ASCII byte (or the end) is complete.
      const size_t word_end = scanner.WordEnd(pos);
      if ((word_end == text.size() || !scanner.NonAscii(word_end)) &&
          word_end - pos <= kMaxTokenBytes) {
        if (word_end == text.size() && !final) return pos;
        emit(Token{text.substr(pos, word_end - pos),
                   scanner.HasLetter(pos, word_end) ? TokenKind::kWord : TokenKind::kNumber});
        pos = word_end;
        continue;
      }
    }
    // General path: one token (or one non-ASCII separator) decoded code point by code point.
    const unsigned char* p = base + pos;
    int length;
    const CharClass first = ClassifyAt(p, end, &length);
    if (first == CharClass::kSeparator) {
      pos += static_cast<size_t>(length);
      continue;
    }
    const unsigned char* start = p;
    const unsigned char* limit =
        end - start > static_cast<std::ptrdiff_t>(kMaxTokenBytes) ? start + kMaxTokenBytes : end;
    const bool cjk = first == CharClass::kCjk;
    bool has_letter = first == CharClass::kLetter;
    p += length;
    while (p < limit) {
      const CharClass c = ClassifyAt(p, end, &length);
      if (cjk ? c != CharClass::kCjk : (c != CharClass::kLetter && c != CharClass::kDigit)) break;
      if (p + length > limit) break;
      has_letter |= c == CharClass::kLetter;
      p += length;
    }
    // A token touching the end may go on in the next piece (one cut by the length limit is
    // complete, and the next piece cuts it at the same place).
    if (p >= end && !final) return static_cast<size_t>(start - base);
    emit(Token{
        std::string_view(reinterpret_cast<const char*>(start), static_cast<size_t>(p - start)),
        cjk ? TokenKind::kCjk : (has_letter ? TokenKind::kWord : TokenKind::kNumber)});
    pos = static_cast<size_t>(p - base);
  }
  return text.size();
}

}  // namespace neardup::text_internal

#endif  // NEARDUP_TEXT_TOKENIZER_H_
