#include <simdjson.h>

#include <vector>

#include "neardup/input.h"
#include "neardup/text.h"

namespace neardup {

std::string InputExtension(std::string_view path) {
  const size_t slash = path.rfind('/');
  std::string name(slash == std::string_view::npos ? path : path.substr(slash + 1));
  for (char& c : name) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  for (std::string_view suffix : {".gz", ".zst"}) {
    if (name.size() > suffix.size() && name.ends_with(suffix))
      name.resize(name.size() - suffix.size());
  }
  const size_t dot = name.rfind('.');
  return dot == std::string::npos || dot == 0 ? std::string() : name.substr(dot + 1);
}

struct JsonlParser::State {
  simdjson::ondemand::parser literal_parser;  // finds the literal text of numeric ids
  std::string big_numbers;                    // the line with its big integers rewritten
  std::vector<std::string> id_path;
  std::vector<std::string> text_path;
  std::vector<std::string> number_path;
  std::string id_field, text_field, number_field;
  simdjson::dom::parser parser;
  std::string padded;
};

namespace {

std::vector<std::string> SplitPath(const std::string& field) {
  std::vector<std::string> parts;
  if (field.empty()) return parts;
  size_t start = 0;
  while (true) {
    size_t dot = field.find('.', start);
    parts.push_back(
        field.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return parts;
}

const char* TypeName(simdjson::dom::element_type type) {
  using T = simdjson::dom::element_type;
  switch (type) {
    case T::ARRAY:
      return "an array";
    case T::OBJECT:
      return "an object";
    case T::INT64:
    case T::UINT64:
    case T::DOUBLE:
      return "a number";
    case T::STRING:
      return "a string";
    case T::BOOL:
      return "a boolean";
    case T::NULL_VALUE:
      return "null";
  }
  return "a value";
}

// Walks a dotted path. Returns false when a key is missing (or a step is not an object).
bool Lookup(simdjson::dom::element root, const std::vector<std::string>& path,
            simdjson::dom::element* out) {
  simdjson::dom::element current = root;
  for (const auto& key : path) {
    simdjson::dom::object object;
    if (current.get(object) != simdjson::SUCCESS) return false;
    if (object.at_key(key).get(current) != simdjson::SUCCESS) return false;
  }
  *out = current;
  return true;
}

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// The line with every integer too large for 64 bits (which simdjson's DOM refuses) rewritten as the
// same number in exponent form (123456789012345678901234567890
// -> 1.23456789012345678901234567890e29), so that the line can be checked and its other fields
// read; returns false when there is none.
bool RewriteBigIntegers(std::string_view line, std::string* out) {
  out->clear();
  bool rewritten = false, in_string = false;
  for (size_t i = 0; i < line.size();) {
    const char c = line[i];
    if (in_string) {
      if (c == '\\' && i + 1 < line.size()) {
        out->append(line.substr(i, 2));
        i += 2;
        continue;
      }
      if (c == '"') in_string = false;
      out->push_back(c);
      ++i;
      continue;
    }
    if (c == '"') in_string = true;
    const bool number_start =
        IsDigit(c) || (c == '-' && i + 1 < line.size() && IsDigit(line[i + 1]));
    if (!number_start) {
      out->push_back(c);
      ++i;
      continue;
    }
    size_t end = i + (c == '-' ? 1 : 0);
    const size_t digits_begin = end;
    while (end < line.size() && IsDigit(line[end])) ++end;
    const size_t digits = end - digits_begin;
    const bool integer =
        end == line.size() || (line[end] != '.' && line[end] != 'e' && line[end] != 'E');
    if (integer && digits > 19 && line[digits_begin] != '0') {
      if (c == '-') out->push_back('-');
      out->push_back(line[digits_begin]);
      out->push_back('.');
      out->append(line.substr(digits_begin + 1, digits - 1));
      out->push_back('e');
      out->append(std::to_string(digits - 1));
      rewritten = true;
    } else {
      out->append(line.substr(i, end - i));
    }
    i = end;
  }
  return rewritten;
}

// The literal text of the number at `path` in a line already known to be valid JSON.
Result<std::string> NumberLiteral(simdjson::ondemand::parser& parser, const std::string& padded,
                                  size_t length, const std::vector<std::string>& path) {
  simdjson::ondemand::document document;
  if (parser.iterate(padded.data(), length, padded.size()).get(document) != simdjson::SUCCESS) {
    return Status::InvalidArgument("malformed JSON");
  }
  simdjson::ondemand::value value;
  if (document.find_field_unordered(path[0]).get(value) != simdjson::SUCCESS) {
    return Status::InvalidArgument("malformed JSON");
  }
  for (size_t i = 1; i < path.size(); ++i) {
    simdjson::ondemand::value next;
    if (value.find_field_unordered(path[i]).get(next) != simdjson::SUCCESS) {
      return Status::InvalidArgument("malformed JSON");
    }
    value = next;
  }
  std::string_view literal = value.raw_json_token();
  while (!literal.empty() && (literal.back() == ' ' || literal.back() == '\t' ||
                              literal.back() == '\r' || literal.back() == '\n')) {
    literal.remove_suffix(1);
  }
  return std::string(literal);
}

}  // namespace

JsonlParser::JsonlParser(std::string id_field, std::string text_field, std::string number_field)
    : state_(std::make_unique<State>()) {
  state_->id_path = SplitPath(id_field);
  state_->text_path = SplitPath(text_field);
  state_->number_path = SplitPath(number_field);
  state_->number_field = std::move(number_field);
  state_->id_field = std::move(id_field);
  state_->text_field = std::move(text_field);
}

JsonlParser::~JsonlParser() = default;

Status JsonlParser::Parse(std::string_view line, Fields* fields) {
  State& s = *state_;
  s.padded.assign(line);
  s.padded.resize(line.size() + simdjson::SIMDJSON_PADDING);
  size_t length = line.size();  // of the JSON text in s.padded
  simdjson::dom::element root;
  auto error = s.parser.parse(s.padded.data(), length, /*realloc_if_needed=*/false).get(root);
  if (error == simdjson::UTF8_ERROR && replace_invalid_utf8_) {
    s.padded = ReplaceInvalidUtf8(line);
    length = s.padded.size();
    s.padded.resize(length + simdjson::SIMDJSON_PADDING);
    error = s.parser.parse(s.padded.data(), length, /*realloc_if_needed=*/false).get(root);
  }
  bool big_integers = false;
  if (error == simdjson::NUMBER_ERROR &&
      RewriteBigIntegers(std::string_view(s.padded).substr(0, length), &s.big_numbers)) {
    // The literal text stays in s.padded for NumberLiteral; the DOM reads the rewritten copy.
    const size_t rewritten_length = s.big_numbers.size();
    s.big_numbers.resize(rewritten_length + simdjson::SIMDJSON_PADDING);
    error = s.parser.parse(s.big_numbers.data(), rewritten_length, /*realloc_if_needed=*/false)
                .get(root);
    big_integers = true;
  }
  if (error != simdjson::SUCCESS) {
    return Status::InvalidArgument(std::string("malformed JSON: ") +
                                   simdjson::error_message(error));
  }
  if (!root.is_object()) {
    return Status::InvalidArgument(std::string("expected a JSON object, got ") +
                                   TypeName(root.type()));
  }
  simdjson::dom::element text;
  std::string_view text_value;
  if (s.text_field.empty()) {
    // No text wanted (lines of ids only).
  } else if (!Lookup(root, s.text_path, &text)) {
    return Status::InvalidArgument("no text field '" + s.text_field + "'");
  } else if (text.get(text_value) != simdjson::SUCCESS) {
    return Status::InvalidArgument("text field '" + s.text_field + "' is " + TypeName(text.type()) +
                                   ", expected a string");
  }
  fields->text.assign(text_value);
  fields->has_id = false;
  fields->id.clear();
  simdjson::dom::element id;
  if (!s.id_path.empty() && Lookup(root, s.id_path, &id)) {
    std::string_view id_string;
    int64_t integer = 0;
    if (id.get(id_string) == simdjson::SUCCESS) {
      fields->id.assign(id_string);
    } else if (id.is_number() && !big_integers && !id.is_double() &&
               !(id.get(integer) == simdjson::SUCCESS && integer == 0)) {
      fields->id =
          simdjson::to_string(id);  // the literal text: JSON integers have one form (but -0)
    } else if (id.is_number()) {
      // Numbers keep the text they were written with (1.50, 1e5, -0, integers beyond 64 bits).
      // (A key written with escapes, which the DOM matches and the literal search does not: the
      // number in JSON form.)
      auto literal = NumberLiteral(s.literal_parser, s.padded, length, s.id_path);
      fields->id = literal.ok() ? std::move(*literal) : simdjson::to_string(id);
    } else {
      return Status::InvalidArgument("id field '" + s.id_field + "' is " + TypeName(id.type()) +
                                     ", expected a string or number");
    }
    fields->has_id = true;
  }
  fields->has_number = false;
  simdjson::dom::element number;
  if (!s.number_path.empty() && Lookup(root, s.number_path, &number)) {
    if (number.get(fields->number) != simdjson::SUCCESS) {
      return Status::InvalidArgument("field '" + s.number_field + "' is " +
                                     TypeName(number.type()) + ", expected a number");
    }
    fields->has_number = true;
  }
  return Status::OK();
}

}  // namespace neardup
