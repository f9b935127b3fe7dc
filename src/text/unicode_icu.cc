// The Unicode data of the text layer from ICU (text/unicode.h): the native build.
#include <unicode/bytestream.h>
#include <unicode/normalizer2.h>
#include <unicode/stringpiece.h>
#include <unicode/uchar.h>
#include <unicode/uscript.h>

#include "text/unicode.h"

namespace neardup::text_internal {
namespace {

// Null when ICU cannot load its data: text is then left unnormalised.
const icu::Normalizer2* NfkcCasefold() {
  static const icu::Normalizer2* instance = [] {
    UErrorCode error = U_ZERO_ERROR;
    const icu::Normalizer2* n = icu::Normalizer2::getNFKCCasefoldInstance(error);
    return U_SUCCESS(error) ? n : nullptr;
  }();
  return instance;
}

bool InCjkScript(UChar32 c) {
  UErrorCode error = U_ZERO_ERROR;
  UScriptCode script = uscript_getScript(c, &error);
  if (U_FAILURE(error)) return false;
  if (script == USCRIPT_HAN || script == USCRIPT_HIRAGANA || script == USCRIPT_KATAKANA)
    return true;
  if (script == USCRIPT_COMMON || script == USCRIPT_INHERITED) {
    return uscript_hasScript(c, USCRIPT_HIRAGANA) || uscript_hasScript(c, USCRIPT_KATAKANA) ||
           uscript_hasScript(c, USCRIPT_HAN);
  }
  return false;
}

}  // namespace

bool NfkcCasefoldBoundaryBefore(char32_t cp) {
  const icu::Normalizer2* normalizer = NfkcCasefold();
  return normalizer != nullptr && normalizer->hasBoundaryBefore(static_cast<UChar32>(cp));
}

void AppendNfkcCasefold(std::string_view valid_utf8, std::string* out) {
  const icu::Normalizer2* normalizer = NfkcCasefold();
  UErrorCode error = U_ZERO_ERROR;
  if (normalizer != nullptr) {
    icu::StringByteSink<std::string> sink(out);
    normalizer->normalizeUTF8(
        0, icu::StringPiece(valid_utf8.data(), static_cast<int32_t>(valid_utf8.size())), sink,
        nullptr, error);
  }
  if (normalizer == nullptr || U_FAILURE(error)) out->append(valid_utf8);
}

CharClass UnicodeCharClass(char32_t cp) {
  const auto c = static_cast<UChar32>(cp);
  const int32_t mask = U_GET_GC_MASK(c);
  if ((mask & (U_GC_L_MASK | U_GC_M_MASK | U_GC_N_MASK)) == 0) return CharClass::kSeparator;
  if (InCjkScript(c)) return CharClass::kCjk;
  return (mask & U_GC_ND_MASK) ? CharClass::kDigit : CharClass::kLetter;
}

}  // namespace neardup::text_internal
