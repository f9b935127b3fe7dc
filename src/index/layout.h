// The bit layout of a table design: where each block sits, which blocks key each table, how to read a
// table's key from a fingerprint, and which table "owns" a pair (the first whose key both share).
#ifndef NEARDUP_INDEX_LAYOUT_H_
#define NEARDUP_INDEX_LAYOUT_H_

#include <array>
#include <cstdint>
#include <vector>

#include "neardup/index.h"

namespace neardup::index_internal {

inline constexpr int kMaxBlocks = 8;

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

  // The leading prefix_bits of the key (prefix_bits <= key_bits(table)).
  uint64_t Prefix(int table, uint64_t code, int prefix_bits) const {
    return Key(table, code) >> (tables_[table].key_bits - prefix_bits);
  }

  // Bit j set iff block j of difference (a XOR b) is zero.
  uint32_t AgreeingBlocks(uint64_t difference) const {
    uint32_t agree = 0;
    for (size_t j = 0; j < blocks_.size(); ++j) {
      agree |= static_cast<uint32_t>(((difference >> blocks_[j].shift) & blocks_[j].mask) == 0) << j;
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
    std::vector<Part> parts;
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
