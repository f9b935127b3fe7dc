// Fuzz target: JSONL parsing (the document fields of every JSONL input). A parse that succeeds
// gives an id and a text that are valid UTF-8 (with replacement on, whatever the line's bytes, and
// the same as parsing the line with its invalid sequences replaced; with it off, only a valid line
// parses); a parse that fails says why. A violation aborts, which libFuzzer and the replay both
// report.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "neardup/input.h"
#include "neardup/text.h"

namespace {

// With replacement, a line parses as its copy with every invalid sequence replaced by U+FFFD
// parses without it: the same success and the same fields.
void CheckReplacement(const neardup::Status& status, const neardup::JsonlParser::Fields& fields,
                      std::string_view line) {
  static neardup::JsonlParser strict("meta.id", "body.text", "");
  neardup::JsonlParser::Fields replaced_fields;
  const neardup::Status replaced =
      strict.Parse(neardup::ReplaceInvalidUtf8(line), &replaced_fields);
  if (status.ok() != replaced.ok()) std::abort();
  if (status.ok() && (fields.text != replaced_fields.text || fields.id != replaced_fields.id ||
                      fields.has_id != replaced_fields.has_id)) {
    std::abort();
  }
}

void Check(neardup::JsonlParser& parser, std::string_view line, bool replace) {
  neardup::JsonlParser::Fields fields;
  const neardup::Status status = parser.Parse(line, &fields);
  if (replace) CheckReplacement(status, fields, line);
  if (!status.ok()) {
    if (status.message().empty()) std::abort();
    return;
  }
  if (!replace && neardup::FindInvalidUtf8(line) != line.size()) std::abort();
  if (neardup::FindInvalidUtf8(fields.text) != fields.text.size()) std::abort();
  if (neardup::FindInvalidUtf8(fields.id) != fields.id.size()) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static neardup::JsonlParser plain("id", "text", "score");
  static neardup::JsonlParser nested("meta.id", "body.text", "");
  std::string_view line(reinterpret_cast<const char*>(data), size);
  Check(plain, line, false);
  const bool replace = size % 2 == 0;
  nested.set_replace_invalid_utf8(replace);
  Check(nested, line, replace);
  return 0;
}
