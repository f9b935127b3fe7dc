// RowSet: a set of 32-bit rows as a bit array (removed rows of the indexes, empty documents).
//
// Thread safety: none; the owner serialises writers against readers.
#ifndef NEARDUP_UTIL_ROW_SET_H_
#define NEARDUP_UTIL_ROW_SET_H_

#include <bit>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace neardup::util_internal {

// Bit r set iff row r is in the set.
class RowSet {
 public:
  bool Contains(uint32_t row) const {
    const size_t word = row / 64;
    return word < words_.size() && ((words_[word] >> (row % 64)) & 1) != 0;
  }
  void Add(uint32_t row) {
    if (row / 64 >= words_.size()) words_.resize(row / 64 + 1, 0);
    const uint64_t bit = uint64_t{1} << (row % 64);
    count_ += (words_[row / 64] & bit) == 0;
    words_[row / 64] |= bit;
  }
  size_t count() const { return count_; }
  size_t memory_bytes() const { return words_.capacity() * sizeof(uint64_t); }

  // The bits: word w holds rows 64w .. 64w + 63, row r as bit r % 64. No word past the highest row
  // added (snapshots write them as they are).
  const std::vector<uint64_t>& words() const { return words_; }
  // The set of these bits.
  static RowSet FromWords(std::vector<uint64_t> words) {
    RowSet set;
    for (uint64_t w : words) set.count_ += static_cast<size_t>(std::popcount(w));
    set.words_ = std::move(words);
    return set;
  }

 private:
  std::vector<uint64_t> words_;
  size_t count_ = 0;
};

}  // namespace neardup::util_internal

#endif  // NEARDUP_UTIL_ROW_SET_H_
