#include "index/permuted_table_index.h"

#include <algorithm>
#include <mutex>

namespace neardup::index_internal {
namespace {

constexpr size_t kDefaultMergeThreshold = 2048;
constexpr uint32_t kMaxRows = 0xFFFFFFFEu;
// A delta segment is folded into the main one once it would exceed main / kDeltaRatio.
constexpr size_t kDeltaRatio = 8;

}  // namespace

void SortMatches(std::span<Match> matches) {
  std::sort(matches.begin(), matches.end(), [](const Match& a, const Match& b) {
    return a.distance != b.distance ? a.distance < b.distance : a.id < b.id;
  });
}

BatchResult RunBatch(std::span<const uint64_t> queries, int threads,
                     const std::function<void(uint64_t, std::vector<Match>*, QueryStats*)>& query_one) {
  constexpr size_t kChunk = 2048;
  const size_t chunks = (queries.size() + kChunk - 1) / kChunk;
  struct ChunkResult {
    std::vector<size_t> counts;
    std::vector<Match> matches;
    QueryStats stats;
  };
  std::vector<ChunkResult> parts(chunks);
  ParallelFor(chunks, threads, [&](size_t c) {
    ChunkResult& part = parts[c];
    const size_t end = std::min(queries.size(), (c + 1) * kChunk);
    for (size_t q = c * kChunk; q < end; ++q) {
      const size_t before = part.matches.size();
      query_one(queries[q], &part.matches, &part.stats);
      SortMatches(std::span<Match>(part.matches).subspan(before));
      part.counts.push_back(part.matches.size() - before);
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
}

Status PermutedTableIndex::CheckK(int k) const {
  if (k < 0 || k > layout_.design().max_exact_k()) {
    return Status::InvalidArgument("k=" + std::to_string(k) + " is outside 0.." +
                                   std::to_string(layout_.design().max_exact_k()) +
                                   ", the range this index's design (" + layout_.design().ToString() +
                                   ") answers exactly");
  }
  return Status::OK();
}

int PermutedTableIndex::PrefixBitsFor(size_t entries) const {
  if (options_.prefix_bits > 0) return std::min(options_.prefix_bits, layout_.min_key_bits());
  return DefaultPrefixBits(layout_, entries);
}

Status PermutedTableIndex::BulkBuild(std::span<const uint64_t> ids, std::span<const uint64_t> codes) {
  if (ids.size() != codes.size()) {
    return Status::InvalidArgument("ids and fingerprints differ in length: " +
                                   std::to_string(ids.size()) + " vs " + std::to_string(codes.size()));
  }
  if (ids.size() > kMaxRows) return Status::ResourceExhausted("more than 2^32 - 2 fingerprints");
  std::unique_lock lock(mutex_);
  if (!ids_.empty()) return Status::FailedPrecondition("BulkBuild on a non-empty index");
  ids_.assign(ids.begin(), ids.end());
  std::shared_ptr<const Segment> segment;
  Status status;
  // The id map (duplicate check) and the tables are independent: build them side by side.
  std::thread map_builder([&] {
    id_map_.Reset(ids_, 0, [](uint32_t) { return true; });
    id_map_.Reserve(ids_, ids_.size());
    for (uint32_t row = 0; row < ids_.size(); ++row) {
      if (id_map_.Find(ids_, ids_[row]).has_value()) {
        status = Status::InvalidArgument("id " + std::to_string(ids_[row]) + " appears twice");
        return;
      }
      id_map_.Add(ids_, row);
    }
  });
  const EntrySource all{codes, {}, 0};
  segment = Segment::Build(layout_, PrefixBitsFor(codes.size()), std::span(&all, 1), nullptr,
                           nullptr, {}, options_.build_threads);
  map_builder.join();
  if (!status.ok()) {
    ids_.clear();
    id_map_ = IdMap();
    return status;
  }
  id_map_ready_ = true;
  segments_ = {std::move(segment)};
  live_ = ids_.size();
  return Status::OK();
}

void PermutedTableIndex::Adopt(std::shared_ptr<const Segment> segment, std::vector<uint64_t> ids) {
  std::unique_lock lock(mutex_);
  ids_ = std::move(ids);
  live_ = ids_.size();
  segments_.clear();
  if (segment->size() > 0) segments_.push_back(std::move(segment));
  id_map_ready_ = false;  // built on the first Insert or Remove: opening stays O(file)
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
  id_map_.Add(ids_, row);
  buffer_.codes.push_back(fingerprint);
  buffer_.rows.push_back(row);
  ++live_;
  MaybeStartMerge(lock);
  return Status::OK();
}

Status PermutedTableIndex::Remove(uint64_t id) {
  std::unique_lock lock(mutex_);
  EnsureIdMap();
  const std::optional<uint32_t> row = id_map_.Find(ids_, id);
  if (!row.has_value()) return Status::NotFound("id " + std::to_string(id) + " is not in the index");
  id_map_.Erase(ids_, id);
  removed_.Add(*row);
  --live_;
  return Status::OK();
}

size_t PermutedTableIndex::MergeThreshold() const {
  return options_.merge_threshold > 0 ? options_.merge_threshold : kDefaultMergeThreshold;
}

void PermutedTableIndex::MaybeStartMerge(std::unique_lock<std::shared_mutex>& lock) {
  if (merge_running_ || buffer_.codes.size() < MergeThreshold()) return;
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

std::shared_ptr<const Segment> PermutedTableIndex::MergeInto(
    std::span<const std::shared_ptr<const Segment>> inputs, const WriteBuffer& buffer,
    const RowSet& removed, size_t live_estimate) const {
  std::vector<std::vector<EntrySource>> per_table(static_cast<size_t>(layout_.tables()));
  for (int t = 0; t < layout_.tables(); ++t) {
    for (const auto& segment : inputs) {
      per_table[t].push_back(EntrySource{segment->table(t).codes, segment->table(t).rows, 0});
    }
    per_table[t].push_back(EntrySource{buffer.codes, buffer.rows, 0});
  }
  return Segment::Build(layout_, PrefixBitsFor(live_estimate), {}, &per_table, &removed, {},
                        options_.background_merge ? 1 : options_.build_threads);
}

void PermutedTableIndex::MergeLoop(std::unique_lock<std::shared_mutex>& lock) {
  while (buffer_.codes.size() >= MergeThreshold()) {
    merging_ = std::make_shared<const WriteBuffer>(std::move(buffer_));
    buffer_ = WriteBuffer();
    const RowSet removed = removed_;
    // Merge into the delta segment, or everything into a new main segment when the delta grows big.
    size_t first_input = segments_.size();
    if (!segments_.empty()) {
      const size_t main = segments_.front()->size();
      const size_t delta = segments_.size() > 1 ? segments_.back()->size() : 0;
      first_input = (delta + merging_->codes.size()) * kDeltaRatio > main ? 0 : 1;
      first_input = std::min(first_input, segments_.size());
    }
    const std::vector<std::shared_ptr<const Segment>> inputs(segments_.begin() + first_input,
                                                             segments_.end());
    size_t entries = merging_->codes.size();
    for (const auto& segment : inputs) entries += segment->size();
    const auto frozen = merging_;
    if (options_.background_merge) lock.unlock();
    auto merged = MergeInto(inputs, *frozen, removed, entries);
    if (options_.background_merge) lock.lock();
    segments_.resize(first_input);
    if (merged->size() > 0) segments_.push_back(std::move(merged));
    merging_.reset();
    ++merges_;
  }
  merge_running_ = false;
}

Status PermutedTableIndex::Flush() {
  std::unique_lock lock(mutex_);
  while (merge_running_) {
    std::thread running = std::move(merger_);
    lock.unlock();
    if (running.joinable()) {
      running.join();
    } else {
      std::this_thread::yield();  // another Flush is joining it
    }
    lock.lock();
  }
  if (buffer_.codes.empty()) return Status::OK();
  // Merge what is left synchronously, whatever the threshold.
  merging_ = std::make_shared<const WriteBuffer>(std::move(buffer_));
  buffer_ = WriteBuffer();
  auto merged = MergeInto(segments_, *merging_, removed_, live_);
  segments_.clear();
  if (merged->size() > 0) segments_.push_back(std::move(merged));
  merging_.reset();
  ++merges_;
  return Status::OK();
}

void PermutedTableIndex::ScanBuffer(const WriteBuffer& buffer, uint64_t query, int k,
                                    std::vector<Match>* out, QueryStats* stats) const {
  if (buffer.codes.empty()) return;
  const TableView view{{}, buffer.codes, buffer.rows};
  Segment::ScanRange(view, 0, static_cast<uint32_t>(buffer.codes.size()), query, k,
                     [&](uint32_t position, uint64_t code) {
                       const uint32_t row = buffer.rows[position];
                       if (!removed_.Contains(row)) {
                         out->push_back(Match{ids_[row], std::popcount(code ^ query)});
                       }
                     });
  stats->candidates_verified += buffer.codes.size();
}

void PermutedTableIndex::QueryLocked(uint64_t query, int k, std::vector<Match>* out,
                                     QueryStats* stats) const {
  const size_t before = out->size();
  for (const auto& segment : segments_) {
    segment->Query(layout_, query, k, stats, [&](uint32_t row, int distance) {
      if (row < ids_.size() && !removed_.Contains(row)) out->push_back(Match{ids_[row], distance});
    });
  }
  if (merging_) ScanBuffer(*merging_, query, k, out, stats);
  ScanBuffer(buffer_, query, k, out, stats);
  ++stats->queries;
  stats->matches += out->size() - before;
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
  QueryStats stats;
  {
    std::shared_lock lock(mutex_);
    QueryLocked(fingerprint, k, &matches, &stats);
  }
  SortMatches(matches);
  RecordStats(stats);
  return matches;
}

Result<BatchResult> PermutedTableIndex::QueryBatch(std::span<const uint64_t> fingerprints, int k,
                                                   int threads) const {
  NEARDUP_RETURN_IF_ERROR(CheckK(k));
  std::shared_lock lock(mutex_);
  BatchResult result =
      RunBatch(fingerprints, threads, [&](uint64_t query, std::vector<Match>* out, QueryStats* stats) {
        QueryLocked(query, k, out, stats);
      });
  RecordStats(result.stats);
  return result;
}

IndexStats PermutedTableIndex::Stats() const {
  std::shared_lock lock(mutex_);
  IndexStats stats;
  stats.size = live_;
  stats.buffered = buffer_.codes.size() + (merging_ ? merging_->codes.size() : 0);
  stats.merges = merges_;
  stats.design = layout_.design().ToString();
  stats.max_exact_k = layout_.design().max_exact_k();
  uint64_t memory = ids_.capacity() * sizeof(uint64_t) + removed_.memory_bytes() +
                    id_map_.memory_bytes() +
                    buffer_.codes.capacity() * sizeof(uint64_t) +
                    buffer_.rows.capacity() * sizeof(uint32_t);
  for (const auto& segment : segments_) memory += segment->memory_bytes();
  if (merging_) memory += merging_->codes.capacity() * 12;
  stats.memory_bytes = memory;
  stats.queries.queries = total_queries_.load(std::memory_order_relaxed);
  stats.queries.tables_probed = total_probed_.load(std::memory_order_relaxed);
  stats.queries.candidates_verified = total_candidates_.load(std::memory_order_relaxed);
  stats.queries.matches = total_matches_.load(std::memory_order_relaxed);
  return stats;
}

std::shared_ptr<const Segment> PermutedTableIndex::Compacted(std::vector<uint64_t>* ids) const {
  std::shared_lock lock(mutex_);
  std::vector<uint32_t> remap(ids_.size(), IdMap::kEmpty);
  ids->clear();
  ids->reserve(live_);
  for (uint32_t row = 0; row < ids_.size(); ++row) {
    if (removed_.Contains(row)) continue;
    remap[row] = static_cast<uint32_t>(ids->size());
    ids->push_back(ids_[row]);
  }
  std::vector<std::vector<EntrySource>> per_table(static_cast<size_t>(layout_.tables()));
  for (int t = 0; t < layout_.tables(); ++t) {
    for (const auto& segment : segments_) {
      per_table[t].push_back(EntrySource{segment->table(t).codes, segment->table(t).rows, 0});
    }
    if (merging_) per_table[t].push_back(EntrySource{merging_->codes, merging_->rows, 0});
    per_table[t].push_back(EntrySource{buffer_.codes, buffer_.rows, 0});
  }
  return Segment::Build(layout_, PrefixBitsFor(live_), {}, &per_table, &removed_, remap,
                        options_.build_threads);
}

}  // namespace neardup::index_internal
