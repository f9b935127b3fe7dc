// An IndexRun is an immutable sorted part of a PermutedTableIndex, covering the rows first_row() ..
// end_row() - 1 (rows number the inserts; removed rows are left out). For every table of the design
// it holds the rows ordered by their bucket, the leading prefix_bits of the table's permuted code
// (key blocks first), with:
//   directory[2^prefix_bits + 1]  uint32 offsets of the buckets
//   fragments[n]                  uint32: the 32 permuted-code bits after the bucket bits
//   rows[n]                       uint32: the row of each entry (its full code is codes[row])
// The distance between two fragments is at most the distance between the codes, so a query keeps
// only entries whose fragment is within k of its own (for random codes 1 in ~700,000 at k = 3) and
// verifies those with the full code: exact, and the scan reads 4 bytes per candidate.
//
// Thread safety: immutable after construction; any number of threads may query it.
#ifndef NEARDUP_INDEX_RUN_H_
#define NEARDUP_INDEX_RUN_H_

#include <algorithm>
#include <bit>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "index/chunked_array.h"
#include "index/layout.h"
#include "index/scan_kernels.h"
#include "neardup/index.h"
#include "util/row_set.h"

namespace neardup::index_internal {

using util_internal::RowSet;  // the removed rows

struct TableView {
  std::span<const uint32_t> directory;
  std::span<const uint32_t> fragments;
  std::span<const uint32_t> rows;
};

using CodeView = ChunkedArray<uint64_t>::View;

class IndexRun {
 public:
  static constexpr size_t kGroup = 16;           // queries whose misses QueryGroup overlaps
  static constexpr size_t kPrefetchBytes = 512;  // of each range, prefetched ahead of the scan

  // Sorts rows first_row .. end_row - 1 of codes (skipping rows in `removed`, which may be null)
  // into the tables of the layout, on `threads` threads. Inside a bucket rows keep ascending order.
  // A non-empty `remap` stores remap[r] instead of every row r.
  static std::shared_ptr<const IndexRun> Build(const Layout& layout, int prefix_bits,
                                               const CodeView& codes, uint32_t first_row,
                                               uint32_t end_row, const RowSet* removed,
                                               std::span<const uint32_t> remap, int threads);

  // A run over memory owned by `owner` (e.g. a mapped file), already checked for consistency:
  // directories of 2^prefix_bits + 1 non-decreasing offsets ending at size, fragments and rows of
  // size entries, rows < end_row.
  static std::shared_ptr<const IndexRun> FromViews(int prefix_bits, size_t size, uint32_t end_row,
                                                   std::vector<TableView> tables,
                                                   std::shared_ptr<const void> owner,
                                                   uint64_t memory_bytes);

  int prefix_bits() const { return prefix_bits_; }
  size_t size() const { return size_; }
  uint32_t first_row() const { return first_row_; }
  uint32_t end_row() const { return end_row_; }
  const TableView& table(int t) const { return tables_[t]; }
  int tables() const { return static_cast<int>(tables_.size()); }
  uint64_t memory_bytes() const { return memory_bytes_; }

  // For queries[0 .. count-1] (count <= kGroup), calls emit(query_index, row, distance) for every
  // entry within k, each once: an entry is reported by the first table whose key it shares with the
  // query. codes[row] must give the code of every row; prefetch_row(row) is called ahead of
  // codes[row] and emit. The group's work runs in stages, so the cache misses of the group overlap
  // instead of following one another: directory entries, then ranges, then the scans (fragment hits
  // are collected), then the rows of the hits, then their codes.
  template <typename Codes, typename PrefetchRow, typename Emit>
  void QueryGroup(const Layout& layout, const Codes& codes, const uint64_t* queries, size_t count,
                  int k, QueryStats* stats, PrefetchRow&& prefetch_row, Emit&& emit) const {
    const size_t tables = tables_.size();
    uint64_t permuted[kGroup * kMaxTables];
    uint32_t begins[kGroup * kMaxTables];
    for (size_t q = 0; q < count; ++q) {
      for (size_t t = 0; t < tables; ++t) {
        permuted[q * tables + t] = layout.Permute(static_cast<int>(t), queries[q]);
        __builtin_prefetch(tables_[t].directory.data() +
                           Layout::PrefixOf(permuted[q * tables + t], prefix_bits_));
      }
    }
    for (size_t i = 0; i < count * tables; ++i) {
      const TableView& table = tables_[i % tables];
      begins[i] = table.directory[Layout::PrefixOf(permuted[i], prefix_bits_)];
      const char* first = reinterpret_cast<const char*>(table.fragments.data() + begins[i]);
      for (size_t line = 0; line < kPrefetchBytes; line += 64) __builtin_prefetch(first + line);
    }
    // hits: (probe i, then its row) of every fragment within k.
    thread_local std::vector<std::pair<uint32_t, uint32_t>> hits;
    hits.clear();
    for (size_t i = 0; i < count * tables; ++i) {
      const TableView& table = tables_[i % tables];
      const uint32_t end = table.directory[Layout::PrefixOf(permuted[i], prefix_bits_) + 1];
      stats->candidates_verified += end - begins[i];
      ScanRange(table, begins[i], end, Layout::FragmentOf(permuted[i], prefix_bits_), k,
                [&](uint32_t position) {
                  __builtin_prefetch(table.rows.data() + position);
                  hits.emplace_back(static_cast<uint32_t>(i), position);
                });
    }
    for (auto& [i, position] : hits) {
      position = tables_[i % tables].rows[position];
      if (position < end_row_) prefetch_row(position);
    }
    for (const auto& [i, row] : hits) {
      if (row >= end_row_) continue;  // only a damaged file whose checksums were skipped has these
      const size_t q = i / tables;
      const uint64_t code = codes[row];
      const int distance = std::popcount(code ^ queries[q]);
      if (distance <= k && layout.Owns(static_cast<int>(i % tables), code, queries[q])) {
        emit(q, row, distance);
      }
    }
    stats->tables_probed += tables * count;
  }

  // Calls on_hit(position) for every position in [begin, end) whose fragment is within k of query.
  template <typename OnHit>
  static void ScanRange(const TableView& table, uint32_t begin, uint32_t end, uint32_t query, int k,
                        OnHit&& on_hit) {
    constexpr uint32_t kChunk = 1024;
    uint64_t masks[kChunk / 64];
    const uint32_t* fragments = table.fragments.data();
    for (uint32_t base = begin; base < end; base += kChunk) {
      const uint32_t n = std::min(kChunk, end - base);
      FragmentMasks(fragments + base, n, query, k, masks);
      for (uint32_t w = 0; w < (n + 63) / 64; ++w) {
        for (uint64_t m = masks[w]; m != 0; m &= m - 1) {
          on_hit(base + w * 64 + static_cast<uint32_t>(std::countr_zero(m)));
        }
      }
    }
  }

 private:
  struct Storage {
    std::vector<std::vector<uint32_t>> directories;
    std::vector<std::vector<uint32_t>> fragments;
    std::vector<std::vector<uint32_t>> rows;
  };

  int prefix_bits_ = 0;
  size_t size_ = 0;
  uint32_t first_row_ = 0;
  uint32_t end_row_ = 0;
  std::vector<TableView> tables_;
  std::shared_ptr<const void> owner_;
  uint64_t memory_bytes_ = 0;
};

}  // namespace neardup::index_internal

#endif  // NEARDUP_INDEX_RUN_H_
