// PermutedTableIndex: the pigeonhole index of neardup/index.h.
//
// Rows number the inserts (0, 1, ...): ids_[row] is the user id, codes_[row] the fingerprint,
// removed_ marks removed rows (tombstones) and id_map_ finds the row of an id. The rows are
// covered, in order, by immutable sorted runs (IndexRun: a large "main" one, then smaller "delta"
// runs of decreasing sizes), then a frozen range being merged in the background, then the write
// buffer; the last two are scanned by brute force.
//
// Merges, on two background threads: a minor merge freezes a full buffer and merges it with the
// newest delta runs no larger than 4 times what it merges so far (so the deltas grow geometrically,
// about log5(n / 16000) of them, and a minor merge is small whatever n); a major merge folds the
// main run and every delta into a new main once the deltas exceed 1/8 of the main run. Minor merges
// go on while a major one runs (on the runs after it), so the brute-force range stays near the
// buffer's size while a large main run is rebuilt. Queries keep using the old runs until a new one
// replaces them under a short exclusive lock. Appending to codes_ never moves earlier rows, so a
// merge reads them without the lock.
#ifndef NEARDUP_INDEX_PERMUTED_TABLE_INDEX_H_
#define NEARDUP_INDEX_PERMUTED_TABLE_INDEX_H_

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <thread>
#include <vector>

#include "index/chunked_array.h"
#include "index/id_map.h"
#include "index/layout.h"
#include "index/run.h"
#include "neardup/index.h"

namespace neardup::index_internal {

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

  // Fills an empty index from a file: `run` covers rows 0..ids.size()-1 densely.
  void Adopt(std::shared_ptr<const IndexRun> run, std::span<const uint64_t> ids,
             std::span<const uint64_t> codes);

  // Everything stored, compacted: one run over dense rows 0..n-1, with their ids and codes.
  struct Compact {
    std::shared_ptr<const IndexRun> run;
    std::vector<uint64_t> ids;
    std::vector<uint64_t> codes;
  };
  Compact Compacted() const;

  const Layout& layout() const { return layout_; }

 private:
  Status CheckK(int k) const;
  // Appends the matches of queries (at most IndexRun::kGroup) in turn, each query's unsorted, and
  // their number to *counts. Shared lock held.
  void QueryGroupLocked(std::span<const uint64_t> queries, int k, std::vector<Match>* out,
                        std::vector<size_t>* counts, QueryStats* stats) const;
  // Brute force over rows first..end-1 (shared lock held).
  void ScanRows(uint32_t first, uint32_t end, uint64_t query, int k, std::vector<Match>* out,
                QueryStats* stats) const;
  void EnsureIdMap();
  size_t MergeThreshold() const;
  // All with the exclusive lock held; MergeLoop and MajorMerge release it while merging in the
  // background.
  void MaybeStartMerge(std::unique_lock<std::shared_mutex>& lock);
  void MergeLoop(std::unique_lock<std::shared_mutex>& lock);
  void MaybeStartMajorMerge(std::unique_lock<std::shared_mutex>& lock);
  // A run of rows first..end-1 (removed ones left out), built without the lock when merging in the
  // background.
  std::shared_ptr<const IndexRun> BuildRun(std::unique_lock<std::shared_mutex>& lock,
                                           uint32_t first, uint32_t end);
  void MajorMerge(std::unique_lock<std::shared_mutex>& lock);
  int PrefixBitsFor(size_t entries) const;
  void RecordStats(const QueryStats& stats) const;

  const Layout layout_;
  const IndexOptions options_;

  mutable std::shared_mutex mutex_;
  std::vector<std::shared_ptr<const IndexRun>> runs_;  // ascending rows: main, then deltas
  uint32_t merging_first_ = 0;  // rows merging_first_ .. buffer_first_-1 are being merged
  uint32_t buffer_first_ = 0;   // rows buffer_first_ .. size-1 are the write buffer
  std::vector<uint64_t> ids_;
  ChunkedArray<uint64_t> codes_;
  RowSet removed_;
  IdMap id_map_;
  bool id_map_ready_ = false;
  size_t live_ = 0;
  bool merge_running_ = false;  // a minor merge loop
  bool major_running_ = false;
  uint32_t major_end_ = 0;  // a major merge takes the runs of rows below it
  uint64_t merges_ = 0;
  std::thread merger_, major_merger_;

  mutable std::atomic<uint64_t> total_queries_{0};
  mutable std::atomic<uint64_t> total_probed_{0};
  mutable std::atomic<uint64_t> total_candidates_{0};
  mutable std::atomic<uint64_t> total_matches_{0};
};

// Sorts matches in (distance, id) order.
void SortMatches(std::span<Match> matches);

// query_group(group, out, counts, stats) appends the matches of each query of the group in turn and
// their number to *counts. RunBatch runs it over all queries on `threads` threads, in groups of
// group_size, and concatenates the results in query order, each query's sorted.
using QueryGroupFunction = std::function<void(std::span<const uint64_t>, std::vector<Match>*,
                                              std::vector<size_t>*, QueryStats*)>;
BatchResult RunBatch(std::span<const uint64_t> queries, int threads, size_t group_size,
                     const QueryGroupFunction& query_group);

}  // namespace neardup::index_internal

#endif  // NEARDUP_INDEX_PERMUTED_TABLE_INDEX_H_
