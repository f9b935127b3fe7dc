#include "index/layout.h"

#include <algorithm>
#include <bit>

namespace neardup {

TableDesign TableDesign::Even(int blocks, int key_blocks) {
  TableDesign design;
  design.key_blocks = key_blocks;
  if (blocks <= 0) return design;
  for (int j = 0; j < blocks; ++j)
    design.block_bits.push_back(64 / blocks + (j < 64 % blocks ? 1 : 0));
  return design;
}

int TableDesign::tables() const {
  const int n = static_cast<int>(block_bits.size());
  if (key_blocks < 0 || key_blocks > n) return 0;
  int64_t c = 1;
  for (int i = 0; i < key_blocks; ++i) c = c * (n - i) / (i + 1);
  return static_cast<int>(c);
}

std::string TableDesign::ToString() const {
  std::string s = std::to_string(block_bits.size()) + " blocks ";
  for (size_t j = 0; j < block_bits.size(); ++j) {
    if (j) s.push_back(',');
    s += std::to_string(block_bits[j]);
  }
  s += ", key " + std::to_string(key_blocks) + (key_blocks == 1 ? " block: " : " blocks: ");
  s += std::to_string(tables()) + " tables, exact for k<=" + std::to_string(max_exact_k());
  return s;
}

Status TableDesign::Validate() const {
  const int n = static_cast<int>(block_bits.size());
  if (n < 2 || n > index_internal::kMaxBlocks) {
    return Status::InvalidArgument("a design has 2 to 8 blocks, not " + std::to_string(n));
  }
  int sum = 0;
  for (int bits : block_bits) {
    if (bits < 1 || bits > 32) return Status::InvalidArgument("block sizes are 1..32 bits");
    sum += bits;
  }
  if (sum != 64)
    return Status::InvalidArgument("block sizes sum to " + std::to_string(sum) + ", not 64");
  if (key_blocks < 1 || key_blocks >= n) {
    return Status::InvalidArgument("key blocks must be 1.." + std::to_string(n - 1));
  }
  return Status::OK();
}

namespace index_internal {

Layout::Layout(const TableDesign& design) : design_(design) {
  int shift = 64;
  for (int bits : design.block_bits) {
    shift -= bits;
    blocks_.push_back(Part{shift, bits, bits == 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1});
  }
  const uint32_t all = (uint32_t{1} << blocks_.size()) - 1;
  // Tables in lexicographic order of their block sets: {0,1}, {0,2}, ..., so owner rules are
  // simple.
  std::vector<uint32_t> sets;
  for (uint32_t set = 0; set <= all; ++set) {
    if (std::popcount(set) == design.key_blocks) sets.push_back(set);
  }
  auto members = [](uint32_t set) {
    std::vector<int> m;
    for (int j = 0; j < 32; ++j) {
      if (set & (uint32_t{1} << j)) m.push_back(j);
    }
    return m;
  };
  std::sort(sets.begin(), sets.end(),
            [&](uint32_t a, uint32_t b) { return members(a) < members(b); });
  for (uint32_t set : sets) {
    Table table;
    table.block_set = set;
    for (size_t j = 0; j < blocks_.size(); ++j) {
      if (set & (uint32_t{1} << j)) {
        table.parts.push_back(blocks_[j]);
        table.key_bits += blocks_[j].bits;
      }
    }
    table.all_parts = table.parts;
    for (size_t j = 0; j < blocks_.size(); ++j) {
      if (!(set & (uint32_t{1} << j))) table.all_parts.push_back(blocks_[j]);
    }
    min_key_bits_ = std::min(min_key_bits_, table.key_bits);
    tables_.push_back(std::move(table));
  }
  owner_.fill(-1);
  for (uint32_t agree = 0; agree <= all; ++agree) {
    for (size_t t = 0; t < tables_.size(); ++t) {
      if ((tables_[t].block_set & ~agree) == 0) {
        owner_[agree] = static_cast<int8_t>(t);
        break;
      }
    }
  }
}

int DefaultPrefixBits(const Layout& layout, uint64_t n) {
  const int log2n = n <= 1 ? 0 : 63 - std::countl_zero(n);
  return std::clamp(log2n - 3, 0, std::min(layout.min_key_bits(), 26));
}

}  // namespace index_internal
}  // namespace neardup
