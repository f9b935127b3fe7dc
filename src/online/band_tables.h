// BandTables: for every LSH band, band key -> the rows holding it, for the accurate method's online
// index.
//
// Each band has a main table, (key << 32 | row) entries sorted with a directory on the keys' top
// bits (8 bytes an entry plus about 2 for the directory), and a write buffer: an open-addressing
// table of (key, newest row) with the rows of a key chained through `next`. Add() writes to the
// buffer in O(1); once the buffer holds max(65536, main/16) rows, Merge() sorts it into the main
// tables (dropping removed rows), so an insert moves about 16 entries per band on average.
//
// Thread safety: none; the owner serialises writers against readers.
#ifndef NEARDUP_ONLINE_BAND_TABLES_H_
#define NEARDUP_ONLINE_BAND_TABLES_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "util/row_set.h"

namespace neardup::online_internal {

using RowBits = util_internal::RowSet;

class BandTables {
 public:
  static constexpr uint32_t kNone = 0xFFFFFFFFu;

  explicit BandTables(size_t bands);

  size_t bands() const { return bands_; }

  // Adds row's keys (one per band). Rows are added in increasing order.
  void Add(uint32_t row, std::span<const uint32_t> keys);

  // Whether the buffer is full enough to merge.
  bool ShouldMerge() const;
  // Moves the buffer into the main tables, leaving out the rows in `removed`.
  void Merge(const RowBits& removed);

  // Calls on_row(row) for every row holding `key` in `band` (removed rows included). Returns the
  // number of tables looked up (2: the main table and the buffer).
  template <typename OnRow>
  void ForEachRow(size_t band, uint32_t key, OnRow&& on_row) const {
    const Band& b = tables_[band];
    if (!b.entries.empty()) {
      const uint32_t bucket = b.prefix_bits == 0 ? 0 : key >> (32 - b.prefix_bits);
      const uint64_t* entries = b.entries.data();
      for (uint32_t i = b.directory[bucket], end = b.directory[bucket + 1]; i < end; ++i) {
        const auto k = static_cast<uint32_t>(entries[i] >> 32);
        if (k < key) continue;
        if (k > key) break;
        on_row(static_cast<uint32_t>(entries[i]));
      }
    }
    if (b.slots.empty()) return;
    for (size_t s = Home(key, b.slots.size());; s = s + 1 == b.slots.size() ? 0 : s + 1) {
      const uint64_t slot = b.slots[s];
      const auto head = static_cast<uint32_t>(slot);
      if (head == kNone) return;
      if (static_cast<uint32_t>(slot >> 32) != key) continue;
      for (uint32_t row = head; row != kNone; row = next_[(row - buffer_first_) * bands_ + band])
        on_row(row);
      return;
    }
  }

  // Every row's key in every band, written to keys[row * bands + band] (keys must hold rows * bands
  // entries; rows of no table are left as they are).
  void KeysOfAll(std::span<uint32_t> keys) const;
  // The keys of one row (O(entries) for rows merged into the main tables). False when the row is in
  // no table.
  bool KeysOf(uint32_t row, std::span<uint32_t> keys) const;

  size_t memory_bytes() const;

 private:
  struct Band {
    std::vector<uint64_t> entries;    // (key << 32 | row), ascending
    std::vector<uint32_t> directory;  // 2^prefix_bits + 1 offsets into entries
    int prefix_bits = 0;
    std::vector<uint64_t> slots;  // buffer: (key << 32 | newest row), kNone rows empty
    size_t used = 0;
  };

  static size_t Home(uint32_t key, size_t slots) {
    const uint64_t h = (uint64_t{key} ^ 0x5bd1e995u) * 0x9E3779B97F4A7C15ULL;
    __extension__ using Wide = unsigned __int128;
    return static_cast<size_t>((static_cast<Wide>(h) * slots) >> 64);
  }
  void GrowSlots(Band* band);
  static void BuildDirectory(Band* band);

  const size_t bands_;
  std::vector<Band> tables_;
  // The buffer's rows: buffer_first_ .. buffer_first_ + buffer_keys_.size() / bands_ - 1.
  uint32_t buffer_first_ = 0;
  bool buffer_started_ = false;
  std::vector<uint32_t> buffer_keys_;    // (row - buffer_first_) * bands + band; kNone-filled gaps
  std::vector<uint32_t> next_;           // chain of the buffer's rows, same indexing
  std::vector<uint8_t> buffer_present_;  // whether a buffer row was added
  size_t buffer_rows_ = 0;               // rows added to the buffer
  size_t main_rows_ = 0;                 // rows in the main tables
};

}  // namespace neardup::online_internal

#endif  // NEARDUP_ONLINE_BAND_TABLES_H_
