#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <mutex>

#include "neardup/keywords.h"
#include "neardup/text.h"
#include "segment/python_literal.h"
#include "weight/python_text.h"

namespace neardup {
namespace {

// Python's float() of an IDF field: a decimal number (strtod syntax without hexadecimal forms).
bool ParseIdf(std::string_view field, double* value) {
  if (field.empty() || field.size() > 64 || field.find_first_of("xX") != std::string_view::npos) {
    return false;
  }
  const std::string copy(field);
  char* end = nullptr;
  errno = 0;
  *value = std::strtod(copy.c_str(), &end);
  return end == copy.c_str() + copy.size() && errno != ERANGE;
}

template <typename Map>
double Median(const Map& idf) {
  if (idf.empty()) return 0;
  std::vector<double> values;
  values.reserve(idf.size());
  for (const auto& [word, value] : idf) values.push_back(value);
  const auto middle = values.begin() + static_cast<std::ptrdiff_t>(values.size() / 2);
  std::nth_element(values.begin(), middle, values.end());
  return *middle;
}

}  // namespace

Result<std::shared_ptr<const IdfTable>> IdfTable::Load(const std::string& path) {
  auto content = segment_internal::ReadWholeFile(path);
  if (!content.ok()) return content.status().WithContext("IDF table");
  const std::string_view text = *content;
  if (const size_t bad = FindInvalidUtf8(text); bad != text.size()) {
    size_t line = 1 + static_cast<size_t>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(bad), '\n'));
    return Status::InvalidArgument(path + ":" + std::to_string(line) + ": invalid UTF-8 at byte offset " +
                                   std::to_string(bad));
  }
  std::shared_ptr<IdfTable> table(new IdfTable());
  table->source_ = path;
  table->idf_.reserve(text.size() / 16);
  Status status;
  weight_internal::ForEachPythonLine(text, [&](std::string_view raw, size_t number) {
    if (!status.ok()) return;
    const std::string_view line = weight_internal::StripPython(raw);
    if (line.empty()) return;
    const size_t space = line.find(' ');
    double value;
    const bool valid = space != std::string_view::npos && line.find(' ', space + 1) == std::string_view::npos &&
                       ParseIdf(line.substr(space + 1), &value);
    if (!valid) {
      if (line.front() == '#') return;  // a comment, such as the header of `neardup idf build`
      status = Status::InvalidArgument(path + ":" + std::to_string(number) +
                                       ": expected 'word idf', got '" + std::string(line.substr(0, 80)) + "'");
      return;
    }
    table->idf_.insert_or_assign(std::string(line.substr(0, space)), value);
  });
  if (!status.ok()) return status;
  table->median_ = Median(table->idf_);
  return std::shared_ptr<const IdfTable>(std::move(table));
}

Result<std::shared_ptr<const IdfTable>> IdfTable::Default() {
  static std::once_flag once;
  static Result<std::shared_ptr<const IdfTable>>* loaded = nullptr;
  std::call_once(once, [] {
    auto dir = FindJiebaDirectory();
    loaded = new Result<std::shared_ptr<const IdfTable>>(
        dir.ok() ? Load(*dir + "/analyse/idf.txt") : Result<std::shared_ptr<const IdfTable>>(dir.status()));
  });
  return *loaded;
}

std::shared_ptr<const IdfTable> IdfTable::FromEntries(std::vector<std::pair<std::string, double>> entries,
                                                      std::string source) {
  std::shared_ptr<IdfTable> table(new IdfTable());
  table->source_ = std::move(source);
  for (auto& [word, value] : entries) table->idf_.insert_or_assign(std::move(word), value);
  table->median_ = Median(table->idf_);
  return table;
}

std::optional<double> IdfTable::Find(std::string_view word) const {
  auto it = idf_.find(word);
  if (it == idf_.end()) return std::nullopt;
  return it->second;
}

StopWords StopWords::JiebaDefault() {
  StopWords stop;
  for (const char* word : {"the", "of",   "is",   "and", "to",   "in",    "that", "we",
                           "for", "an",   "are",  "by",  "be",   "as",    "on",   "with",
                           "can", "if",   "from", "which", "you", "it",   "this", "then",
                           "at",  "have", "all",  "not", "one",  "has",   "or"}) {
    stop.words_.insert(word);
  }
  return stop;
}

Status StopWords::AddFile(const std::string& path) {
  auto content = segment_internal::ReadWholeFile(path);
  if (!content.ok()) return content.status().WithContext("stop words");
  const std::string_view text = *content;
  if (const size_t bad = FindInvalidUtf8(text); bad != text.size()) {
    size_t line = 1 + static_cast<size_t>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(bad), '\n'));
    return Status::InvalidArgument(path + ":" + std::to_string(line) + ": invalid UTF-8 at byte offset " +
                                   std::to_string(bad));
  }
  weight_internal::ForEachPythonLine(text, [&](std::string_view line, size_t) { words_.emplace(line); });
  return Status::OK();
}

}  // namespace neardup
