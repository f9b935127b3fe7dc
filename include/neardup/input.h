// Reading documents: lines from files or standard input, plain text or JSONL.
//
// A document is one line. In plain text the whole line is the text and its line number the id. In
// JSONL each line is a JSON object; the text and id come from named fields (dotted paths reach
// nested objects: "meta.id"). Every error names the file and line.
//
// Thread safety: a LineReader or JsonlParser is used by one thread at a time.
#ifndef NEARDUP_INPUT_H_
#define NEARDUP_INPUT_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "neardup/status.h"

namespace neardup {

// Reads a file line by line with a fixed-size buffer: memory does not grow with the file, and a
// line can be read in pieces so that it need not fit in memory either. Lines end at '\n'; a '\r'
// before it is removed; the last line need not end with '\n'.
class LineReader {
 public:
  // Opens `path`, or standard input for "-". Files ending in .gz or .zst (in any case) are
  // decompressed. NotFound / IOError name the path.
  static Result<std::unique_ptr<LineReader>> Open(const std::string& path);

  virtual ~LineReader() = default;

  // Reads the next line whole into *line. Returns false at the end of the input. A line longer than
  // max_bytes gives ResourceExhausted naming the file and line; the reader then stands at the next
  // line.
  virtual Result<bool> ReadLine(std::string* line, uint64_t max_bytes) = 0;

  // Reads the next line in pieces, calling on_piece for each (pieces never contain '\n'). Returns
  // false at the end of the input. A non-OK status from on_piece stops reading: the rest of the
  // line is skipped and the status returned.
  virtual Result<bool> ReadLinePieces(const std::function<Status(std::string_view)>& on_piece) = 0;

  // Reads the next line as it is in the input, its terminator ("\n" or "\r\n"; none at the very
  // end) included. *line points into the reader's buffer (or into *scratch for lines longer than
  // the buffer) and stays valid until the next call. Returns false at the end of the input. A line
  // longer than max_bytes (terminator excluded) gives ResourceExhausted naming the file and line;
  // the reader then stands at the next line. The fastest way to copy or parse lines.
  virtual Result<bool> ReadRawLine(std::string_view* line, std::string* scratch,
                                   uint64_t max_bytes) = 0;

  // 1-based number of the line last read (0 before the first).
  virtual uint64_t line_number() const = 0;

  // Input bytes consumed so far (compressed size for compressed files).
  virtual uint64_t bytes_read() const = 0;

  // The path given to Open ("-" for standard input).
  virtual const std::string& path() const = 0;

  // For a plain file (not decompressed, not standard input): the byte offset in the file of the
  // next line a read returns (after the last line: the file's length), so that a line can be found
  // again at random. kNoOffset otherwise.
  static constexpr uint64_t kNoOffset = UINT64_MAX;
  virtual uint64_t offset() const { return kNoOffset; }
};

// The line without its terminator ("\n" or "\r\n").
inline std::string_view StripLineEnd(std::string_view line) {
  if (!line.empty() && line.back() == '\n') line.remove_suffix(1);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  return line;
}

// The line without a UTF-8 byte order mark (EF BB BF) at its start. Readers call it on the first
// line of each input, so that the mark some editors write becomes part of no text or id.
inline std::string_view StripByteOrderMark(std::string_view line) {
  if (line.starts_with("\xEF\xBB\xBF")) line.remove_prefix(3);
  return line;
}

// Whether a line, read as plain text, looks like a JSON object: its first and last characters
// other than ASCII white space are '{' and '}'. Readers of plain text warn on such a first line
// (JSON Lines read without --jsonl: every line's whole JSON would be its text).
inline bool LooksLikeJsonObject(std::string_view line) {
  constexpr std::string_view kSpace = " \t\r\n\f\v";
  const size_t first = line.find_first_not_of(kSpace);
  if (first == std::string_view::npos) return false;
  const size_t last = line.find_last_not_of(kSpace);
  return line[first] == '{' && line[last] == '}' && last > first;
}

// The extension of a file's name before any .gz or .zst, in lower case ("jsonl" for
// "dir/A.JSONL.GZ"); empty for a name without one, or that is only one (".jsonl").
std::string InputExtension(std::string_view path);

// Whether a file is JSON Lines by its name, as every command reads it without --jsonl: its
// InputExtension is jsonl or ndjson.
inline bool HasJsonLinesName(std::string_view path) {
  const std::string extension = InputExtension(path);
  return extension == "jsonl" || extension == "ndjson";
}

// "path:line: message", the form of every input error.
Status InputError(const Status& status, std::string_view path, uint64_t line);

// Extracts the id and text of JSONL lines.
class JsonlParser {
 public:
  // Fields are dotted paths. An empty id_field means "no id field: use the line number"; an empty
  // text_field, "no text" (lines of ids only: Fields::text stays empty). A non-empty
  // number_field is read too (a JSON number; absent: Fields::has_number is false).
  JsonlParser(std::string id_field, std::string text_field, std::string number_field = "");
  ~JsonlParser();

  struct Fields {
    std::string id;  // the id field's value: a string as is, a number as written (1.50,
                     // -0, 123456789012345678901234567890); empty when the line has no id field
    bool has_id = false;
    std::string text;   // the text field's value, unescaped
    double number = 0;  // the number field's value
    bool has_number = false;
  };

  // With true, a line that is not valid UTF-8 is parsed with its invalid sequences replaced by
  // U+FFFD (as the fingerprint does with InvalidUtf8::kReplace); with false (default) it is
  // malformed.
  void set_replace_invalid_utf8(bool replace) { replace_invalid_utf8_ = replace; }

  // Parses one line. InvalidArgument for malformed JSON, a line that is not an object, a missing
  // text field, or a text or id field of the wrong type (ids are strings or numbers: true, false,
  // null, arrays and objects are refused); the message names the field.
  Status Parse(std::string_view line, Fields* fields);

 private:
  struct State;
  std::unique_ptr<State> state_;
  bool replace_invalid_utf8_ = false;
};

}  // namespace neardup

#endif  // NEARDUP_INPUT_H_
