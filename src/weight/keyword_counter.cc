#include "weight/keyword_counter.h"

#include <algorithm>

namespace neardup::weight_internal {

KeywordCounter::KeywordCounter(const KeywordModel& model)
    : model_(model),
      dict_(model.dictionary()->data()),
      engine_(dict_),
      table_nodes_(1024, -1),
      table_entries_(1024, 0),
      word_table_(256, {0, 0}) {
  engine_.set_resolve_nodes(true);
}

void KeywordCounter::Reset() {
  for (size_t slot : used_slots_) table_nodes_[slot] = -1;
  used_slots_.clear();
  for (size_t slot : used_word_slots_) word_table_[slot] = {0, 0};
  used_word_slots_.clear();
  entries_.clear();
  pending.clear();
  consumed = 0;
}

size_t KeywordCounter::NodeSlot(int32_t node) const {
  const size_t mask = table_nodes_.size() - 1;
  size_t i = (static_cast<uint64_t>(node) * 0x9E3779B97F4A7C15ULL) >> 32 & mask;
  while (table_nodes_[i] != node && table_nodes_[i] != -1) i = (i + 1) & mask;
  return i;
}

void KeywordCounter::GrowNodeTable() {
  const std::vector<size_t> old_slots = std::move(used_slots_);
  std::vector<int32_t> old_nodes(table_nodes_.size() * 2, -1);
  std::vector<uint32_t> old_entries(table_entries_.size() * 2, 0);
  old_nodes.swap(table_nodes_);
  old_entries.swap(table_entries_);
  used_slots_.clear();
  for (size_t slot : old_slots) {
    const size_t i = NodeSlot(old_nodes[slot]);
    table_nodes_[i] = old_nodes[slot];
    table_entries_[i] = old_entries[slot];
    used_slots_.push_back(i);
  }
}

void KeywordCounter::Count(std::string_view word, int32_t node) {
  if (node >= 0) {
    if (used_slots_.size() * 2 >= table_nodes_.size()) GrowNodeTable();
    const size_t slot = NodeSlot(node);
    if (table_nodes_[slot] == node) {
      entries_[table_entries_[slot]].count += 1.0;
      return;
    }
    table_nodes_[slot] = node;
    table_entries_[slot] = static_cast<uint32_t>(entries_.size());
    used_slots_.push_back(slot);
    entries_.push_back({std::string(word), 1.0, node});
    return;
  }
  if (used_word_slots_.size() * 2 >= word_table_.size()) {
    std::vector<std::pair<uint64_t, uint32_t>> old(word_table_.size() * 2, {0, 0});
    old.swap(word_table_);
    used_word_slots_.clear();
    for (const auto& slot : old) {
      if (slot.second == 0) continue;
      size_t i = slot.first & (word_table_.size() - 1);
      while (word_table_[i].second != 0) i = (i + 1) & (word_table_.size() - 1);
      word_table_[i] = slot;
      used_word_slots_.push_back(i);
    }
  }
  const uint64_t hash = std::hash<std::string_view>{}(word);
  const size_t mask = word_table_.size() - 1;
  size_t i = hash & mask;
  for (; word_table_[i].second != 0; i = (i + 1) & mask) {
    if (word_table_[i].first == hash && entries_[word_table_[i].second - 1].word == word) {
      entries_[word_table_[i].second - 1].count += 1.0;
      return;
    }
  }
  entries_.push_back({std::string(word), 1.0, node});
  word_table_[i] = {hash, static_cast<uint32_t>(entries_.size())};
  used_word_slots_.push_back(i);
}

std::optional<size_t> KeywordCounter::AddBlocks(std::string_view text) {
  engine_.CutDefault<true>(text, [this](std::string_view word, int32_t node) {
    // jieba drops words shorter than two characters after strip(); the only word of several
    // characters with white space in it is "\r\n".
    if (IsOneCharacter(word) || word == "\r\n") return;
    Count(word, node);
  });
  return engine_.TakeFirstInvalid();
}

std::vector<Keyword> KeywordCounter::Finish(size_t top) {
  struct Candidate {
    const Entry* entry;
    double weight;
    size_t order;
  };
  std::vector<Candidate> kept;
  kept.reserve(entries_.size());
  std::string lower;
  const StopWords& stop = model_.stop_words();
  double total = 0;
  for (const Entry& entry : entries_) {
    // jieba compares wc.lower(); words here are block characters, so only ASCII letters change.
    std::string_view key = entry.word;
    if (std::any_of(key.begin(), key.end(), [](char c) { return c >= 'A' && c <= 'Z'; })) {
      lower.assign(key);
      for (char& c : lower) {
        if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
      }
      key = lower;
    }
    if (stop.Contains(key)) continue;
    kept.push_back({&entry, 0, kept.size()});
    total += entry.count;
  }
  for (Candidate& c : kept) {
    // freq[k] *= idf / total, as jieba computes it.
    c.weight = c.entry->count * (model_.IdfOf(c.entry->word, c.entry->node) / total);
  }
  // sorted(..., reverse=True) is stable: equal weights keep the order of first occurrence.
  const auto order = [](const Candidate& a, const Candidate& b) {
    return a.weight != b.weight ? a.weight > b.weight : a.order < b.order;
  };
  if (top != 0 && kept.size() > top) {
    std::partial_sort(kept.begin(), kept.begin() + static_cast<std::ptrdiff_t>(top), kept.end(),
                      order);
    kept.resize(top);
  } else {
    std::sort(kept.begin(), kept.end(), order);
  }
  std::vector<Keyword> keywords;
  keywords.reserve(kept.size());
  for (const Candidate& c : kept) keywords.push_back({c.entry->word, c.weight});
  return keywords;
}

}  // namespace neardup::weight_internal
