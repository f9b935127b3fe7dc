// Internal UTF-8 decoding shared by the text pipeline.
#ifndef NEARDUP_TEXT_UTF8_H_
#define NEARDUP_TEXT_UTF8_H_

#include <cstddef>
#include <cstdint>
#include <string>

namespace neardup::text_internal {

inline constexpr char32_t kReplacementCharacter = 0xFFFD;

// The one wording of an invalid byte sequence in the errors of every text entry point.
inline std::string InvalidUtf8Message(uint64_t offset) {
  return "invalid UTF-8 at byte offset " + std::to_string(offset);
}

// Decodes one code point at p (p < end).
//   > 0: the sequence is valid and that many bytes long; *cp receives the code point.
//   < 0: the bytes at p are invalid; -result is the length of the maximal invalid subpart
//   (Unicode's
//        "maximal subpart" rule: one U+FFFD per such run).
//   = 0: the bytes at p are a valid but incomplete prefix cut by `end` (more input may complete
//   it).
inline int DecodeUtf8(const unsigned char* p, const unsigned char* end, char32_t* cp) {
  const unsigned lead = p[0];
  if (lead < 0x80) {
    *cp = lead;
    return 1;
  }
  int length;
  unsigned low = 0x80, high = 0xBF;  // allowed range of the second byte
  char32_t value;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
    value = lead & 0x1F;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    value = lead & 0x0F;
    if (lead == 0xE0) low = 0xA0;
    if (lead == 0xED) high = 0x9F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    value = lead & 0x07;
    if (lead == 0xF0) low = 0x90;
    if (lead == 0xF4) high = 0x8F;
  } else {
    return -1;
  }
  for (int i = 1; i < length; ++i) {
    if (p + i >= end) return 0;
    const unsigned byte = p[i];
    if (byte < low || byte > high) return -i;
    low = 0x80;
    high = 0xBF;
    value = (value << 6) | (byte & 0x3F);
  }
  *cp = value;
  return length;
}

// Length of the UTF-8 sequence whose lead byte is `lead`, for text already checked (a
// continuation byte, never a lead there, counts as 2).
inline size_t Utf8SequenceLength(unsigned char lead) {
  return lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
}

// Appends the UTF-8 encoding of cp (a valid scalar value).
inline void AppendUtf8(char32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

// Length in bytes of the ASCII prefix of [p, end).
size_t AsciiPrefixLength(const unsigned char* p, const unsigned char* end);

}  // namespace neardup::text_internal

#endif  // NEARDUP_TEXT_UTF8_H_
