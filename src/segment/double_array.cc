#include "segment/double_array.h"

#include <algorithm>
#include <numeric>

namespace neardup::segment_internal {
namespace {

// Symbols by decreasing number of occurrences in the keys (ties by code): frequent characters, which
// are the children of most nodes, get small symbols.
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
    Reserve(size_t{kCodeCount} * 4);
    // The root's children fill most of the first kCodeCount slots; the holes left there only suit
    // nodes with small symbols, so searches start after them.
    for (size_t& block : start_block_) block = kCodeCount / kBlock;
    MarkUsed(0);
    units_[0].check = -2;  // the root is never anyone's child
  }

  std::vector<DoubleArrayTrie::Unit> Run() {
    if (!keys_.empty()) BuildNode(DoubleArrayTrie::kRoot, 0, keys_.size(), 0);
    int32_t max_base = 0;
    for (const auto& unit : units_) max_base = std::max(max_base, unit.base);
    units_.resize(std::max(tail_, static_cast<size_t>(max_base) + kCodeCount + 1));
    units_.shrink_to_fit();
    return std::move(units_);
  }

 private:
  static constexpr uint32_t kBlock = 256;  // slots per block of the density bookkeeping

  void Reserve(size_t size) {
    if (size <= units_.size()) return;
    const size_t grown = std::max(size, units_.size() + units_.size() / 2);
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
  // rarely fit in crowded regions, so their search starts in the first block sparse enough for their
  // child count (blocks only fill up, so each start pointer only moves forward), and the largest ones
  // go near the end of the used slots.
  size_t FindBase(const std::vector<CharCode>& symbols) {
    const size_t first = symbols.front();
    const size_t count = symbols.size();
    const int level = count == 1 ? 0 : count < 4 ? 1 : count < 16 ? 2 : count < 64 ? 3 : 4;
    static constexpr uint32_t kMaxUsed[5] = {kBlock - 1, kBlock * 3 / 4, kBlock / 2, kBlock / 4,
                                             kBlock / 16};
    size_t& block = start_block_[level];
    while (block < block_used_.size() && block_used_[block] > kMaxUsed[level]) ++block;
    size_t pos = std::max(block * kBlock, first + 1);
    if (level >= 3) pos = std::max(pos, tail_ > symbols.back() ? tail_ - symbols.back() : 0);
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

  void BuildNode(int32_t node, size_t lo, size_t hi, size_t depth) {
    if (keys_[lo].size() == depth) units_[static_cast<size_t>(node)].value = values_[lo++];
    if (lo == hi) return;
    // Children: (symbol, first key) of each distinct code at this depth; keys are sorted by code.
    std::vector<std::pair<CharCode, size_t>> children;
    for (size_t i = lo; i < hi; ++i) {
      const CharCode symbol = symbols_[static_cast<CharCode>(keys_[i][depth])];
      if (children.empty() || keys_[children.back().second][depth] != keys_[i][depth]) {
        children.emplace_back(symbol, i);
      }
    }
    std::vector<size_t> ends(children.size());
    for (size_t i = 0; i < children.size(); ++i) {
      ends[i] = i + 1 < children.size() ? children[i + 1].second : hi;
    }
    std::vector<CharCode> sorted(children.size());
    for (size_t i = 0; i < children.size(); ++i) sorted[i] = children[i].first;
    std::sort(sorted.begin(), sorted.end());
    const size_t base = FindBase(sorted);
    units_[static_cast<size_t>(node)].base = static_cast<int32_t>(base);
    for (CharCode symbol : sorted) {
      units_[base + symbol].check = node;
      MarkUsed(base + symbol);
    }
    for (size_t i = 0; i < children.size(); ++i) {
      BuildNode(static_cast<int32_t>(base + children[i].first), children[i].second, ends[i], depth + 1);
    }
  }

  std::span<const std::u16string_view> keys_;
  std::span<const int32_t> values_;
  const std::vector<CharCode>& symbols_;
  std::vector<DoubleArrayTrie::Unit> units_;
  std::vector<uint64_t> used_;
  std::vector<uint32_t> block_used_;
  size_t start_block_[5];
  size_t tail_ = 1;
};

}  // namespace

DoubleArrayTrie DoubleArrayTrie::Build(std::span<const std::u16string_view> keys,
                                       std::span<const int32_t> values) {
  DoubleArrayTrie trie;
  trie.symbols_ = RankSymbols(keys);
  trie.units_ = Builder(keys, values, trie.symbols_).Run();
  return trie;
}

}  // namespace neardup::segment_internal
