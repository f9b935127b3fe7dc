// Internal: Python's str.splitlines() and str.strip() on UTF-8, as jieba applies them to IDF and
// stop-word files.
#ifndef NEARDUP_WEIGHT_PYTHON_TEXT_H_
#define NEARDUP_WEIGHT_PYTHON_TEXT_H_

#include <string_view>

#include "segment/char_class.h"
#include "text/utf8.h"

namespace neardup::weight_internal {

// Length of the line boundary at text[pos] (\n \r \r\n \v \f \x1c \x1d \x1e \x85 \u2028 \u2029),
// 0 when there is none.
inline size_t LineBoundaryLength(std::string_view text, size_t pos) {
  const auto c = static_cast<unsigned char>(text[pos]);
  if (c < 0x80) {
    if (c == '\r') return pos + 1 < text.size() && text[pos + 1] == '\n' ? 2 : 1;
    return c == '\n' || c == '\v' || c == '\f' || (c >= 0x1C && c <= 0x1E) ? 1 : 0;
  }
  if (c == 0xC2)
    return pos + 1 < text.size() && static_cast<unsigned char>(text[pos + 1]) == 0x85 ? 2 : 0;
  if (c == 0xE2 && pos + 2 < text.size() && static_cast<unsigned char>(text[pos + 1]) == 0x80) {
    const auto d = static_cast<unsigned char>(text[pos + 2]);
    return d == 0xA8 || d == 0xA9 ? 3 : 0;
  }
  return 0;
}

// Calls on_line(line, number) for each line of str.splitlines(text) (text is valid UTF-8).
template <typename OnLine>
void ForEachPythonLine(std::string_view text, OnLine&& on_line) {
  size_t start = 0, number = 0;
  for (size_t pos = 0; pos < text.size();) {
    const size_t boundary = LineBoundaryLength(text, pos);
    if (boundary == 0) {
      ++pos;
      continue;
    }
    on_line(text.substr(start, pos - start), ++number);
    pos += boundary;
    start = pos;
  }
  if (start < text.size()) on_line(text.substr(start), ++number);
}

// str.strip(): removes leading and trailing white space (Python's str.isspace()).
inline std::string_view StripPython(std::string_view s) {
  const auto* base = reinterpret_cast<const unsigned char*>(s.data());
  size_t begin = 0;
  while (begin < s.size()) {
    char32_t cp;
    const int n = text_internal::DecodeUtf8(base + begin, base + s.size(), &cp);
    if (n <= 0 || !segment_internal::IsPythonSpace(cp)) break;
    begin += static_cast<size_t>(n);
  }
  size_t end = s.size();
  while (end > begin) {
    size_t start = end - 1;
    while (start > begin && (base[start] & 0xC0) == 0x80) --start;
    char32_t cp;
    const int n = text_internal::DecodeUtf8(base + start, base + end, &cp);
    if (n <= 0 || static_cast<size_t>(n) != end - start || !segment_internal::IsPythonSpace(cp))
      break;
    end = start;
  }
  return s.substr(begin, end - begin);
}

}  // namespace neardup::weight_internal

#endif  // NEARDUP_WEIGHT_PYTHON_TEXT_H_
