#include "segment/python_literal.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "text/utf8.h"

namespace neardup::segment_internal {
namespace {

class LiteralParser {
 public:
  LiteralParser(std::string_view source, const std::string& name, int first_line)
      : source_(source), name_(name), line_(first_line) {}

  Result<PythonValue> ParseAll() {
    auto value = ParseValue(0);
    if (!value.ok()) return value;
    SkipSpace();
    if (pos_ != source_.size()) return Error("unexpected text after the value");
    return value;
  }

 private:
  Status Error(std::string_view what) const {
    return Status::InvalidArgument(name_ + ":" + std::to_string(line_) + ": " + std::string(what));
  }

  void SkipSpace() {
    while (pos_ < source_.size()) {
      const char c = source_[pos_];
      if (c == '\n') {
        ++line_;
      } else if (c == '#') {
        while (pos_ < source_.size() && source_[pos_] != '\n') ++pos_;
        continue;
      } else if (c == '\\' && pos_ + 1 < source_.size() && source_[pos_ + 1] == '\n') {
        ++pos_;  // explicit line joining
        continue;
      } else if (c != ' ' && c != '\t' && c != '\r' && c != '\f') {
        return;
      }
      ++pos_;
    }
  }

  Result<PythonValue> ParseValue(int depth) {
    if (depth > 32) return Error("nesting too deep");
    SkipSpace();
    if (pos_ >= source_.size()) return Error("unexpected end of file");
    const char c = source_[pos_];
    if (c == '{') return ParseDict(depth);
    if (c == '\'' || c == '"' || c == 'u' || c == 'U') {
      PythonValue value;
      value.kind = PythonValue::kString;
      value.line = line_;
      NEARDUP_RETURN_IF_ERROR(ParseString(&value.string));
      return value;
    }
    return ParseNumber();
  }

  Result<PythonValue> ParseDict(int depth) {
    PythonValue dict;
    dict.kind = PythonValue::kDict;
    dict.line = line_;
    ++pos_;
    while (true) {
      SkipSpace();
      if (pos_ >= source_.size()) return Error("unterminated dict");
      if (source_[pos_] == '}') {
        ++pos_;
        return dict;
      }
      std::u32string key;
      NEARDUP_RETURN_IF_ERROR(ParseString(&key));
      SkipSpace();
      if (pos_ >= source_.size() || source_[pos_] != ':')
        return Error("expected ':' after a dict key");
      ++pos_;
      auto value = ParseValue(depth + 1);
      if (!value.ok()) return value;
      dict.items.push_back({std::move(key), std::move(*value)});
      SkipSpace();
      if (pos_ < source_.size() && source_[pos_] == ',') {
        ++pos_;
      } else if (pos_ >= source_.size() || source_[pos_] != '}') {
        return Error("expected ',' or '}' in a dict");
      }
    }
  }

  Status ParseHex(int digits, char32_t* cp) {
    if (pos_ + static_cast<size_t>(digits) > source_.size()) return Error("truncated escape");
    char32_t value = 0;
    for (int i = 0; i < digits; ++i) {
      const char h = source_[pos_++];
      int d = h >= '0' && h <= '9'   ? h - '0'
              : h >= 'a' && h <= 'f' ? h - 'a' + 10
              : h >= 'A' && h <= 'F' ? h - 'A' + 10
                                     : -1;
      if (d < 0) return Error("invalid hexadecimal escape");
      value = value * 16 + static_cast<char32_t>(d);
    }
    if (value > 0x10FFFF) return Error("escape beyond U+10FFFF");
    *cp = value;
    return Status::OK();
  }

  Status ParseString(std::u32string* out) {
    if (pos_ < source_.size() && (source_[pos_] == 'u' || source_[pos_] == 'U')) ++pos_;
    if (pos_ >= source_.size() || (source_[pos_] != '\'' && source_[pos_] != '"')) {
      return Error("expected a string");
    }
    const char quote = source_[pos_++];
    const auto* bytes = reinterpret_cast<const unsigned char*>(source_.data());
    while (true) {
      if (pos_ >= source_.size() || source_[pos_] == '\n') return Error("unterminated string");
      const char c = source_[pos_];
      if (c == quote) {
        ++pos_;
        return Status::OK();
      }
      char32_t cp = 0;
      if (c == '\\') {
        if (++pos_ >= source_.size()) return Error("unterminated string");
        const char e = source_[pos_++];
        switch (e) {
          case 'u':
            NEARDUP_RETURN_IF_ERROR(ParseHex(4, &cp));
            break;
          case 'U':
            NEARDUP_RETURN_IF_ERROR(ParseHex(8, &cp));
            break;
          case 'x':
            NEARDUP_RETURN_IF_ERROR(ParseHex(2, &cp));
            break;
          case 'n':
            cp = '\n';
            break;
          case 't':
            cp = '\t';
            break;
          case 'r':
            cp = '\r';
            break;
          case '\\':
          case '\'':
          case '"':
            cp = static_cast<char32_t>(e);
            break;
          default:
            return Error("unsupported escape in a string");
        }
      } else {
        const int n = text_internal::DecodeUtf8(bytes + pos_, bytes + source_.size(), &cp);
        if (n <= 0) return Error("invalid UTF-8 in a string");
        pos_ += static_cast<size_t>(n);
      }
      out->push_back(cp);
    }
  }

  Result<PythonValue> ParseNumber() {
    PythonValue value;
    value.line = line_;
    size_t end = pos_;
    while (end < source_.size() && std::strchr("0123456789.eE+-", source_[end]) != nullptr &&
           source_[end] != '\0') {
      ++end;
    }
    const std::string token(source_.substr(pos_, end - pos_));
    if (token.empty()) return Error("expected a value");
    char* parsed_end = nullptr;
    errno = 0;
    value.number = std::strtod(token.c_str(), &parsed_end);
    if (parsed_end != token.c_str() + token.size() || errno == ERANGE) {
      return Error("invalid number '" + token + "'");
    }
    pos_ = end;
    return value;
  }

  std::string_view source_;
  const std::string& name_;
  size_t pos_ = 0;
  int line_;
};

}  // namespace

Result<PythonValue> ParsePythonLiteral(std::string_view source, const std::string& name,
                                       int first_line) {
  return LiteralParser(source, name, first_line).ParseAll();
}

Result<std::string> ReadWholeFile(const std::string& path) {
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) {
    const int error = errno;
    std::string message = path + ": " + std::strerror(error);
    return error == ENOENT ? Status::NotFound(message) : Status::IOError(message);
  }
  // fopen opens a folder for reading on Linux, and its first read fails with EISDIR.
  struct stat st;
  if (::fstat(::fileno(file), &st) == 0 && S_ISDIR(st.st_mode)) {
    std::fclose(file);
    return Status::InvalidArgument(path + ": is a folder, not a file");
  }
  std::string content;
  char buffer[1 << 16];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof buffer, file)) > 0) content.append(buffer, n);
  const bool failed = std::ferror(file) != 0;
  std::fclose(file);
  if (failed) return Status::IOError(path + ": read error");
  return content;
}

Result<PythonValue> ParsePythonAssignment(const std::string& path, std::string_view variable) {
  auto content = ReadWholeFile(path);
  if (!content.ok()) return content.status();
  std::string_view text = *content;
  size_t pos = 0;
  int line = 1;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view row = text.substr(pos, end - pos);
    const size_t first = row.find_first_not_of(" \t\r");
    if (first != std::string_view::npos && row.substr(first, variable.size()) == variable) {
      std::string_view rest = row.substr(first + variable.size());
      const size_t equals = rest.find_first_not_of(" \t");
      if (equals != std::string_view::npos && rest[equals] == '=') {
        const size_t value_start = pos + first + variable.size() + equals + 1;
        return ParsePythonLiteral(text.substr(value_start), path, line);
      }
    }
    const bool skippable = first == std::string_view::npos || row[first] == '#' ||
                           row.substr(first, 5) == "from " || row.substr(first, 7) == "import ";
    if (!skippable) {
      return Status::InvalidArgument(path + ":" + std::to_string(line) + ": expected '" +
                                     std::string(variable) + " = ...'");
    }
    pos = end + 1;
    ++line;
  }
  return Status::InvalidArgument(path + ": no assignment to " + std::string(variable));
}

}  // namespace neardup::segment_internal
