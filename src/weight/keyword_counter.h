// Internal: the counting half of jieba's extract_tags. Words of the cut are counted by trie node
// (words outside the trie by text), in order of first occurrence, then weighted and ranked.
#ifndef NEARDUP_WEIGHT_KEYWORD_COUNTER_H_
#define NEARDUP_WEIGHT_KEYWORD_COUNTER_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "neardup/keywords.h"
#include "segment/cut_engine.h"

namespace neardup::weight_internal {

// True when `word` (non-empty UTF-8) is one code point.
inline bool IsOneCharacter(std::string_view word) {
  const auto lead = static_cast<unsigned char>(word[0]);
  const size_t length = lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
  return word.size() <= length;
}

class KeywordCounter {
 public:
  explicit KeywordCounter(const KeywordModel& model);

  void Reset();

  // Counts the candidate words of `text` (valid UTF-8). Pieces must be cut where jieba would cut
  // blocks anyway (after a character outside re_han_default).
  void AddBlocks(std::string_view text);

  // Weighted, ranked keywords of everything added since Reset(); top 0 means all.
  std::vector<Keyword> Finish(size_t top);

  // Streaming state of KeywordExtractor::Add: text not yet counted, and bytes before it.
  std::string pending;
  uint64_t consumed = 0;

 private:
  struct Entry {
    std::string word;
    double count;
    int32_t node;  // trie node, or -1
  };

  void Count(std::string_view word, int32_t node);
  // The slot of `node` in the node table: where it is, or the free slot where it belongs.
  size_t NodeSlot(int32_t node) const;
  void GrowNodeTable();

  const KeywordModel& model_;
  const segment_internal::DictionaryData& dict_;
  segment_internal::CutEngine engine_;
  std::vector<Entry> entries_;
  // Open addressing with linear probing: node -> entry index; node -1 marks a free slot.
  std::vector<int32_t> table_nodes_;
  std::vector<uint32_t> table_entries_;
  std::vector<size_t> used_slots_;
  std::unordered_map<std::string, uint32_t> word_index_;
  std::u16string codes_;
};

}  // namespace neardup::weight_internal

#endif  // NEARDUP_WEIGHT_KEYWORD_COUNTER_H_
