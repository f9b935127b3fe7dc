// The Unicode data of the text layer: NFKC_Casefold (doc/fingerprint.md, "2. Normalisation") and
// the code point classes of the tokeniser.
//
// Two implementations define the generic functions below, one per build:
//   unicode_icu.cc     ICU 72 (the native build).
//   unicode_tables.cc  compact tables generated from ICU 72 at build time by unicode_tables_gen.cc
//                      (builds without ICU, such as WebAssembly: compiled with NEARDUP_NO_ICU
//                      defined, in place of unicode_icu.cc).
// The table implementation is also reachable under its own names (namespace unicode_tables), which
// unicode_tables.cc defines in every build, so that one native program can check both against
// each other (unicode_tables_test.cc). Both give byte-identical results on every code point.
//
// Thread safety: every function may be called from any thread.
#ifndef NEARDUP_TEXT_UNICODE_H_
#define NEARDUP_TEXT_UNICODE_H_

#include <string>
#include <string_view>

#include "text/tokenizer.h"

namespace neardup::text_internal {

// Whether NFKC_Casefold has a boundary before cp (ICU's Normalizer2::hasBoundaryBefore): text
// before cp normalises independently of cp and what follows it.
bool NfkcCasefoldBoundaryBefore(char32_t cp);

// Appends NFKC_Casefold of `valid_utf8` (ICU's Normalizer2::normalizeUTF8) to *out. The input must
// be valid UTF-8.
void AppendNfkcCasefold(std::string_view valid_utf8, std::string* out);

// The tokeniser class of cp: kSeparator unless its general category is L, M or N; kCjk for Han,
// Hiragana and Katakana (also as a Script_Extension of Common and Inherited code points); kDigit
// for Nd; kLetter otherwise.
CharClass UnicodeCharClass(char32_t cp);

// The table implementation under its own names (same contracts as above).
namespace unicode_tables {

bool NfkcCasefoldBoundaryBefore(char32_t cp);
void AppendNfkcCasefold(std::string_view valid_utf8, std::string* out);
CharClass UnicodeCharClass(char32_t cp);

}  // namespace unicode_tables

}  // namespace neardup::text_internal

#endif  // NEARDUP_TEXT_UNICODE_H_
