// Internal: reads the Python data files of jieba's HMM (finalseg/prob_*.py), which hold one
// assignment `P = <literal>` of nested dicts with string keys and float values.
#ifndef NEARDUP_SEGMENT_PYTHON_LITERAL_H_
#define NEARDUP_SEGMENT_PYTHON_LITERAL_H_

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "neardup/status.h"

namespace neardup::segment_internal {

struct PythonItem;

struct PythonValue {
  enum Kind { kNumber, kString, kDict } kind = kNumber;
  double number = 0;
  std::u32string string;
  // kDict, in file order. (A struct, not std::pair: clang with libstdc++ rejects a pair of this
  // still incomplete type as a member.)
  std::vector<PythonItem> items;
  int line = 0;  // where the value starts
};

struct PythonItem {
  std::u32string key;
  PythonValue value;
};

// Parses Python literal source: dicts, str keys and values ('...' or "..." with \\u, \\U, \\x
// escapes), int and float numbers. Errors: InvalidArgument "<name>:<line>: <what>".
Result<PythonValue> ParsePythonLiteral(std::string_view source, const std::string& name,
                                       int first_line);

// Reads the file at `path` and returns the value assigned to `variable` (lines of `from`/`import`
// statements and comments are skipped). Errors name the path and line; NotFound for a missing file.
Result<PythonValue> ParsePythonAssignment(const std::string& path, std::string_view variable);

// The whole content of a file, or NotFound / IOError naming the path.
Result<std::string> ReadWholeFile(const std::string& path);

}  // namespace neardup::segment_internal

#endif  // NEARDUP_SEGMENT_PYTHON_LITERAL_H_
