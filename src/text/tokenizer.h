// Internal tokeniser: classifies code points and cuts normalised text into tokens, in pieces.
#ifndef NEARDUP_TEXT_TOKENIZER_H_
#define NEARDUP_TEXT_TOKENIZER_H_

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
  return (c >= '0' && c <= '9')                              ? CharClass::kDigit
         : ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) ? CharClass::kLetter
                                                               : CharClass::kSeparator;
}

// Cuts text (valid UTF-8) into tokens and calls emit(Token) for each, in order. When `final` is false
// the token touching the end of `text` may continue in the next piece: it is not emitted, and the
// return value is its start (the caller passes text from there again). Returns text.size() otherwise.
template <typename Emit>
size_t TokenizeSome(std::string_view text, bool final, Emit&& emit) {
  const auto* base = reinterpret_cast<const unsigned char*>(text.data());
  const auto* end = base + text.size();
  const unsigned char* p = base;
  auto classify = [end](const unsigned char* at, int* length) {
    if (*at < 0x80) {
      *length = 1;
      return AsciiClass(*at);
    }
    char32_t cp;
    int n = DecodeUtf8(at, end, &cp);
    if (n <= 0) {  // not expected in checked text; treat the byte as a separator
      *length = 1;
      return CharClass::kSeparator;
    }
    *length = n;
    return ClassifyNonAscii(cp);
  };
  while (p < end) {
    int length;
    CharClass first = classify(p, &length);
    if (first == CharClass::kSeparator) {
      p += length;
      continue;
    }
    const unsigned char* start = p;
    const bool cjk = first == CharClass::kCjk;
    bool digits_only = first == CharClass::kDigit;
    p += length;
    bool cut_by_limit = false;
    while (p < end) {
      CharClass c = classify(p, &length);
      if (cjk ? c != CharClass::kCjk : (c != CharClass::kLetter && c != CharClass::kDigit)) break;
      if (static_cast<size_t>(p + length - start) > kMaxTokenBytes) {
        cut_by_limit = true;
        break;
      }
      digits_only = digits_only && c == CharClass::kDigit;
      p += length;
    }
    if (p >= end && !final && !cut_by_limit) return static_cast<size_t>(start - base);
    emit(Token{std::string_view(reinterpret_cast<const char*>(start), static_cast<size_t>(p - start)),
               cjk ? TokenKind::kCjk : (digits_only ? TokenKind::kNumber : TokenKind::kWord)});
  }
  return text.size();
}

}  // namespace neardup::text_internal

#endif  // NEARDUP_TEXT_TOKENIZER_H_
