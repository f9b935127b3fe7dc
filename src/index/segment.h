// A Segment is the immutable sorted part of a PermutedTableIndex: for every table of the design, the
// fingerprints ordered by the leading prefix_bits of the table's key, a directory of bucket offsets on
// those bits, and the row number of each entry (rows index the id array of the index).
//
// Layout per table: directory[2^prefix_bits + 1] (uint32 offsets), codes[n] (the original 64-bit
// fingerprints, so verification is a plain XOR + popcount), rows[n] (uint32). All contiguous.
//
// Thread safety: immutable after construction; any number of threads may query it.
#ifndef NEARDUP_INDEX_SEGMENT_H_
#define NEARDUP_INDEX_SEGMENT_H_

#include <algorithm>
#include <bit>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "index/layout.h"
#include "neardup/index.h"
#include "simhash/kernels.h"

namespace neardup::index_internal {

// Entries to build a segment from: codes[i] with row rows[i], or row first_row + i when rows is empty.
struct EntrySource {
  std::span<const uint64_t> codes;
  std::span<const uint32_t> rows;
  uint32_t first_row = 0;
};

// Bit r set iff row r was removed.
class RowSet {
 public:
  bool Contains(uint32_t row) const {
    const size_t word = row / 64;
    return word < words_.size() && (words_[word] >> (row % 64)) & 1;
  }
  void Add(uint32_t row) {
    if (row / 64 >= words_.size()) words_.resize(row / 64 + 1, 0);
    const uint64_t bit = uint64_t{1} << (row % 64);
    count_ += (words_[row / 64] & bit) == 0;
    words_[row / 64] |= bit;
  }
  size_t count() const { return count_; }
  size_t memory_bytes() const { return words_.capacity() * sizeof(uint64_t); }

 private:
  std::vector<uint64_t> words_;
  size_t count_ = 0;
};

struct TableView {
  std::span<const uint32_t> directory;
  std::span<const uint64_t> codes;
  std::span<const uint32_t> rows;
};

class Segment {
 public:
  // Sorts the entries of `sources` (skipping rows in `removed`, which may be null) into one table per
  // table of the layout, on `threads` threads. The order inside a bucket is the order of the sources.
  // A non-empty `remap` replaces every stored row r by remap[r].
  // When per_table_sources is given, table t is built from per_table_sources[t] instead (a merge reads
  // the old table t, already almost in order, which keeps the scatter local).
  static std::shared_ptr<const Segment> Build(
      const Layout& layout, int prefix_bits, std::span<const EntrySource> sources,
      const std::vector<std::vector<EntrySource>>* per_table_sources, const RowSet* removed,
      std::span<const uint32_t> remap, int threads);

  // A segment over memory owned by `owner` (e.g. a mapped file). The views must be consistent:
  // directories of 2^prefix_bits + 1 non-decreasing offsets ending at size; equal-sized codes, rows.
  static std::shared_ptr<const Segment> FromViews(int prefix_bits, size_t size,
                                                  std::vector<TableView> tables,
                                                  std::shared_ptr<const void> owner,
                                                  uint64_t memory_bytes);

  int prefix_bits() const { return prefix_bits_; }
  size_t size() const { return size_; }
  const TableView& table(int t) const { return tables_[t]; }
  int tables() const { return static_cast<int>(tables_.size()); }
  uint64_t memory_bytes() const { return memory_bytes_; }

  // Calls emit(row, distance) for every entry within k of query, each exactly once (an entry is
  // reported by the first table whose key it shares with the query). k <= max exact k of the layout.
  template <typename Emit>
  void Query(const Layout& layout, uint64_t query, int k, QueryStats* stats, Emit&& emit) const {
    for (int t = 0; t < static_cast<int>(tables_.size()); ++t) {
      const TableView& table = tables_[t];
      const uint64_t prefix = layout.Prefix(t, query, prefix_bits_);
      const uint32_t begin = table.directory[prefix];
      const uint32_t end = table.directory[prefix + 1];
      stats->candidates_verified += end - begin;
      ScanRange(table, begin, end, query, k, [&](uint32_t position, uint64_t code) {
        if (layout.Owns(t, code, query)) {
          emit(table.rows[position], std::popcount(code ^ query));
        }
      });
    }
    stats->tables_probed += tables_.size();
  }

  // Calls on_hit(position, code) for every position in [begin, end) of table within k of query.
  template <typename OnHit>
  static void ScanRange(const TableView& table, uint32_t begin, uint32_t end, uint64_t query, int k,
                        OnHit&& on_hit) {
    constexpr uint32_t kChunk = 1024;
    uint64_t masks[kChunk / 64];
    const uint64_t* codes = table.codes.data();
    for (uint32_t base = begin; base < end; base += kChunk) {
      const uint32_t n = std::min(kChunk, end - base);
      if (n <= 8) {
        for (uint32_t i = base; i < base + n; ++i) {
          if (std::popcount(codes[i] ^ query) <= k) on_hit(i, codes[i]);
        }
        continue;
      }
      simhash_internal::HammingMasks(codes + base, n, query, k, masks);
      for (uint32_t w = 0; w < (n + 63) / 64; ++w) {
        for (uint64_t m = masks[w]; m != 0; m &= m - 1) {
          const uint32_t position = base + w * 64 + static_cast<uint32_t>(std::countr_zero(m));
          on_hit(position, codes[position]);
        }
      }
    }
  }

 private:
  struct Storage {
    std::vector<std::vector<uint32_t>> directories;
    std::vector<std::vector<uint64_t>> codes;
    std::vector<std::vector<uint32_t>> rows;
  };

  int prefix_bits_ = 0;
  size_t size_ = 0;
  std::vector<TableView> tables_;
  std::shared_ptr<const void> owner_;
  uint64_t memory_bytes_ = 0;
};

// Runs body(i) for i in 0..count-1 on up to `threads` threads (0: hardware concurrency).
void ParallelFor(size_t count, int threads, const std::function<void(size_t)>& body);

int ResolveThreads(int threads);

}  // namespace neardup::index_internal

#endif  // NEARDUP_INDEX_SEGMENT_H_
