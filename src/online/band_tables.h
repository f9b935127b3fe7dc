// BandTables: for every LSH band, band key -> the rows holding it, for the accurate method's online
// index.
//
// Each band has a main table, a run of (key, row) entries in ascending order with a directory on
// the keys' top bits, each entry packed into the fewest bytes that hold the rest of its key and its
// row (5 bytes an entry plus about 0.6 for the directory: 4-8 entries a bucket), and a write
// buffer: an open-addressing table of (key, newest row) with the rows of a key chained through
// `next`. Add() writes to the buffer in O(1); once it holds 1/16 of the stored rows (at least
// min_merge_rows), Merge() radix-sorts it and merges it into the main table in place, from the
// back, so an insert moves about 16 entries per band on average. The main tables grow with realloc
// (no copy where the system can remap pages), their directories are updated in the same pass, a
// table is laid out again (wider directory, other entry width) only when its entries or rows
// double, and removed rows are dropped from them once they are 1/16 of the rows (until then the
// caller skips them).
//
// (A second, "recent" run between the buffer and the main table moves fewer entries per insert,
// about 6, but a query then looks up three tables a band: measured at 10M documents it inserted
// about as fast, 194,000/s against 175,000-209,000/s, and answered 25% fewer queries.)
//
// Thread safety: none; the owner serialises writers against readers.
#ifndef NEARDUP_ONLINE_BAND_TABLES_H_
#define NEARDUP_ONLINE_BAND_TABLES_H_

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "neardup/status.h"
#include "util/pod_array.h"
#include "util/row_set.h"

namespace neardup::online_internal {

using RowBits = util_internal::RowSet;

class BandTables {
 public:
  static constexpr uint32_t kNone = 0xFFFFFFFFu;

  // min_merge_rows: the smallest buffer that is merged (65536 in the index; tests merge smaller
  // buffers, and so more often).
  explicit BandTables(size_t bands, size_t min_merge_rows = 65536);

  size_t bands() const { return bands_; }

  // Adds row's keys (one per band). Rows are added in increasing order.
  void Add(uint32_t row, std::span<const uint32_t> keys);

  // Adds rows first_row, first_row + 1, ... at once (a load): row first_row + i has the keys
  // keys[i * bands .. (i + 1) * bands) when present[i] != 0 and is skipped otherwise. The buffer is
  // merged first (leaving out `removed`); then each band's new entries are sorted once and merged
  // into its main table, instead of going through the buffer. first_row is above every row added
  // before.
  void AddAll(uint32_t first_row, std::span<const uint32_t> keys, std::span<const uint8_t> present,
              const RowBits& removed);

  // Whether the buffer is full enough to merge.
  bool ShouldMerge() const;
  // Moves the buffer into the main tables, leaving out the rows in `removed` (rows removed may be
  // left in the main tables until enough of them have gathered; ForEachRow() reports them).
  void Merge(const RowBits& removed);

  // Calls on_row(row) for every row holding `key` in `band` (removed rows included): two lookups,
  // the main table and the buffer.
  template <typename OnRow>
  void ForEachRow(size_t band, uint32_t key, OnRow&& on_row) const {
    const Band& b = tables_[band];
    b.main.ForEachRow(key, on_row);
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

  // Snapshots (online/index_snapshot.h) write the tables' arrays as they are and Restore them.
  // A band's main table: its entries (count * width bytes) and directory (2^prefix_bits + 1
  // offsets); and its buffer's slots.
  struct RunLayout {
    uint64_t count = 0;
    uint32_t max_row = 0;
    uint32_t prefix_bits = 0;
    uint32_t width = 8;
  };
  RunLayout run_layout(size_t band) const;
  std::span<const uint8_t> run_entries(size_t band) const;
  std::span<const uint32_t> run_directory(size_t band) const;
  std::span<const uint64_t> buffer_slots(size_t band) const;
  // The buffer's rows: first .. first + present.size() - 1 (when started), and the counts that
  // time the merges and the purges.
  struct BufferLayout {
    uint32_t first = 0;
    bool started = false;
    uint64_t main_rows = 0;
    uint64_t purged_removed = 0;
  };
  BufferLayout buffer_layout() const;
  std::span<const uint8_t> buffer_present() const { return buffer_present_; }
  std::span<const uint32_t> buffer_keys() const { return buffer_keys_; }  // kNone in gaps
  std::span<const uint32_t> buffer_chains() const { return next_; }

  // A band as Restore takes it (entries: count * width bytes and 8 more, which it sets).
  struct RestoredBand {
    RunLayout layout;
    util_internal::PodArray<uint8_t> entries;
    std::vector<uint32_t> directory;
    std::vector<uint64_t> slots;
  };
  // Tables of these arrays, for an index of `rows` rows with `removed` rows removed. Corruption
  // saying what is wrong when they could not have been written by BandTables (a query or insert
  // could then read outside them, loop, or miss a row): a layout whose entries cannot hold a key
  // and a row, a directory that does not climb from 0 to count, entries out of order or of a row
  // >= rows, buffer rows past `rows`, a chain that does not lead to an earlier buffer row of its
  // key, a slot of a row outside the buffer or under another key or out of a lookup's reach, a
  // buffer row reached twice or never, a slot table without a free slot. Checks the bands on two
  // threads when they are large.
  static Result<std::unique_ptr<BandTables>> Restore(size_t bands, std::vector<RestoredBand> tables,
                                                     const BufferLayout& buffer,
                                                     std::vector<uint8_t> present,
                                                     std::vector<uint32_t> keys,
                                                     std::vector<uint32_t> chains, uint32_t rows,
                                                     const RowBits& removed);

 private:
  // A sorted run of (key, row) entries, packed: directory[b] = the first entry of bucket b (the
  // keys' top prefix_bits bits), and each entry holds the rest of its key above its row in
  // `width` bytes (little-endian), the fewest that hold both (5 while the rows number about as
  // many as the entries). The directory has 4-8 entries a bucket.
  struct Run {
    util_internal::PodArray<uint8_t> bytes;  // count * width bytes, and 8 of padding
    size_t count = 0;
    uint32_t max_row = 0;             // the highest row ever merged in
    std::vector<uint32_t> directory;  // 2^prefix_bits + 1 offsets into the entries
    int prefix_bits = 0;
    int low_bits = 32;             // key bits in an entry: 32 - prefix_bits
    int row_bits = 32;             // row bits in an entry
    size_t width = 8;              // bytes an entry
    uint64_t mask = ~uint64_t{0};  // the low width * 8 bits

    uint64_t Load(size_t i) const {
      uint64_t v;
      std::memcpy(&v, bytes.data() + i * width, sizeof v);
      if constexpr (std::endian::native == std::endian::big) v = __builtin_bswap64(v);
      return v & mask;
    }
    void Store(size_t i, uint64_t v) {
      if constexpr (std::endian::native == std::endian::big) v = __builtin_bswap64(v);
      std::memcpy(bytes.data() + i * width, &v, width);
    }
    uint32_t Bucket(uint32_t key) const { return prefix_bits == 0 ? 0 : key >> low_bits; }
    // An entry of this run for (key, row), without its bucket bits.
    uint64_t Encode(uint32_t key, uint32_t row) const {
      const uint64_t low = low_bits == 32 ? key : key & ((uint32_t{1} << low_bits) - 1);
      return low << row_bits | row;
    }
    uint32_t RowOf(uint64_t v) const {
      return static_cast<uint32_t>(v & ((uint64_t{1} << row_bits) - 1));
    }
    uint32_t KeyOf(size_t bucket, uint64_t v) const {
      return static_cast<uint32_t>((uint64_t{bucket} << low_bits) | (v >> row_bits));
    }

    template <typename OnRow>
    void ForEachRow(uint32_t key, OnRow& on_row) const {
      if (count == 0) return;
      const uint32_t bucket = Bucket(key);
      const uint64_t low = Encode(key, 0) >> row_bits;
      for (uint32_t i = directory[bucket], end = directory[bucket + 1]; i < end; ++i) {
        const uint64_t v = Load(i);
        const uint64_t k = v >> row_bits;
        if (k < low) continue;
        if (k > low) break;
        on_row(RowOf(v));
      }
    }
    // Merges the `fresh` entries (key << 32 | row, sorted) in, leaving out the rows in `removed`
    // (null: none).
    void MergeIn(std::span<const uint64_t> fresh, const RowBits* removed);
    // Drops the rows in `removed`, in place.
    void Purge(const RowBits& removed);
    // Every entry as key << 32 | row, in order.
    void Decode(std::vector<uint64_t>* out) const;
    // Lays the run out for `entries` entries and rows up to top_row, re-encoding what it holds
    // when that changes its layout.
    void Layout(size_t entries, uint32_t top_row);
    size_t memory_bytes() const;
  };

  struct Band {
    Run main;
    std::vector<uint64_t> slots;  // buffer: (key << 32 | newest row), kNone rows empty
    size_t used = 0;
  };

  static size_t Home(uint32_t key, size_t slots) {
    const uint64_t h = (uint64_t{key} ^ 0x5bd1e995u) * 0x9E3779B97F4A7C15ULL;
    __extension__ using Wide = unsigned __int128;
    return static_cast<size_t>((static_cast<Wide>(h) * slots) >> 64);
  }
  void GrowSlots(Band* band);
  // Restore's checks and moves of band j (the buffer's arrays restored already); reached: scratch.
  Status RestoreBand(size_t j, RestoredBand* in, uint32_t rows, std::vector<uint8_t>* reached);
  // Sorts `values` by their top 32 bits, stably, using *scratch (made as large as values).
  static void SortByKey(std::vector<uint64_t>* values, std::vector<uint64_t>* scratch);

  const size_t bands_;
  const size_t min_merge_rows_;
  std::vector<Band> tables_;
  // The buffer's rows: buffer_first_ .. buffer_first_ + buffer_keys_.size() / bands_ - 1.
  uint32_t buffer_first_ = 0;
  bool buffer_started_ = false;
  std::vector<uint32_t> buffer_keys_;    // (row - buffer_first_) * bands + band; kNone-filled gaps
  std::vector<uint32_t> next_;           // chain of the buffer's rows, same indexing
  std::vector<uint8_t> buffer_present_;  // whether a buffer row was added
  size_t buffer_rows_ = 0;               // rows added to the buffer
  size_t main_rows_ = 0;                 // entries of each band's main table
  size_t purged_removed_ = 0;            // removed.count() when removed rows were last dropped
  std::vector<uint64_t> fresh_, scratch_;  // Merge()'s buffers, kept between merges
};

}  // namespace neardup::online_internal

#endif  // NEARDUP_ONLINE_BAND_TABLES_H_
