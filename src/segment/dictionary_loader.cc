// Loading jieba's dictionaries into a DictionaryData: jieba's gen_pfdict for the main dictionary
// and load_userdict / add_word / suggest_freq for user dictionaries, with the same results.
#include <algorithm>
#include <cmath>
#include <map>

#include "neardup/text.h"
#include "segment/dictionary_data.h"
#include "segment/python_literal.h"
#include "segment/reference_cut.h"
#include "text/utf8.h"

namespace neardup::segment_internal {
namespace {

// One FREQ entry made of block characters, as codes in a shared buffer.
struct Entry {
  uint32_t offset;
  uint32_t length;
  int64_t frequency;
  bool word;  // false: a prefix entry, set only when the key is not yet in FREQ
};

class EntryList {
 public:
  void Add(std::u16string_view codes, int64_t frequency, bool word) {
    entries_.push_back({static_cast<uint32_t>(buffer_.size()), static_cast<uint32_t>(codes.size()),
                        frequency, word});
    buffer_.append(codes);
  }
  std::u16string_view Key(const Entry& e) const { return {buffer_.data() + e.offset, e.length}; }
  std::vector<Entry>& entries() { return entries_; }

 private:
  std::u16string buffer_;
  std::vector<Entry> entries_;
};

bool IsAsciiSpace(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

std::string_view StripAscii(std::string_view s) {
  while (!s.empty() && IsAsciiSpace(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsAsciiSpace(s.back())) s.remove_suffix(1);
  return s;
}

// Python's int() of a field, limited to what a frequency can be: [+]digits (underscores between
// digits allowed), below 2^53.
bool ParseFrequency(std::string_view field, int64_t* value) {
  if (!field.empty() && field.front() == '+') field.remove_prefix(1);
  if (field.empty() || field.front() == '_' || field.back() == '_') return false;
  int64_t v = 0;
  for (size_t i = 0; i < field.size(); ++i) {
    const char c = field[i];
    if (c == '_' && field[i - 1] != '_') continue;
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
    if (v > (int64_t{1} << 53)) return false;
  }
  *value = v;
  return true;
}

std::u32string ToCodePoints(std::string_view utf8) {
  std::u32string out;
  const auto* p = reinterpret_cast<const unsigned char*>(utf8.data());
  const auto* end = p + utf8.size();
  while (p < end) {
    char32_t cp;
    int n = text_internal::DecodeUtf8(p, end, &cp);
    if (n <= 0) {
      cp = text_internal::kReplacementCharacter;
      n = n < 0 ? -n : 1;
    }
    out.push_back(cp);
    p += n;
  }
  return out;
}

std::string ToUtf8(std::u32string_view cps) {
  std::string out;
  for (char32_t cp : cps) text_internal::AppendUtf8(cp, &out);
  return out;
}

// FREQ while it is being built: the main dictionary's entries, then user words on top.
class FrequencyTable {
 public:
  // gen_pfdict's handling of one word: FREQ[word] = frequency and every missing prefix set to 0.
  void AddMainWord(std::u32string_view word, int64_t frequency) {
    total_ += frequency;
    size_t block_prefix = 0;
    while (block_prefix < word.size() && CodeOf(word[block_prefix]) != 0) ++block_prefix;
    codes_.clear();
    for (size_t i = 0; i < block_prefix; ++i)
      codes_.push_back(static_cast<char16_t>(CodeOf(word[i])));
    if (block_prefix == word.size()) {
      entries_.Add(codes_, frequency, /*word=*/true);
      return;
    }
    if (block_prefix > 0) entries_.Add(codes_, 0, /*word=*/false);
    other_[ToUtf8(word)] = frequency;
    for (size_t i = block_prefix + 1; i < word.size(); ++i)
      other_.try_emplace(ToUtf8(word.substr(0, i)), 0);
  }

  // Builds the trie of the main dictionary (needed to look words up while user words are added).
  void BuildBase(DictionaryData* data) { Build(data, /*with_user=*/false); }

  // FREQ.get(word) with user words applied.
  std::optional<int64_t> Get(const DictionaryData& base, std::u32string_view word) const {
    if (auto it = user_.find(std::u32string(word)); it != user_.end()) return it->second;
    std::u16string codes;
    for (char32_t cp : word) {
      const CharCode code = CodeOf(cp);
      if (code == 0) {
        auto other = other_.find(ToUtf8(word));
        if (other == other_.end()) return std::nullopt;
        return other->second;
      }
      codes.push_back(static_cast<char16_t>(code));
    }
    return base.FrequencyOfCodes(codes);
  }

  // jieba's add_word(word, freq): FREQ[word] = freq, total += freq, missing prefixes set to 0.
  void AddUserWord(const DictionaryData& base, std::u32string_view word, int64_t frequency,
                   DictionaryData* data) {
    user_[std::u32string(word)] = frequency;
    user_order_.emplace_back(word);
    total_ += frequency;
    for (size_t i = 1; i <= word.size(); ++i) {
      const auto prefix = word.substr(0, i);
      if (!Get(base, prefix)) {
        user_[std::u32string(prefix)] = 0;
        user_order_.emplace_back(prefix);
      }
    }
    if (frequency == 0) data->force_split.insert(ToUtf8(word));
  }

  // jieba's suggest_freq(word, tune=False).
  int64_t SuggestFrequency(const DictionaryData& base, std::u32string_view word) const {
    const FrequencyLookup lookup = [&](std::u32string_view w) { return Get(base, w); };
    const double ftotal = static_cast<double>(total_);
    double freq = 1;
    for (const auto& seg : ReferenceCutNoHmm(word, lookup, total_)) {
      freq *= static_cast<double>(Get(base, seg).value_or(1)) / ftotal;
    }
    const auto suggested = static_cast<int64_t>(freq * static_cast<double>(total_)) + 1;
    return std::max(suggested, Get(base, word).value_or(1));
  }

  int64_t total() const { return total_; }

  // Builds the final trie with the user words applied.
  void BuildFinal(DictionaryData* data) { Build(data, /*with_user=*/true); }

 private:
  void Build(DictionaryData* data, bool with_user) {
    const size_t base_count = entries_.entries().size();
    if (with_user) {
      for (const auto& word : user_order_) {
        const int64_t frequency = user_.at(word);
        std::u16string codes;
        bool block = true;
        for (char32_t cp : word) {
          const CharCode code = CodeOf(cp);
          if (code == 0) block = false;
          codes.push_back(static_cast<char16_t>(code));
        }
        // A user entry always overrides: prefixes were only added when absent.
        if (block) {
          entries_.Add(codes, frequency, /*word=*/true);
        } else {
          other_[ToUtf8(word)] = frequency;
        }
      }
    }
    std::vector<Entry>& all = entries_.entries();
    std::vector<uint32_t> order(all.size());
    for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
      return entries_.Key(all[a]) < entries_.Key(all[b]);
    });
    std::vector<std::u16string_view> keys;
    std::vector<int32_t> values;
    keys.reserve(order.size());
    values.reserve(order.size());
    data->words.clear();
    for (size_t i = 0; i < order.size();) {
      const std::u16string_view key = entries_.Key(all[order[i]]);
      std::optional<int64_t> frequency;
      for (; i < order.size() && entries_.Key(all[order[i]]) == key; ++i) {
        if (all[order[i]].word) frequency = all[order[i]].frequency;  // the last one wins
      }
      int32_t value = DoubleArrayTrie::kNoValue;
      if (frequency && *frequency > 0) {
        value = static_cast<int32_t>(data->words.size());
        data->words.push_back({0.0, *frequency});
      }
      keys.push_back(key);
      values.push_back(value);
    }
    data->trie = DoubleArrayTrie::Build(keys, values);
    data->other_entries = other_;
    data->total = total_;
    data->log_total = std::log(static_cast<double>(total_));
    for (auto& word : data->words) {
      word.log_probability = std::log(static_cast<double>(word.frequency)) - data->log_total;
    }
    // The route reads a word's weight from its trie unit.
    for (size_t node = 0; node < data->trie.units().size(); ++node) {
      const int32_t value = data->trie.Value(static_cast<int32_t>(node));
      if (value >= 0)
        data->trie.SetWeight(static_cast<int32_t>(node),
                             data->words[static_cast<size_t>(value)].log_probability);
    }
    if (with_user) all.resize(base_count);
  }

  EntryList entries_;
  std::unordered_map<std::string, int64_t> other_;
  std::map<std::u32string, int64_t> user_;
  std::vector<std::u32string> user_order_;
  std::u16string codes_;
  int64_t total_ = 0;
};

Status LineError(const std::string& path, size_t line, std::string_view what,
                 std::string_view text) {
  std::string shown(text.substr(0, 80));
  if (FindInvalidUtf8(shown) != shown.size()) shown = ReplaceInvalidUtf8(shown);
  return Status::InvalidArgument(path + ":" + std::to_string(line) + ": " + std::string(what) +
                                 ": '" + shown + "'");
}

// Calls on_line(1-based number, line without surrounding ASCII white space) for every line of a
// dictionary file's text; the first non-OK status stops the loop and is returned.
template <typename OnLine>
Status ForEachLine(std::string_view text, OnLine&& on_line) {
  size_t line_number = 0;
  for (size_t pos = 0; pos < text.size();) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view raw = text.substr(pos, end - pos);
    pos = end + 1;
    NEARDUP_RETURN_IF_ERROR(on_line(++line_number, StripAscii(raw)));
  }
  return Status::OK();
}

// gen_pfdict: "word freq [...]" per line, fields separated by single spaces.
Status LoadMainDictionary(const std::string& path, FrequencyTable* table) {
  auto content = ReadWholeFile(path);
  if (!content.ok()) return content.status().WithContext("jieba dictionary");
  NEARDUP_RETURN_IF_ERROR(ForEachLine(*content, [&](size_t line_number, std::string_view line) {
    if (FindInvalidUtf8(line) != line.size()) {
      return LineError(path, line_number, "invalid UTF-8 in dictionary entry", line);
    }
    const size_t space = line.find(' ');
    if (space == std::string_view::npos || space == 0) {
      return LineError(path, line_number, "invalid dictionary entry (expected 'word frequency')",
                       line);
    }
    const size_t next = line.find(' ', space + 1);
    const std::string_view field =
        line.substr(space + 1, next == std::string_view::npos ? next : next - space - 1);
    int64_t frequency;
    if (!ParseFrequency(field, &frequency)) {
      return LineError(path, line_number, "invalid frequency in dictionary entry", line);
    }
    table->AddMainWord(ToCodePoints(line.substr(0, space)), frequency);
    return Status::OK();
  }));
  if (table->total() <= 0) return Status::InvalidArgument(path + ": the frequencies sum to zero");
  return Status::OK();
}

// re_userdict = ^(.+?)( [0-9]+)?( [a-z]+)?$ : the shortest word after which the rest is
// [" digits"][" lowercase letters"].
void SplitUserLine(std::u32string_view line, std::u32string_view* word,
                   std::optional<std::u32string_view>* frequency) {
  auto is_digit = [](char32_t c) { return c >= '0' && c <= '9'; };
  auto is_lower = [](char32_t c) { return c >= 'a' && c <= 'z'; };
  for (size_t i = 1; i <= line.size(); ++i) {
    size_t j = i;
    std::optional<std::u32string_view> digits;
    if (j < line.size() && line[j] == ' ' && j + 1 < line.size() && is_digit(line[j + 1])) {
      size_t k = j + 1;
      while (k < line.size() && is_digit(line[k])) ++k;
      digits = line.substr(j + 1, k - j - 1);
      j = k;
    }
    if (j < line.size() && line[j] == ' ' && j + 1 < line.size() && is_lower(line[j + 1])) {
      size_t k = j + 1;
      while (k < line.size() && is_lower(line[k])) ++k;
      j = k;
    }
    if (j == line.size()) {
      *word = line.substr(0, i);
      *frequency = digits;
      return;
    }
  }
  *word = line;
  frequency->reset();
}

Status LoadUserDictionary(const std::string& path, const DictionaryData& base,
                          FrequencyTable* table, DictionaryData* data) {
  auto content = ReadWholeFile(path);
  if (!content.ok()) return content.status().WithContext("user dictionary");
  return ForEachLine(*content, [&](size_t line_number, std::string_view line) {
    if (FindInvalidUtf8(line) != line.size()) {
      return LineError(path, line_number, "user dictionary must be UTF-8", line);
    }
    if (line.substr(0, 3) == "\xEF\xBB\xBF") line.remove_prefix(3);
    if (line.empty()) return Status::OK();
    const std::u32string cps = ToCodePoints(line);
    std::u32string_view word;
    std::optional<std::u32string_view> frequency_field;
    SplitUserLine(cps, &word, &frequency_field);
    int64_t frequency;
    if (frequency_field) {
      if (!ParseFrequency(ToUtf8(*frequency_field), &frequency)) {
        return LineError(path, line_number, "frequency too large", line);
      }
    } else {
      frequency = table->SuggestFrequency(base, word);
    }
    table->AddUserWord(base, word, frequency, data);
    return Status::OK();
  });
}

}  // namespace

Result<std::unique_ptr<DictionaryData>> LoadDictionaryData(const DictionaryOptions& options) {
  auto data = std::make_unique<DictionaryData>();
  data->sources = options;
  FrequencyTable table;
  NEARDUP_RETURN_IF_ERROR(LoadMainDictionary(options.dict_path, &table));
  if (options.user_dict_paths.empty()) {
    table.BuildBase(data.get());
  } else {
    DictionaryData base;
    table.BuildBase(&base);
    for (const std::string& path : options.user_dict_paths) {
      NEARDUP_RETURN_IF_ERROR(LoadUserDictionary(path, base, &table, data.get()));
    }
    table.BuildFinal(data.get());
  }
  auto hmm = HmmModel::Load(options.hmm_dir);
  if (!hmm.ok()) return hmm.status().WithContext("jieba HMM model");
  data->hmm = std::move(*hmm);
  return data;
}

}  // namespace neardup::segment_internal
