#include "index/permuted_table_index.h"

#include <algorithm>

#include "simhash/kernels.h"
#include "util/parallel.h"

namespace neardup::index_internal {
namespace {

constexpr size_t kDefaultMergeThreshold = 2048;
constexpr uint32_t kMaxRows = 0xFFFFFFFEu;
// The delta runs are folded into the main one (a major merge) once they exceed main / kDeltaRatio.
constexpr size_t kDeltaRatio = 8;
// A minor merge takes in the newest delta runs that hold at most kTierRatio times what it merges
// so far, so delta runs grow geometrically and an entry is rewritten O(log n) times.
constexpr size_t kTierRatio = 4;

}  // namespace

void SortMatches(std::span<Match> matches) {
  std::sort(matches.begin(), matches.end(), [](const Match& a, const Match& b) {
    return a.distance != b.distance ? a.distance < b.distance : a.id < b.id;
  });
}

BatchResult RunBatch(std::span<const uint64_t> queries, int threads, size_t group_size,
                     const QueryGroupFunction& query_group) {
  constexpr size_t kChunk = 4096;
  const size_t chunks = (queries.size() + kChunk - 1) / kChunk;
  struct ChunkResult {
    std::vector<size_t> counts;
    std::vector<Match> matches;
    QueryStats stats;
  };
  std::vector<ChunkResult> parts(chunks);
  util_internal::ParallelFor(chunks, threads, [&](size_t c) {
    ChunkResult& part = parts[c];
    const size_t end = std::min(queries.size(), (c + 1) * kChunk);
    for (size_t q = c * kChunk; q < end; q += group_size) {
      const size_t first_count = part.counts.size();
      size_t position = part.matches.size();
      query_group(queries.subspan(q, std::min(group_size, end - q)), &part.matches, &part.counts,
                  &part.stats);
      for (size_t i = first_count; i < part.counts.size(); ++i) {
        SortMatches(std::span<Match>(part.matches).subspan(position, part.counts[i]));
        position += part.counts[i];
      }
    }
  });
  BatchResult result;
  result.offsets.reserve(queries.size() + 1);
  result.offsets.push_back(0);
  size_t total = 0;
  for (const ChunkResult& part : parts) total += part.matches.size();
  result.matches.reserve(total);
  for (ChunkResult& part : parts) {
    for (size_t count : part.counts) result.offsets.push_back(result.offsets.back() + count);
    result.matches.insert(result.matches.end(), part.matches.begin(), part.matches.end());
    result.stats += part.stats;
  }
  return result;
}

PermutedTableIndex::PermutedTableIndex(const TableDesign& design, const IndexOptions& options)
    : layout_(design), options_(options) {}

PermutedTableIndex::~PermutedTableIndex() {
  if (merger_.joinable()) merger_.join();
  if (major_merger_.joinable()) major_merger_.join();
}

Status PermutedTableIndex::CheckK(int k) const {
  if (k < 0 || k > layout_.design().max_exact_k()) {
    return Status::InvalidArgument("k=" + std::to_string(k) + " is outside 0.." +
                                   std::to_string(layout_.design().max_exact_k()) +
                                   ", the range this index's design (" +
                                   layout_.design().ToString() + ") answers exactly");
  }
  return Status::OK();
}

int PermutedTableIndex::PrefixBitsFor(size_t entries) const {
  if (options_.prefix_bits > 0) {
    return std::min({options_.prefix_bits, layout_.min_key_bits(), 30});
  }
  return DefaultPrefixBits(layout_, entries);
}

Status PermutedTableIndex::BulkBuild(std::span<const uint64_t> ids,
                                     std::span<const uint64_t> codes) {
  if (ids.size() != codes.size()) {
    return Status::InvalidArgument(
        "ids and fingerprints differ in length: " + std::to_string(ids.size()) + " vs " +
        std::to_string(codes.size()));
  }
  if (ids.size() > kMaxRows) return Status::ResourceExhausted("more than 2^32 - 2 fingerprints");
  std::unique_lock lock(mutex_);
  if (!ids_.empty()) return Status::FailedPrecondition("BulkBuild on a non-empty index");
  ids_.assign(ids.begin(), ids.end());
  codes_.Assign(codes);
  Status status;
  // The id map (duplicate check) and the tables are independent: build them side by side.
  std::thread map_builder([&] {
    id_map_.Reserve(ids_, ids_.size());
    for (uint32_t row = 0; row < ids_.size(); ++row) {
      if (id_map_.Find(ids_, ids_[row]).has_value()) {
        status = Status::InvalidArgument("id " + std::to_string(ids_[row]) + " appears twice");
        return;
      }
      id_map_.Add(ids_, row);
    }
  });
  const auto n = static_cast<uint32_t>(ids.size());
  auto run = IndexRun::Build(layout_, PrefixBitsFor(n), codes_.Snapshot(), 0, n, nullptr, {},
                             options_.build_threads);
  map_builder.join();
  if (!status.ok()) {
    ids_.clear();
    codes_ = ChunkedArray<uint64_t>();
    id_map_ = IdMap();
    return status;
  }
  id_map_ready_ = true;
  if (n > 0) runs_ = {std::move(run)};
  merging_first_ = buffer_first_ = n;
  live_ = n;
  return Status::OK();
}

void PermutedTableIndex::Adopt(std::shared_ptr<const IndexRun> run, std::span<const uint64_t> ids,
                               std::span<const uint64_t> codes) {
  std::unique_lock lock(mutex_);
  ids_.assign(ids.begin(), ids.end());
  codes_.Assign(codes);
  live_ = ids_.size();
  runs_.clear();
  if (run->size() > 0) runs_.push_back(std::move(run));
  merging_first_ = buffer_first_ = static_cast<uint32_t>(ids_.size());
  id_map_ready_ = false;  // built on the first Insert or Remove, so opening stays fast
}

void PermutedTableIndex::EnsureIdMap() {
  if (id_map_ready_) return;
  id_map_.Reset(ids_, live_, [&](uint32_t row) { return removed_.Contains(row); });
  id_map_ready_ = true;
}

Status PermutedTableIndex::Insert(uint64_t id, uint64_t fingerprint) {
  std::unique_lock lock(mutex_);
  EnsureIdMap();
  if (id_map_.Find(ids_, id).has_value()) {
    return Status::FailedPrecondition("id " + std::to_string(id) + " is already in the index");
  }
  if (ids_.size() >= kMaxRows) return Status::ResourceExhausted("more than 2^32 - 2 inserts");
  const auto row = static_cast<uint32_t>(ids_.size());
  ids_.push_back(id);
  codes_.push_back(fingerprint);
  id_map_.Add(ids_, row);
  ++live_;
  MaybeStartMerge(lock);
  return Status::OK();
}

Status PermutedTableIndex::Remove(uint64_t id) {
  std::unique_lock lock(mutex_);
  EnsureIdMap();
  const std::optional<uint32_t> row = id_map_.Find(ids_, id);
  if (!row.has_value())
    return Status::NotFound("id " + std::to_string(id) + " is not in the index");
  id_map_.Erase(ids_, id);
  removed_.Add(*row);
  --live_;
  return Status::OK();
}

size_t PermutedTableIndex::MergeThreshold() const {
  return options_.merge_threshold > 0 ? options_.merge_threshold : kDefaultMergeThreshold;
}

void PermutedTableIndex::MaybeStartMerge(std::unique_lock<std::shared_mutex>& lock) {
  if (merge_running_ || ids_.size() - buffer_first_ < MergeThreshold()) return;
  merge_running_ = true;
  if (!options_.background_merge) {
    MergeLoop(lock);
    return;
  }
  if (merger_.joinable()) merger_.join();  // a finished loop: it cleared merge_running_ and exits
  merger_ = std::thread([this] {
    std::unique_lock merge_lock(mutex_);
    MergeLoop(merge_lock);
  });
}

void PermutedTableIndex::MergeLoop(std::unique_lock<std::shared_mutex>& lock) {
  while (ids_.size() - buffer_first_ >= MergeThreshold()) {
    // Freeze the buffer and merge it with the newest delta runs that are at most kTierRatio times
    // what is merged so far; never with the main run (runs_[0]), nor with runs under a major merge.
    merging_first_ = buffer_first_;
    const auto end = static_cast<uint32_t>(ids_.size());
    buffer_first_ = end;
    size_t lowest = runs_.empty() ? 0 : 1;
    if (major_running_) {
      lowest = 0;
      while (lowest < runs_.size() && runs_[lowest]->first_row() < major_end_) ++lowest;
    }
    size_t keep = runs_.size();
    size_t merged_rows = end - merging_first_;
    while (keep > lowest && runs_[keep - 1]->size() <= merged_rows * kTierRatio) {
      merged_rows += runs_[keep - 1]->size();
      --keep;
    }
    const uint32_t first = keep < runs_.size() ? runs_[keep]->first_row() : merging_first_;
    auto merged = BuildRun(lock, first, end);
    // A major merge may have replaced the runs before `first` meanwhile: find ours by their rows.
    std::erase_if(runs_, [first](const auto& run) { return run->first_row() >= first; });
    if (merged->size() > 0) runs_.push_back(std::move(merged));
    merging_first_ = buffer_first_;
    ++merges_;
    MaybeStartMajorMerge(lock);
  }
  merge_running_ = false;
}

std::shared_ptr<const IndexRun> PermutedTableIndex::BuildRun(
    std::unique_lock<std::shared_mutex>& lock, uint32_t first, uint32_t end) {
  const RowSet removed = removed_;
  const CodeView codes = codes_.Snapshot();
  if (options_.background_merge) lock.unlock();
  auto run = IndexRun::Build(layout_, PrefixBitsFor(end - first), codes, first, end, &removed, {},
                             options_.background_merge ? 1 : options_.build_threads);
  if (options_.background_merge) lock.lock();
  return run;
}

void PermutedTableIndex::MaybeStartMajorMerge(std::unique_lock<std::shared_mutex>& lock) {
  if (major_running_ || runs_.size() < 2) return;
  size_t deltas = 0;
  for (size_t i = 1; i < runs_.size(); ++i) deltas += runs_[i]->size();
  if (deltas * kDeltaRatio <= runs_.front()->size()) return;
  major_running_ = true;
  major_end_ = runs_.back()->end_row();
  if (!options_.background_merge) {
    MajorMerge(lock);
    return;
  }
  if (major_merger_.joinable()) major_merger_.join();  // finished: it cleared major_running_
  major_merger_ = std::thread([this] {
    std::unique_lock merge_lock(mutex_);
    MajorMerge(merge_lock);
  });
}

void PermutedTableIndex::MajorMerge(std::unique_lock<std::shared_mutex>& lock) {
  // Every run up to major_end_ into one main run; minor merges go on meanwhile after it.
  const uint32_t end = major_end_;
  auto merged = BuildRun(lock, runs_.front()->first_row(), end);
  std::erase_if(runs_, [end](const auto& run) { return run->first_row() < end; });
  if (merged->size() > 0) runs_.insert(runs_.begin(), std::move(merged));
  ++merges_;
  major_running_ = false;
}

Status PermutedTableIndex::Flush() {
  std::unique_lock lock(mutex_);
  while (merge_running_ || major_running_) {
    std::thread minor = std::move(merger_), major = std::move(major_merger_);
    const bool ours = minor.joinable() || major.joinable();
    lock.unlock();
    if (minor.joinable()) minor.join();
    if (major.joinable()) major.join();
    if (!ours) std::this_thread::yield();  // another Flush is joining them
    lock.lock();
  }
  if (buffer_first_ == ids_.size() && runs_.size() <= 1) return Status::OK();
  // Merge everything into one run, synchronously.
  const auto end = static_cast<uint32_t>(ids_.size());
  auto merged = IndexRun::Build(layout_, PrefixBitsFor(live_), codes_.Snapshot(), 0, end, &removed_,
                                {}, options_.build_threads);
  runs_.clear();
  if (merged->size() > 0) runs_.push_back(std::move(merged));
  merging_first_ = buffer_first_ = end;
  ++merges_;
  return Status::OK();
}

void PermutedTableIndex::ScanRows(uint32_t first, uint32_t end, uint64_t query, int k,
                                  std::vector<Match>* out, QueryStats* stats) const {
  constexpr uint32_t kPiece = 1024;
  uint64_t masks[kPiece / 64];
  for (uint32_t base = first; base < end;) {
    // A piece never crosses a chunk of codes_, so its codes are contiguous.
    const uint32_t chunk_end = static_cast<uint32_t>(std::min<uint64_t>(
        end,
        (uint64_t{base} / ChunkedArray<uint64_t>::kChunk + 1) * ChunkedArray<uint64_t>::kChunk));
    const uint32_t n = std::min(kPiece, chunk_end - base);
    const uint64_t* piece = &codes_.at(base);
    simhash_internal::HammingMasks(piece, n, query, k, masks);
    for (uint32_t w = 0; w < (n + 63) / 64; ++w) {
      for (uint64_t m = masks[w]; m != 0; m &= m - 1) {
        const uint32_t row = base + w * 64 + static_cast<uint32_t>(std::countr_zero(m));
        if (!removed_.Contains(row)) {
          out->push_back(Match{ids_[row], std::popcount(codes_[row] ^ query)});
        }
      }
    }
    base += n;
  }
  stats->candidates_verified += end - first;
}

void PermutedTableIndex::QueryGroupLocked(std::span<const uint64_t> queries, int k,
                                          std::vector<Match>* out, std::vector<size_t>* counts,
                                          QueryStats* stats) const {
  // Matches of the runs tagged with their query, then grouped per query (stably).
  thread_local std::vector<std::pair<uint32_t, Match>> tagged;
  tagged.clear();
  for (const auto& run : runs_) {
    run->QueryGroup(
        layout_, codes_, queries.data(), queries.size(), k, stats,
        [&](uint32_t row) {
          __builtin_prefetch(&codes_.at(row));
          __builtin_prefetch(ids_.data() + row);
        },
        [&](size_t q, uint32_t row, int distance) {
          if (!removed_.Contains(row)) {
            tagged.emplace_back(static_cast<uint32_t>(q), Match{ids_[row], distance});
          }
        });
  }
  if (runs_.size() > 1) {
    std::stable_sort(tagged.begin(), tagged.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
  }
  size_t next = 0;
  for (size_t q = 0; q < queries.size(); ++q) {
    const size_t before = out->size();
    for (; next < tagged.size() && tagged[next].first == q; ++next)
      out->push_back(tagged[next].second);
    ScanRows(merging_first_, static_cast<uint32_t>(ids_.size()), queries[q], k, out, stats);
    counts->push_back(out->size() - before);
    stats->matches += out->size() - before;
  }
  stats->queries += queries.size();
}

void PermutedTableIndex::RecordStats(const QueryStats& stats) const {
  total_queries_.fetch_add(stats.queries, std::memory_order_relaxed);
  total_probed_.fetch_add(stats.tables_probed, std::memory_order_relaxed);
  total_candidates_.fetch_add(stats.candidates_verified, std::memory_order_relaxed);
  total_matches_.fetch_add(stats.matches, std::memory_order_relaxed);
}

Result<std::vector<Match>> PermutedTableIndex::Query(uint64_t fingerprint, int k) const {
  NEARDUP_RETURN_IF_ERROR(CheckK(k));
  std::vector<Match> matches;
  std::vector<size_t> counts;
  QueryStats stats;
  {
    std::shared_lock lock(mutex_);
    QueryGroupLocked(std::span(&fingerprint, 1), k, &matches, &counts, &stats);
  }
  SortMatches(matches);
  RecordStats(stats);
  return matches;
}

Result<BatchResult> PermutedTableIndex::QueryBatch(std::span<const uint64_t> fingerprints, int k,
                                                   int threads) const {
  NEARDUP_RETURN_IF_ERROR(CheckK(k));
  std::shared_lock lock(mutex_);
  BatchResult result = RunBatch(
      fingerprints, threads, IndexRun::kGroup,
      [&](std::span<const uint64_t> group, std::vector<Match>* out, std::vector<size_t>* counts,
          QueryStats* stats) { QueryGroupLocked(group, k, out, counts, stats); });
  RecordStats(result.stats);
  return result;
}

IndexStats PermutedTableIndex::Stats() const {
  std::shared_lock lock(mutex_);
  IndexStats stats;
  stats.size = live_;
  stats.buffered = ids_.size() - merging_first_;
  stats.merges = merges_;
  stats.design = layout_.design().ToString();
  stats.max_exact_k = layout_.design().max_exact_k();
  uint64_t memory = ids_.capacity() * sizeof(uint64_t) + codes_.memory_bytes() +
                    removed_.memory_bytes() + id_map_.memory_bytes();
  for (const auto& run : runs_) memory += run->memory_bytes();
  stats.memory_bytes = memory;
  stats.queries.queries = total_queries_.load(std::memory_order_relaxed);
  stats.queries.tables_probed = total_probed_.load(std::memory_order_relaxed);
  stats.queries.candidates_verified = total_candidates_.load(std::memory_order_relaxed);
  stats.queries.matches = total_matches_.load(std::memory_order_relaxed);
  return stats;
}

PermutedTableIndex::Compact PermutedTableIndex::Compacted() const {
  std::shared_lock lock(mutex_);
  Compact compact;
  std::vector<uint32_t> remap(ids_.size(), IdMap::kEmpty);
  compact.ids.reserve(live_);
  compact.codes.reserve(live_);
  for (uint32_t row = 0; row < ids_.size(); ++row) {
    if (removed_.Contains(row)) continue;
    remap[row] = static_cast<uint32_t>(compact.ids.size());
    compact.ids.push_back(ids_[row]);
    compact.codes.push_back(codes_[row]);
  }
  compact.run =
      IndexRun::Build(layout_, PrefixBitsFor(live_), codes_.Snapshot(), 0,
                      static_cast<uint32_t>(ids_.size()), &removed_, remap, options_.build_threads);
  return compact;
}

}  // namespace neardup::index_internal
