// Fuzz target: the Unicode tables of builds without ICU (the WebAssembly build, src/text/
// unicode_tables.cc) against ICU itself, differentially. The input's bytes, made valid UTF-8 by
// replacement, are normalised by both (NFKC_Casefold, whole and cut at a boundary both report), and
// every code point's class and boundary bit is compared. A difference aborts, which libFuzzer and
// the replay both report.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "neardup/text.h"
#include "text/unicode.h"
#include "text/utf8.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace ti = neardup::text_internal;
  const std::string text =
      neardup::ReplaceInvalidUtf8(std::string_view(reinterpret_cast<const char*>(data), size));
  std::string icu, tables;
  ti::AppendNfkcCasefold(text, &icu);
  ti::unicode_tables::AppendNfkcCasefold(text, &tables);
  if (icu != tables) std::abort();
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  const auto* end = p + text.size();
  while (p < end) {
    char32_t cp = 0;
    const int n = ti::DecodeUtf8(p, end, &cp);
    if (n <= 0) std::abort();  // replaced text is valid
    if (ti::UnicodeCharClass(cp) != ti::unicode_tables::UnicodeCharClass(cp)) std::abort();
    if (ti::NfkcCasefoldBoundaryBefore(cp) != ti::unicode_tables::NfkcCasefoldBoundaryBefore(cp)) {
      std::abort();
    }
    p += n;
  }
  return 0;
}
