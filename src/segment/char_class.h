// Internal: the character classes of jieba's regular expressions, and the dense character codes the
// dictionary trie is keyed by.
//
// jieba cuts text into blocks with re_han_default = [\u4E00-\u9FD5a-zA-Z0-9+#&._%\-]+: only these
// characters ("block characters") ever reach the dictionary. Each gets a code in 1..kCodeCount-1:
// the 69 ASCII ones first, then U+4E00..U+9FD5 in order. Code 0 means "not a block character".
#ifndef NEARDUP_SEGMENT_CHAR_CLASS_H_
#define NEARDUP_SEGMENT_CHAR_CLASS_H_

#include <array>
#include <cstdint>

namespace neardup::segment_internal {

using CharCode = uint16_t;

inline constexpr char32_t kHanFirst = 0x4E00;
inline constexpr char32_t kHanLast = 0x9FD5;
inline constexpr int kAsciiCodeCount = 69;  // a-z A-Z 0-9 + # & . _ % -
inline constexpr CharCode kFirstHanCode = kAsciiCodeCount + 1;
inline constexpr int kHanCount = kHanLast - kHanFirst + 1;
inline constexpr int kCodeCount = kFirstHanCode + kHanCount;

inline constexpr std::array<CharCode, 128> MakeAsciiCodes() {
  std::array<CharCode, 128> codes{};
  CharCode next = 1;
  for (int c = 'a'; c <= 'z'; ++c) codes[c] = next++;
  for (int c = 'A'; c <= 'Z'; ++c) codes[c] = next++;
  for (int c = '0'; c <= '9'; ++c) codes[c] = next++;
  for (char c : {'+', '#', '&', '.', '_', '%', '-'}) codes[static_cast<unsigned char>(c)] = next++;
  return next == kAsciiCodeCount + 1 ? codes : std::array<CharCode, 128>{};
}
inline constexpr std::array<CharCode, 128> kAsciiCodes = MakeAsciiCodes();
static_assert(kAsciiCodes['-'] == kAsciiCodeCount, "every ASCII block character has a code");

// Code of a block character, 0 for any other code point.
inline constexpr CharCode CodeOf(char32_t cp) {
  if (cp < 128) return kAsciiCodes[cp];
  if (cp >= kHanFirst && cp <= kHanLast)
    return static_cast<CharCode>(kFirstHanCode + (cp - kHanFirst));
  return 0;
}

inline constexpr bool IsHanCode(CharCode code) { return code >= kFirstHanCode; }

// re_eng = [a-zA-Z0-9]: the first 62 codes.
inline constexpr bool IsAlnumCode(CharCode code) { return code >= 1 && code <= 62; }
inline constexpr bool IsDigitCode(CharCode code) { return code >= 53 && code <= 62; }
inline constexpr CharCode kDotCode = kAsciiCodes['.'];
inline constexpr CharCode kPercentCode = kAsciiCodes['%'];

// Python's \s in a str pattern (str.isspace()): the code points of re_skip_default.
inline constexpr bool IsPythonSpace(char32_t cp) {
  if (cp <= 0x20) return (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x20);
  if (cp < 0x85) return false;
  return cp == 0x85 || cp == 0xA0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) ||
         cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

}  // namespace neardup::segment_internal

#endif  // NEARDUP_SEGMENT_CHAR_CLASS_H_
