#include <algorithm>
#include <bit>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <string>

#include "neardup/keywords.h"
#include "neardup/text.h"
#include "segment/python_literal.h"
#include "text/utf8.h"
#include "weight/python_text.h"

namespace neardup {
namespace {

// Python's float() of an IDF field: a decimal number, correctly rounded like Python's.
bool ParseIdf(std::string_view field, double* value) {
  if (field.empty() || field.size() > 64 || field.find_first_of("xX") != std::string_view::npos) {
    return false;
  }
  if (field.front() == '+') field.remove_prefix(1);
#if defined(__EMSCRIPTEN__)
  // Emscripten's libc++ has no floating-point from_chars; musl's strtod rounds correctly too (the
  // C locale is the only one there).
  if (field.empty() || std::isspace(static_cast<unsigned char>(field.front()))) return false;
  const std::string copy(field);
  char* end = nullptr;
  *value = std::strtod(copy.c_str(), &end);
  return end == copy.c_str() + copy.size();
#else
  const auto [end, error] = std::from_chars(field.data(), field.data() + field.size(), *value);
  return error == std::errc() && end == field.data() + field.size();
#endif
}

// Python's float() also takes inf, infinity and nan (in any case, signed): a weight of those makes
// every keyword's weight infinite or NaN, which no output can write. They are refused, as values
// beyond the double range are.
bool IsFinite(double value) { return std::isfinite(value); }

double Median(const std::vector<std::pair<std::string_view, double>>& idf) {
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
  std::shared_ptr<IdfTable> table(new IdfTable());
  table->words_ = std::move(*content);
  const std::string_view text = table->words_;
  if (const size_t bad = FindInvalidUtf8(text); bad != text.size()) {
    size_t line = 1 + static_cast<size_t>(std::count(
                          text.begin(), text.begin() + static_cast<std::ptrdiff_t>(bad), '\n'));
    return Status::InvalidArgument(path + ":" + std::to_string(line) + ": " +
                                   text_internal::InvalidUtf8Message(bad));
  }
  table->source_ = path;
  table->index_.assign(std::bit_ceil(text.size() / 8 + 16), 0);
  Status status;
  // Lines are cut as Python's str.splitlines() cuts them (at \x1c, U+2028... too), but errors name
  // the line as editors and grep -n count it: by newlines.
  size_t counted_to = 0, newlines = 0;
  auto line_number = [&](std::string_view line) {
    const auto at = static_cast<size_t>(line.data() - text.data());
    newlines +=
        static_cast<size_t>(std::count(text.begin() + static_cast<std::ptrdiff_t>(counted_to),
                                       text.begin() + static_cast<std::ptrdiff_t>(at), '\n'));
    counted_to = at;
    return newlines + 1;
  };
  weight_internal::ForEachPythonLine(text, [&](std::string_view raw, size_t) {
    if (!status.ok()) return;
    const std::string_view line = weight_internal::StripPython(raw);
    if (line.empty()) return;
    const size_t space = line.find(' ');
    double value;
    const bool valid = space != std::string_view::npos &&
                       line.find(' ', space + 1) == std::string_view::npos &&
                       ParseIdf(line.substr(space + 1), &value);
    if (!valid) {
      if (line.front() == '#') return;  // a comment, such as the header of `neardup idf build`
      status = Status::InvalidArgument(path + ":" + std::to_string(line_number(raw)) +
                                       ": expected 'word idf', got '" +
                                       std::string(line.substr(0, 80)) + "'");
      return;
    }
    if (!IsFinite(value)) {
      status =
          Status::InvalidArgument(path + ":" + std::to_string(line_number(raw)) + ": the idf of '" +
                                  std::string(line.substr(0, space)) + "' is " +
                                  std::string(line.substr(space + 1)) + ", not a finite number");
      return;
    }
    table->Put(line.substr(0, space), value);
  });
  if (!status.ok()) return status;
  if (table->entries_.empty()) {
    return Status::InvalidArgument(path +
                                   ": no entries (an IDF table has 'word idf' lines; every "
                                   "keyword's weight would be 0)");
  }
  table->Finalize();
  return std::shared_ptr<const IdfTable>(std::move(table));
}

Result<std::shared_ptr<const IdfTable>> IdfTable::Default() {
  auto dir = FindJiebaDirectory();
  if (!dir.ok()) return dir.status();
  return Load(*dir + "/analyse/idf.txt");
}

std::shared_ptr<const IdfTable> IdfTable::FromEntries(
    std::vector<std::pair<std::string, double>> entries, std::string source) {
  std::shared_ptr<IdfTable> table(new IdfTable());
  table->source_ = std::move(source);
  size_t bytes = 0;
  for (const auto& [word, value] : entries) bytes += word.size();
  table->words_.reserve(bytes);
  for (const auto& [word, value] : entries) table->words_.append(word);
  table->index_.assign(std::bit_ceil(entries.size() * 2 + 16), 0);
  size_t offset = 0;
  for (const auto& [word, value] : entries) {
    table->Put(std::string_view(table->words_).substr(offset, word.size()), value);
    offset += word.size();
  }
  table->Finalize();
  return table;
}

void IdfTable::Put(std::string_view word, double value) {
  if (entries_.size() * 2 >= index_.size()) {
    index_.assign(index_.size() * 2, 0);
    const size_t mask = index_.size() - 1;
    for (size_t e = 0; e < entries_.size(); ++e) {
      size_t i = std::hash<std::string_view>{}(entries_[e].first) & mask;
      while (index_[i] != 0) i = (i + 1) & mask;
      index_[i] = static_cast<uint32_t>(e + 1);
    }
  }
  const size_t mask = index_.size() - 1;
  size_t i = std::hash<std::string_view>{}(word)&mask;
  while (index_[i] != 0) {
    auto& entry = entries_[index_[i] - 1];
    if (entry.first == word) {
      entry.second = value;
      return;
    }
    i = (i + 1) & mask;
  }
  index_[i] = static_cast<uint32_t>(entries_.size() + 1);
  entries_.emplace_back(word, value);
}

void IdfTable::Finalize() { median_ = Median(entries_); }

std::optional<double> IdfTable::Find(std::string_view word) const {
  const size_t mask = index_.size() - 1;
  for (size_t i = std::hash<std::string_view>{}(word)&mask; index_[i] != 0; i = (i + 1) & mask) {
    const auto& entry = entries_[index_[i] - 1];
    if (entry.first == word) return entry.second;
  }
  return std::nullopt;
}

bool IdfTable::CanHold(std::string_view word) {
  if (word.empty() || FindInvalidUtf8(word) != word.size()) return false;
  const auto* base = reinterpret_cast<const unsigned char*>(word.data());
  for (size_t i = 0; i < word.size();) {
    char32_t cp;
    const int n = text_internal::DecodeUtf8(base + i, base + word.size(), &cp);
    if (n <= 0 || segment_internal::IsPythonSpace(cp)) return false;
    i += static_cast<size_t>(n);
  }
  return true;
}

StopWords StopWords::JiebaDefault() {
  StopWords stop;
  for (const char* word :
       {"the",  "of",   "is", "and",  "to",   "in",  "that", "we",   "for",   "an",  "are",
        "by",   "be",   "as", "on",   "with", "can", "if",   "from", "which", "you", "it",
        "this", "then", "at", "have", "all",  "not", "one",  "has",  "or"}) {
    stop.Insert(word);
  }
  return stop;
}

void StopWords::Insert(std::string_view word) {
  if (!word.empty() && static_cast<unsigned char>(word[0]) >= 0x80) ascii_only_ = false;
  words_.emplace(word);
}

Status StopWords::AddFile(const std::string& path) {
  auto content = segment_internal::ReadWholeFile(path);
  if (!content.ok()) return content.status().WithContext("stop words");
  const std::string_view text = *content;
  if (const size_t bad = FindInvalidUtf8(text); bad != text.size()) {
    size_t line = 1 + static_cast<size_t>(std::count(
                          text.begin(), text.begin() + static_cast<std::ptrdiff_t>(bad), '\n'));
    return Status::InvalidArgument(path + ":" + std::to_string(line) + ": " +
                                   text_internal::InvalidUtf8Message(bad));
  }
  weight_internal::ForEachPythonLine(text, [&](std::string_view line, size_t) { Insert(line); });
  return Status::OK();
}

}  // namespace neardup
