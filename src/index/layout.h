// The bit layout of a table design: where each block sits, which blocks key each table, how to read
// a table's key from a fingerprint, and which table "owns" a pair (the first whose key both share).
#ifndef NEARDUP_INDEX_LAYOUT_H_
#define NEARDUP_INDEX_LAYOUT_H_

#include <array>
#include <cstdint>
#include <vector>

#include "neardup/index.h"

namespace neardup::index_internal {

inline constexpr int kMaxBlocks = 8;
inline constexpr int kMaxTables = 70;  // C(8, 4), the most any design has

class Layout {
 public:
  // design must be valid (TableDesign::Validate).
  explicit Layout(const TableDesign& design);

  const TableDesign& design() const { return design_; }
  int blocks() const { return static_cast<int>(blocks_.size()); }
  int tables() const { return static_cast<int>(tables_.size()); }
  int key_bits(int table) const { return tables_[table].key_bits; }
  int min_key_bits() const { return min_key_bits_; }

  // The key blocks of `table` concatenated, block order kept (most significant block first).
  uint64_t Key(int table, uint64_t code) const {
    uint64_t key = 0;
    for (const Part& part : tables_[table].parts) {
      key = (key << part.bits) | ((code >> part.shift) & part.mask);
    }
    return key;
  }

  // The fingerprint with its bits rearranged for `table`: the key blocks first, then the other
  // blocks, each in its original order. Distances are unchanged by the rearrangement.
  uint64_t Permute(int table, uint64_t code) const {
    uint64_t permuted = 0;
    for (const Part& part : tables_[table].all_parts) {
      permuted = (permuted << part.bits) | ((code >> part.shift) & part.mask);
    }
    return permuted;
  }

  // The leading prefix_bits of a permuted code (the bucket) and the 32 bits after them (the
  // fragment a table stores). prefix_bits <= 32.
  static uint64_t PrefixOf(uint64_t permuted, int prefix_bits) {
    return prefix_bits == 0 ? 0 : permuted >> (64 - prefix_bits);
  }
  static uint32_t FragmentOf(uint64_t permuted, int prefix_bits) {
    return static_cast<uint32_t>((permuted << prefix_bits) >> 32);
  }

  // Bit j set iff block j of difference (a XOR b) is zero.
  uint32_t AgreeingBlocks(uint64_t difference) const {
    uint32_t agree = 0;
    for (size_t j = 0; j < blocks_.size(); ++j) {
      agree |= static_cast<uint32_t>(((difference >> blocks_[j].shift) & blocks_[j].mask) == 0)
               << j;
    }
    return agree;
  }

  // The first table whose key blocks are all among `agreeing_blocks`, or -1.
  int OwnerTable(uint32_t agreeing_blocks) const { return owner_[agreeing_blocks]; }

  // True iff the pair (a, b) is reported by `table`: it is the first table whose key they share.
  bool Owns(int table, uint64_t a, uint64_t b) const {
    return owner_[AgreeingBlocks(a ^ b)] == table;
  }

 private:
  struct Part {
    int shift = 0;
    int bits = 0;
    uint64_t mask = 0;
  };
  struct Table {
    std::vector<Part> parts;      // the key blocks
    std::vector<Part> all_parts;  // the key blocks, then the others
    int key_bits = 0;
    uint32_t block_set = 0;
  };

  TableDesign design_;
  std::vector<Part> blocks_;
  std::vector<Table> tables_;
  std::array<int8_t, 1 << kMaxBlocks> owner_{};
  int min_key_bits_ = 64;
};

// The directory size the index uses for n fingerprints: about 4..16 per bucket, capped by the key.
int DefaultPrefixBits(const Layout& layout, uint64_t n);

}  // namespace neardup::index_internal

#endif  // NEARDUP_INDEX_LAYOUT_H_
