// Text: UTF-8 checking, Unicode normalisation and tokenisation of mixed scripts.
//
// The fingerprint pipeline runs text through these steps in this order (doc/fingerprint.md):
//   1. UTF-8 check: an invalid sequence is replaced by U+FFFD and counted, or rejected with its
//   byte
//      offset (InvalidUtf8 option).
//   2. Normalisation: Unicode NFKC with case folding (ICU's NFKC_Casefold): full-width forms become
//      half-width, compatibility characters their plain form, letters lower case, and
//      default-ignorable characters (zero-width space, soft hyphen...) disappear.
//   3. Tokenisation: words (runs of letters, marks and digits outside the CJK scripts), numbers
//   (words of
//      digits only) and CJK runs (runs of Han, Hiragana and Katakana); everything else (white
//      space, punctuation, symbols, U+FFFD) separates tokens and is dropped.
//
// All functions here are thread-safe.
#ifndef NEARDUP_TEXT_H_
#define NEARDUP_TEXT_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "neardup/status.h"

namespace neardup {

// What to do with bytes that are not valid UTF-8.
enum class InvalidUtf8 {
  kReplace,  // replace each maximal invalid subsequence by U+FFFD and count it (default)
  kReject,   // fail with InvalidArgument naming the byte offset of the first invalid byte
};

// Byte offset of the first invalid UTF-8 sequence in `text`, or text.size() when it is all valid.
// Overlong forms, surrogates and code points above U+10FFFF are invalid.
size_t FindInvalidUtf8(std::string_view text);

// A copy of `text` with every maximal invalid subsequence replaced by U+FFFD (EF BF BD).
// `*replaced`, when not null, receives the number of replacements.
std::string ReplaceInvalidUtf8(std::string_view text, size_t* replaced = nullptr);

// NFKC_Casefold of `text`, which must be valid UTF-8 (call ReplaceInvalidUtf8 first otherwise;
// invalid bytes give InvalidArgument). ASCII is handled without ICU.
Result<std::string> NormalizeText(std::string_view text);

enum class TokenKind : uint8_t {
  kWord,    // letters, marks and digits, at least one of them not a digit
  kNumber,  // digits only
  kCjk,     // a run of Han, Hiragana and Katakana characters
};

struct Token {
  std::string_view text;  // points into the tokenised text
  TokenKind kind;
};

// The tokens of `text` (valid UTF-8, normally already normalised), in order. A token longer than
// kMaxTokenBytes is cut at the last code point boundary at or before that length.
std::vector<Token> Tokenize(std::string_view text);

inline constexpr size_t kMaxTokenBytes = size_t{1} << 16;

}  // namespace neardup

#endif  // NEARDUP_TEXT_H_
