// Internal: a double-array trie over character codes (segment/char_class.h).
//
// Node 0 is the root. The child of node s by code c is t = base[s] + symbol[c] when check[t] == s.
// Symbols renumber the codes by decreasing frequency among the keys, so that the children of a node
// sit close together and nodes pack densely. Every node that ends a key carries that key's value
// (>= 0); other nodes carry kNoValue. Each unit also holds a double "weight" the owner sets
// (kNoWeight until then) so that the hottest lookup, a step and the weight of the word reached,
// touches one 16-byte unit. The array is padded so that base[s] + symbol is always inside it.
//
// Thread safety: immutable after Build(); any number of threads may read it.
#ifndef NEARDUP_SEGMENT_DOUBLE_ARRAY_H_
#define NEARDUP_SEGMENT_DOUBLE_ARRAY_H_

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "segment/char_class.h"

namespace neardup::segment_internal {

class DoubleArrayTrie {
 public:
  static constexpr double kNoWeight = 1.0;
  struct Unit {
    int32_t base = 0;
    int32_t check = -1;  // parent node, -1 for a free slot
    double weight = kNoWeight;
  };
  static constexpr int32_t kRoot = 0;
  static constexpr int32_t kNoNode = -1;
  static constexpr int32_t kNoValue = -1;

  DoubleArrayTrie()
      : units_(kCodeCount + 1), values_(kCodeCount + 1, kNoValue), symbols_(kCodeCount, 0) {
    units_[0].check = -2;
  }

  // Builds the trie of `keys`, which must be sorted (lexicographically by code), unique and made of
  // codes in 1..kCodeCount-1; keys[i] gets values[i] (>= 0).
  static DoubleArrayTrie Build(std::span<const std::u16string_view> keys,
                               std::span<const int32_t> values);

  // A trie from the arrays of another one (units(), values(), symbols()), as read from a cache
  // file: nullopt unless they are consistent (every lookup stays inside the arrays, every value is
  // below `value_limit`), so that damaged arrays can never make a lookup read out of bounds.
  static std::optional<DoubleArrayTrie> FromParts(std::vector<Unit> units,
                                                  std::vector<int32_t> values,
                                                  std::vector<CharCode> symbols,
                                                  size_t value_limit);

  int32_t Child(int32_t node, CharCode code) const {
    const auto t = static_cast<uint32_t>(units_[static_cast<uint32_t>(node)].base) + symbols_[code];
    return units_[t].check == node ? static_cast<int32_t>(t) : kNoNode;
  }
  int32_t Value(int32_t node) const { return values_[static_cast<uint32_t>(node)]; }
  double Weight(int32_t node) const { return units_[static_cast<uint32_t>(node)].weight; }
  void SetWeight(int32_t node, double weight) {
    units_[static_cast<uint32_t>(node)].weight = weight;
  }

  // The node reached by `key` from the root, or kNoNode.
  int32_t Find(std::u16string_view key) const {
    int32_t node = kRoot;
    for (char16_t c : key) {
      node = Child(node, static_cast<CharCode>(c));
      if (node == kNoNode) break;
    }
    return node;
  }

  const std::vector<Unit>& units() const { return units_; }
  const std::vector<int32_t>& values() const { return values_; }
  const std::vector<CharCode>& symbols() const { return symbols_; }
  size_t MemoryBytes() const {
    return units_.capacity() * sizeof(Unit) + values_.capacity() * sizeof(int32_t) +
           symbols_.capacity() * sizeof(CharCode);
  }

 private:
  std::vector<Unit> units_;
  std::vector<int32_t> values_;
  std::vector<CharCode> symbols_;  // code -> symbol, 1..kCodeCount-1 (0 for code 0)
};

}  // namespace neardup::segment_internal

#endif  // NEARDUP_SEGMENT_DOUBLE_ARRAY_H_
