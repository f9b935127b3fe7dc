#include <simdjson.h>

#include <vector>

#include "neardup/input.h"
#include "neardup/text.h"

namespace neardup {

struct JsonlParser::State {
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
    parts.push_back(field.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return parts;
}

const char* TypeName(simdjson::dom::element_type type) {
  using T = simdjson::dom::element_type;
  switch (type) {
    case T::ARRAY: return "an array";
    case T::OBJECT: return "an object";
    case T::INT64:
    case T::UINT64:
    case T::DOUBLE: return "a number";
    case T::STRING: return "a string";
    case T::BOOL: return "a boolean";
    case T::NULL_VALUE: return "null";
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
  simdjson::dom::element root;
  auto error = s.parser.parse(s.padded.data(), line.size(), /*realloc_if_needed=*/false).get(root);
  if (error == simdjson::UTF8_ERROR && replace_invalid_utf8_) {
    s.padded = ReplaceInvalidUtf8(line);
    const size_t length = s.padded.size();
    s.padded.resize(length + simdjson::SIMDJSON_PADDING);
    error = s.parser.parse(s.padded.data(), length, /*realloc_if_needed=*/false).get(root);
  }
  if (error != simdjson::SUCCESS) {
    return Status::InvalidArgument(std::string("malformed JSON: ") + simdjson::error_message(error));
  }
  if (!root.is_object()) {
    return Status::InvalidArgument(std::string("expected a JSON object, got ") + TypeName(root.type()));
  }
  simdjson::dom::element text;
  if (!Lookup(root, s.text_path, &text)) {
    return Status::InvalidArgument("no text field '" + s.text_field + "'");
  }
  std::string_view text_value;
  if (text.get(text_value) != simdjson::SUCCESS) {
    return Status::InvalidArgument("text field '" + s.text_field + "' is " + TypeName(text.type()) +
                                   ", expected a string");
  }
  fields->text.assign(text_value);
  fields->has_id = false;
  fields->id.clear();
  simdjson::dom::element id;
  if (!s.id_path.empty() && Lookup(root, s.id_path, &id)) {
    std::string_view id_string;
    if (id.get(id_string) == simdjson::SUCCESS) {
      fields->id.assign(id_string);
    } else if (id.is_number() || id.is_bool()) {
      fields->id = simdjson::to_string(id);
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
      return Status::InvalidArgument("field '" + s.number_field + "' is " + TypeName(number.type()) +
                                     ", expected a number");
    }
    fields->has_number = true;
  }
  return Status::OK();
}

}  // namespace neardup
