// PermutedTableIndex: the pigeonhole index of neardup/index.h.
//
// State: a list of immutable sorted Segments (a large "main" one and at most one smaller "delta"), a
// frozen write buffer being merged in the background, and the active write buffer. Rows number the
// inserts (0, 1, ...); ids_[row] is the user id, removed_ marks removed rows (tombstones), id_map_
// finds the row of an id. Queries scan the segments' ranges and the buffers by brute force.
//
// Merges (background thread): a full buffer is frozen and merged with the delta segment into a new
// delta, or, once the delta would exceed 1/8 of the main segment, with both into a new main. Queries
// keep using the old segments until the new one replaces them under a short exclusive lock.
#ifndef NEARDUP_INDEX_PERMUTED_TABLE_INDEX_H_
#define NEARDUP_INDEX_PERMUTED_TABLE_INDEX_H_

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <thread>
#include <vector>

#include "index/id_map.h"
#include "index/layout.h"
#include "index/segment.h"
#include "neardup/index.h"

namespace neardup::index_internal {

struct WriteBuffer {
  std::vector<uint64_t> codes;
  std::vector<uint32_t> rows;
};

class PermutedTableIndex final : public Index {
 public:
  // design must be valid.
  PermutedTableIndex(const TableDesign& design, const IndexOptions& options);
  ~PermutedTableIndex() override;

  Status Insert(uint64_t id, uint64_t fingerprint) override;
  Status Remove(uint64_t id) override;
  Status Flush() override;
  Result<std::vector<Match>> Query(uint64_t fingerprint, int k) const override;
  Result<BatchResult> QueryBatch(std::span<const uint64_t> fingerprints, int k,
                                 int threads) const override;
  IndexStats Stats() const override;

  // Fills an empty index with rows 0..n-1. InvalidArgument naming a repeated id.
  Status BulkBuild(std::span<const uint64_t> ids, std::span<const uint64_t> codes);

  // Fills an empty index with a segment whose rows index `ids` densely (from a file).
  void Adopt(std::shared_ptr<const Segment> segment, std::vector<uint64_t> ids);

  // Everything stored, as one segment with dense rows 0..n-1 into *ids (removed rows left out).
  std::shared_ptr<const Segment> Compacted(std::vector<uint64_t>* ids) const;

  const Layout& layout() const { return layout_; }

 private:
  Status CheckK(int k) const;
  // Appends the matches of one query (shared lock held).
  void QueryLocked(uint64_t query, int k, std::vector<Match>* out, QueryStats* stats) const;
  void ScanBuffer(const WriteBuffer& buffer, uint64_t query, int k, std::vector<Match>* out,
                  QueryStats* stats) const;
  void EnsureIdMap();
  size_t MergeThreshold() const;
  // Both with the exclusive lock held; MergeLoop releases it while merging in the background.
  void MaybeStartMerge(std::unique_lock<std::shared_mutex>& lock);
  void MergeLoop(std::unique_lock<std::shared_mutex>& lock);
  std::shared_ptr<const Segment> MergeInto(
      std::span<const std::shared_ptr<const Segment>> inputs, const WriteBuffer& buffer,
      const RowSet& removed, size_t live_estimate) const;
  int PrefixBitsFor(size_t entries) const;
  void RecordStats(const QueryStats& stats) const;

  const Layout layout_;
  const IndexOptions options_;

  mutable std::shared_mutex mutex_;
  std::vector<std::shared_ptr<const Segment>> segments_;  // oldest (largest) first
  std::shared_ptr<const WriteBuffer> merging_;            // frozen buffer of the running merge
  WriteBuffer buffer_;
  std::vector<uint64_t> ids_;
  RowSet removed_;
  IdMap id_map_;
  bool id_map_ready_ = false;
  size_t live_ = 0;
  bool merge_running_ = false;
  uint64_t merges_ = 0;
  std::thread merger_;

  mutable std::atomic<uint64_t> total_queries_{0};
  mutable std::atomic<uint64_t> total_probed_{0};
  mutable std::atomic<uint64_t> total_candidates_{0};
  mutable std::atomic<uint64_t> total_matches_{0};
};

// Sorts matches in (distance, id) order.
void SortMatches(std::span<Match> matches);

// The body of QueryBatch shared by both indexes: runs query_one(query, out, stats) for every query on
// `threads` threads in chunks, and concatenates the results in query order.
BatchResult RunBatch(std::span<const uint64_t> queries, int threads,
                     const std::function<void(uint64_t, std::vector<Match>*, QueryStats*)>& query_one);

}  // namespace neardup::index_internal

#endif  // NEARDUP_INDEX_PERMUTED_TABLE_INDEX_H_
