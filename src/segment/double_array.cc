#include "segment/double_array.h"

#include <algorithm>
#include <climits>
#include <numeric>

namespace neardup::segment_internal {
namespace {

// Symbols by decreasing number of occurrences in the keys (ties by code): frequent characters,
// which are the children of most nodes, get small symbols.
std::vector<CharCode> RankSymbols(std::span<const std::u16string_view> keys) {
  std::vector<uint32_t> counts(kCodeCount, 0);
  for (const auto& key : keys) {
    for (char16_t c : key) ++counts[c];
  }
  std::vector<CharCode> by_count(kCodeCount - 1);
  std::iota(by_count.begin(), by_count.end(), CharCode{1});
  std::stable_sort(by_count.begin(), by_count.end(),
                   [&](CharCode a, CharCode b) { return counts[a] > counts[b]; });
  std::vector<CharCode> symbols(kCodeCount, 0);
  for (size_t i = 0; i < by_count.size(); ++i) symbols[by_count[i]] = static_cast<CharCode>(i + 1);
  return symbols;
}

class Builder {
 public:
  Builder(std::span<const std::u16string_view> keys, std::span<const int32_t> values,
          const std::vector<CharCode>& symbols)
      : keys_(keys), values_(values), symbols_(symbols) {
    // Tries of words pack to about 1.1 units per key character: reserving once avoids the copies
    // (and the doubled peak memory) of growing the array step by step.
    size_t characters = 0;
    for (const auto& key : keys) characters += key.size();
    units_.reserve(characters * 9 / 8 + size_t{kCodeCount} * 4);
    Reserve(size_t{kCodeCount} * 4);
    // The root's children fill most of the first kCodeCount slots; the holes left there only suit
    // nodes with small symbols, so searches start after them.
    for (size_t& block : start_block_) block = kCodeCount / kBlock;
    MarkUsed(0);
    units_[0].check = -2;  // the root is never anyone's child
  }

  std::vector<int32_t>& values() { return node_values_; }

  std::vector<DoubleArrayTrie::Unit> Run() {
    if (!keys_.empty()) BuildNode(DoubleArrayTrie::kRoot, 0, keys_.size(), 0);
    int32_t max_base = 0;
    for (const auto& unit : units_) max_base = std::max(max_base, unit.base);
    units_.resize(std::max(tail_, static_cast<size_t>(max_base) + kCodeCount + 1));
    if (units_.capacity() > units_.size() + units_.size() / 8) units_.shrink_to_fit();
    node_values_.resize(units_.size(), DoubleArrayTrie::kNoValue);
    return std::move(units_);
  }

 private:
  static constexpr uint32_t kBlock = 256;  // slots per block of the density bookkeeping

  void Reserve(size_t size) {
    if (size > units_.size()) [[unlikely]]
      Grow(size);
  }
  [[gnu::noinline]] void Grow(size_t size) {
    const size_t grown =
        std::max(size, std::min(units_.capacity(), units_.size() + units_.size() / 2));
    units_.resize(grown);
    used_.resize((grown + 63) / 64, 0);
    block_used_.resize((grown + kBlock - 1) / kBlock, 0);
  }
  bool IsUsed(size_t pos) const { return (used_[pos / 64] >> (pos % 64)) & 1; }
  void MarkUsed(size_t pos) {
    used_[pos / 64] |= uint64_t{1} << (pos % 64);
    ++block_used_[pos / kBlock];
    tail_ = std::max(tail_, pos + 1);
  }

  // The first free slot at or after pos.
  size_t NextFree(size_t pos) {
    Reserve(pos + 1);
    size_t word = pos / 64;
    uint64_t bits = ~used_[word] & (~uint64_t{0} << (pos % 64));
    while (bits == 0) {
      if (++word == used_.size()) Reserve(units_.size() + 64);
      bits = ~used_[word];
    }
    return word * 64 + static_cast<size_t>(__builtin_ctzll(bits));
  }

  // A base at which every child symbol lands on a free slot, first fit. Nodes with many children
  // rarely fit in crowded regions, so their search starts in the first block sparse enough for
  // their child count (blocks only fill up, so each start pointer only moves forward), and the
  // largest ones go near the end of the used slots.
  size_t FindBase(const std::vector<CharCode>& symbols) {
    const size_t first = symbols.front();
    const size_t count = symbols.size();
    const int level = count == 1 ? 0 : count < 4 ? 1 : count < 16 ? 2 : count < 64 ? 3 : 4;
    static constexpr uint32_t kMaxUsed[5] = {kBlock - 1, kBlock * 3 / 4, kBlock / 2, kBlock / 4,
                                             kBlock / 16};
    size_t& block = start_block_[level];
    while (block < block_used_.size() && block_used_[block] > kMaxUsed[level]) ++block;
    size_t pos = std::max(block * kBlock, first + 1);
    if (level >= 4) pos = std::max(pos, tail_ > symbols.back() ? tail_ - symbols.back() : 0);
    while (true) {
      pos = NextFree(pos);
      const size_t base = pos - first;
      Reserve(base + symbols.back() + 1);
      bool fits = true;
      for (size_t i = 1; i < count && fits; ++i) fits = !IsUsed(base + symbols[i]);
      if (fits) return base;
      ++pos;
    }
  }

  // Scratch of one BuildNode call, reused at each depth (a trie of words is shallow).
  struct Level {
    std::vector<std::pair<CharCode, size_t>> children;  // (symbol, first key) per distinct code
    std::vector<CharCode> sorted;                       // the children's symbols, ascending
  };

  void BuildNode(int32_t node, size_t lo, size_t hi, size_t depth) {
    if (keys_[lo].size() == depth) {
      if (node_values_.size() <= static_cast<size_t>(node)) {
        node_values_.resize(std::max(units_.size(), static_cast<size_t>(node) + 1),
                            DoubleArrayTrie::kNoValue);
      }
      node_values_[static_cast<size_t>(node)] = values_[lo++];
    }
    if (lo == hi) return;
    if (levels_.size() <= depth) levels_.resize(depth + 1);
    // Keys are sorted by code, so each child's keys are one range starting at its first key.
    auto& children = levels_[depth].children;
    auto& sorted = levels_[depth].sorted;
    children.clear();
    for (size_t i = lo; i < hi; ++i) {
      if (children.empty() || keys_[children.back().second][depth] != keys_[i][depth]) {
        children.emplace_back(symbols_[static_cast<CharCode>(keys_[i][depth])], i);
      }
    }
    sorted.resize(children.size());
    for (size_t i = 0; i < children.size(); ++i) sorted[i] = children[i].first;
    std::sort(sorted.begin(), sorted.end());
    const size_t base = FindBase(sorted);
    units_[static_cast<size_t>(node)].base = static_cast<int32_t>(base);
    for (CharCode symbol : sorted) {
      units_[base + symbol].check = node;
      MarkUsed(base + symbol);
    }
    // The recursion reuses deeper levels only, so this level's list stays valid.
    for (size_t i = 0; i < levels_[depth].children.size(); ++i) {
      const auto [symbol, first] = levels_[depth].children[i];
      const size_t end =
          i + 1 < levels_[depth].children.size() ? levels_[depth].children[i + 1].second : hi;
      BuildNode(static_cast<int32_t>(base + symbol), first, end, depth + 1);
    }
  }

  std::span<const std::u16string_view> keys_;
  std::span<const int32_t> values_;
  const std::vector<CharCode>& symbols_;
  std::vector<DoubleArrayTrie::Unit> units_;
  std::vector<int32_t> node_values_;
  std::vector<uint64_t> used_;
  std::vector<uint32_t> block_used_;
  std::vector<Level> levels_;
  size_t start_block_[5];
  size_t tail_ = 1;
};

}  // namespace

DoubleArrayTrie DoubleArrayTrie::Build(std::span<const std::u16string_view> keys,
                                       std::span<const int32_t> values) {
  DoubleArrayTrie trie;
  trie.symbols_ = RankSymbols(keys);
  Builder builder(keys, values, trie.symbols_);
  trie.units_ = builder.Run();
  trie.values_ = std::move(builder.values());
  return trie;
}

std::optional<DoubleArrayTrie> DoubleArrayTrie::FromParts(std::vector<Unit> units,
                                                          std::vector<int32_t> values,
                                                          std::vector<CharCode> symbols,
                                                          size_t value_limit) {
  const size_t size = units.size();
  if (size == 0 || values.size() != size || symbols.size() != kCodeCount || units[0].check != -2 ||
      size > size_t{INT32_MAX}) {
    return std::nullopt;
  }
  for (CharCode symbol : symbols) {
    if (symbol >= kCodeCount) return std::nullopt;
  }
  for (size_t i = 0; i < size; ++i) {
    const Unit& unit = units[i];
    if (unit.check == -1) continue;  // a free slot is never reached
    if (unit.check < -2 || static_cast<size_t>(unit.check + 2) > size + 1 || unit.base < 0 ||
        static_cast<size_t>(unit.base) + kCodeCount > size) {
      return std::nullopt;
    }
  }
  for (int32_t value : values) {
    if (value < kNoValue || (value >= 0 && static_cast<size_t>(value) >= value_limit))
      return std::nullopt;
  }
  DoubleArrayTrie trie;
  trie.units_ = std::move(units);
  trie.values_ = std::move(values);
  trie.symbols_ = std::move(symbols);
  return trie;
}

}  // namespace neardup::segment_internal
