// Internal: the contents of a loaded Dictionary (neardup/segment.h), shared read-only by segmenters
// and keyword extractors.
#ifndef NEARDUP_SEGMENT_DICTIONARY_DATA_H_
#define NEARDUP_SEGMENT_DICTIONARY_DATA_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "neardup/segment.h"
#include "segment/char_class.h"
#include "segment/double_array.h"
#include "segment/hmm.h"

namespace neardup::segment_internal {

struct DictionaryWord {
  double log_probability;  // log(frequency) - log(total), jieba's route weight of the word
  int64_t frequency;       // > 0
};

class DictionaryData {
 public:
  // jieba's FREQ dict, split in two. Every entry made only of block characters is a trie node
  // (words and their prefixes); a node whose value is >= 0 is a word of positive frequency,
  // words[value].
  DoubleArrayTrie trie;
  std::vector<DictionaryWord> words;
  // Entries holding other characters (e.g. "γ射线" and its prefixes), UTF-8 keys. They can never
  // match text inside a block, but count for suggest_freq and Frequency().
  std::unordered_map<std::string, int64_t> other_entries;
  // Words given frequency 0 by a user dictionary: the HMM's output splits them (finalseg's
  // Force_Split_Words). UTF-8.
  std::unordered_set<std::string> force_split;
  int64_t total = 0;
  double log_total = 0;
  HmmModel hmm;
  DictionaryOptions sources;
  // The key of its cache file (util/cache_file.h), which keyword models extend; empty when a source
  // could not be read for it.
  std::string cache_key;

  // FREQ.get(word) for a word given as codes (all non-zero).
  std::optional<int64_t> FrequencyOfCodes(std::u16string_view codes) const {
    const int32_t node = trie.Find(codes);
    if (node == DoubleArrayTrie::kNoNode) return std::nullopt;
    const int32_t value = trie.Value(node);
    return value >= 0 ? words[static_cast<size_t>(value)].frequency : 0;
  }

  // FREQ.get(word) for any UTF-8 word.
  std::optional<int64_t> Frequency(std::string_view word) const;

  size_t MemoryBytes() const;
};

// Converts UTF-8 to codes; false when some character is not a block character (or the UTF-8 is
// invalid).
bool ToCodes(std::string_view utf8, std::u16string* codes);

// Builds the dictionary (segment/dictionary_loader.cc).
Result<std::unique_ptr<DictionaryData>> LoadDictionaryData(const DictionaryOptions& options);

}  // namespace neardup::segment_internal

#endif  // NEARDUP_SEGMENT_DICTIONARY_DATA_H_
