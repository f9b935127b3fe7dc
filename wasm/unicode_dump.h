// The lines the native build and the WebAssembly module must agree on for every code point: one
// per code point in [first, last] (surrogates skipped),
//   CODEPOINT<TAB>NFKC_CASEFOLD<TAB>KINDS<TAB>NORMALIZED_KINDS
// with the code point and its normalised UTF-8 in hex, and the kinds of the tokens (w: word,
// n: number, c: CJK) of the code point alone and of its normalised text. The native build takes
// ICU's answers, the module the generated tables' (doc/wasm.md); tests/wasm/unicode_test.mjs
// compares the two over all code points. Public API only.
#ifndef NEARDUP_WASM_UNICODE_DUMP_H_
#define NEARDUP_WASM_UNICODE_DUMP_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "neardup/text.h"

namespace neardup::wasm {

inline void AppendHex(unsigned value, int digits, std::string* out) {
  static constexpr char kDigits[] = "0123456789abcdef";
  for (int i = digits - 1; i >= 0; --i) out->push_back(kDigits[(value >> (4 * i)) & 15]);
}

inline void AppendTokenKinds(std::string_view text, std::string* out) {
  for (const Token& token : Tokenize(text)) {
    out->push_back(token.kind == TokenKind::kWord     ? 'w'
                   : token.kind == TokenKind::kNumber ? 'n'
                                                      : 'c');
  }
}

inline std::string Utf8Of(uint32_t cp) {
  std::string text;
  if (cp < 0x80) {
    text.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    text.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    text.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    text.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    text.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    text.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    text.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    text.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    text.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    text.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
  return text;
}

inline std::string UnicodeDump(uint32_t first, uint32_t last) {
  std::string out;
  for (uint32_t cp = first; cp <= last && cp <= 0x10FFFF; ++cp) {
    if (cp >= 0xD800 && cp <= 0xDFFF) continue;
    const std::string text = Utf8Of(cp);
    AppendHex(cp, 6, &out);
    out.push_back('\t');
    auto normalized = NormalizeText(text);
    if (!normalized.ok()) {
      out.append("error\n");
      continue;
    }
    for (unsigned char c : *normalized) AppendHex(c, 2, &out);
    out.push_back('\t');
    AppendTokenKinds(text, &out);
    out.push_back('\t');
    AppendTokenKinds(*normalized, &out);
    out.push_back('\n');
  }
  return out;
}

}  // namespace neardup::wasm

#endif  // NEARDUP_WASM_UNICODE_DUMP_H_
