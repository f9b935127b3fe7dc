// Fuzz target: JSONL parsing (the document fields of every JSONL input).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "neardup/input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static neardup::JsonlParser plain("id", "text", "score");
  static neardup::JsonlParser nested("meta.id", "body.text", "");
  std::string_view line(reinterpret_cast<const char*>(data), size);
  neardup::JsonlParser::Fields fields;
  (void)plain.Parse(line, &fields);
  nested.set_replace_invalid_utf8(size % 2 == 0);
  (void)nested.Parse(line, &fields);
  return 0;
}
