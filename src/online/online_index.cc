// The online index of neardup/online_index.h: one class for both methods. Rows number the inserts
// (0, 1, ...); a row keeps its id (IdIndex), fingerprint, and for kAccurate its sketch in a chunked
// arena and its band keys in BandTables; for kSimhash the fingerprint is in a PermutedTableIndex
// under the row as its id. Removed rows stay as tombstones (their id is unlinked). Save and Load
// write and read this state as it is (online/index_snapshot.h).
#include "neardup/online_index.h"

#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>
#include <shared_mutex>

#include "neardup/index.h"
#include "online/band_tables.h"
#include "online/document_id.h"
#include "online/id_index.h"
#include "online/index_snapshot.h"
#include "online/sketch_arena.h"

namespace neardup {

OnlineQueryStats& OnlineQueryStats::operator+=(const OnlineQueryStats& other) {
  queries += other.queries;
  lookups += other.lookups;
  candidates += other.candidates;
  matches += other.matches;
  return *this;
}

namespace {

using online_internal::BandTables;
using online_internal::CheckId;
using online_internal::IdIndex;
using online_internal::IndexCounters;
using online_internal::PrintableId;
using online_internal::RestoredIndex;
using online_internal::RowBits;
using online_internal::SketchArena;

constexpr uint32_t kMaxRows = 0xFFFFFFFEu;

class OnlineIndexImpl final : public OnlineIndex {
 public:
  OnlineIndexImpl(std::unique_ptr<DocumentSigner> signer, std::unique_ptr<Index> simhash_index,
                  std::unique_ptr<SketchArena> sketches)
      : signer_(std::move(signer)),
        accurate_(signer_->method() == DedupMethod::kAccurate),
        sketch_bytes_(signer_->sketch_bytes()),
        bands_(accurate_ ? std::make_unique<BandTables>(signer_->bands()) : nullptr),
        simhash_index_(std::move(simhash_index)),
        sketches_(std::move(sketches)) {}

  // The index of a snapshot's state; for kSimhash, simhash_index holds its live rows.
  OnlineIndexImpl(std::unique_ptr<DocumentSigner> signer, std::unique_ptr<Index> simhash_index,
                  RestoredIndex state)
      : signer_(std::move(signer)),
        accurate_(signer_->method() == DedupMethod::kAccurate),
        sketch_bytes_(signer_->sketch_bytes()),
        bands_(std::move(state.bands)),
        simhash_index_(std::move(simhash_index)),
        sketches_(std::move(state.sketches)),
        ids_(std::move(state.ids)),
        simhashes_(std::move(state.simhashes)),
        removed_(std::move(state.removed)),
        empty_(std::move(state.empty)),
        live_(state.counters.live),
        empty_live_(state.counters.empty_live),
        inserts_(state.counters.inserts),
        removes_(state.counters.removes) {
    query_counts_[0] = state.counters.queries.queries;
    query_counts_[1] = state.counters.queries.lookups;
    query_counts_[2] = state.counters.queries.candidates;
    query_counts_[3] = state.counters.queries.matches;
  }

  void Reserve(uint64_t documents) {
    if (documents == 0 || documents > kMaxRows) return;
    ids_.Reserve(documents, 16);
    simhashes_.reserve(documents);
  }

  const DocumentSigner& signer() const override { return *signer_; }

  Status Insert(std::string_view id, std::string_view text) override {
    NEARDUP_RETURN_IF_ERROR(CheckId(id));
    auto signature = signer_->Sign(text);
    if (!signature.ok()) return signature.status();
    return InsertSigned(id, *signature);
  }

  Status InsertSigned(std::string_view id, const Signature& signature) override {
    NEARDUP_RETURN_IF_ERROR(CheckId(id));
    NEARDUP_RETURN_IF_ERROR(CheckSignature(signature));
    std::unique_lock lock(mutex_);
    return InsertLocked(id, signature);
  }

  Status InsertAll(const std::function<Result<bool>(std::string*, Signature*)>& next,
                   uint64_t size_hint) override {
    std::unique_lock lock(mutex_);
    const auto first = static_cast<uint32_t>(simhashes_.size());
    std::vector<uint32_t> keys;
    std::vector<uint8_t> present;
    const size_t bands = signer_->bands();
    if (accurate_ && size_hint > 0 && size_hint <= kMaxRows) {
      keys.reserve(size_hint * bands);
      present.reserve(size_hint);
    }
    std::string id;
    Signature signature;
    Status status;
    for (uint64_t number = 0;; ++number) {
      auto more = next(&id, &signature);
      if (!more.ok()) {
        status = more.status();
        break;
      }
      if (!*more) break;
      status = CheckId(id);
      if (status.ok()) status = CheckSignature(signature);
      std::optional<IdIndex::Placement> placement;
      if (status.ok() && simhashes_.size() >= kMaxRows)
        status = Status::ResourceExhausted("the index holds 2^32 - 2 inserts");
      if (status.ok()) {
        placement = ids_.PlaceFor(id);
        if (!placement)
          status = Status::FailedPrecondition("id '" + PrintableId(id) + "' is already stored");
      }
      if (!status.ok()) {
        status = status.WithContext("document " + std::to_string(number + 1) + " of the load");
        break;
      }
      status = AppendRowLocked(id, signature, &*placement);
      if (!status.ok()) break;
      if (accurate_) {
        present.push_back(signature.empty ? 0 : 1);
        if (signature.empty) {
          keys.resize(keys.size() + bands);
        } else {
          keys.insert(keys.end(), signature.band_keys.begin(), signature.band_keys.end());
        }
      }
    }
    if (accurate_ && !present.empty()) bands_->AddAll(first, keys, present, removed_);
    return status;
  }

  Status Remove(std::string_view id) override {
    std::unique_lock lock(mutex_);
    auto row = ids_.Find(id);
    if (!row) return Status::NotFound("no document with id '" + PrintableId(id) + "'");
    ids_.Unlink(*row);
    removed_.Add(*row);
    if (empty_.Contains(*row)) {
      --empty_live_;
    } else if (!accurate_) {
      NEARDUP_RETURN_IF_ERROR(simhash_index_->Remove(*row));
    }
    --live_;
    ++removes_;
    return Status::OK();
  }

  Result<std::vector<OnlineMatch>> Query(std::string_view text) const override {
    auto signature = signer_->Sign(text);
    if (!signature.ok()) return signature.status();
    return QuerySigned(*signature, nullptr);
  }

  Result<std::vector<OnlineMatch>> QuerySigned(const Signature& signature,
                                               OnlineQueryStats* stats) const override {
    NEARDUP_RETURN_IF_ERROR(CheckSignature(signature));
    std::shared_lock lock(mutex_);
    OnlineQueryStats local;
    auto matches = QueryLocked(signature, &local);
    if (!matches.ok()) return matches.status();
    RecordStats(local);
    if (stats != nullptr) *stats += local;
    return matches;
  }

  Result<QueryAndInsertResult> QueryAndInsert(std::string_view id, std::string_view text,
                                              InsertPolicy policy) override {
    NEARDUP_RETURN_IF_ERROR(CheckId(id));
    auto signature = signer_->Sign(text);
    if (!signature.ok()) return signature.status();
    return QueryAndInsertSigned(id, *signature, policy);
  }

  Result<QueryAndInsertResult> QueryAndInsertSigned(std::string_view id, const Signature& signature,
                                                    InsertPolicy policy) override {
    NEARDUP_RETURN_IF_ERROR(CheckId(id));
    NEARDUP_RETURN_IF_ERROR(CheckSignature(signature));
    std::unique_lock lock(mutex_);
    NEARDUP_RETURN_IF_ERROR(CheckNewRowLocked(id));
    QueryAndInsertResult result;
    OnlineQueryStats local;
    auto matches = QueryLocked(signature, &local);
    if (!matches.ok()) return matches.status();
    RecordStats(local);
    result.matches = std::move(*matches);
    if (policy == InsertPolicy::kAlways || result.matches.empty()) {
      NEARDUP_RETURN_IF_ERROR(InsertLocked(id, signature));
      result.inserted = true;
    }
    return result;
  }

  bool Contains(std::string_view id) const override {
    std::shared_lock lock(mutex_);
    return ids_.Find(id).has_value();
  }

  Result<Signature> Get(std::string_view id) const override {
    std::shared_lock lock(mutex_);
    auto row = ids_.Find(id);
    if (!row) return Status::NotFound("no document with id '" + PrintableId(id) + "'");
    Signature signature;
    NEARDUP_RETURN_IF_ERROR(FillSignature(*row, &signature));
    if (accurate_ && !signature.empty) bands_->KeysOf(*row, signature.band_keys);
    return signature;
  }

  Status ForEach(const std::function<void(std::string_view, const Signature&)>& fn) const override {
    std::shared_lock lock(mutex_);
    std::vector<uint32_t> keys;
    const size_t bands = signer_->bands();
    if (accurate_) {
      keys.assign(simhashes_.size() * bands, 0);
      bands_->KeysOfAll(keys);
    }
    Signature signature;
    for (uint32_t row = 0; row < simhashes_.size(); ++row) {
      if (removed_.Contains(row)) continue;
      NEARDUP_RETURN_IF_ERROR(FillSignature(row, &signature));
      if (accurate_ && !signature.empty) {
        std::copy_n(keys.begin() + static_cast<std::ptrdiff_t>(row * bands), bands,
                    signature.band_keys.begin());
      }
      fn(ids_.id(row), signature);
    }
    return Status::OK();
  }

  OnlineIndexStats Stats() const override {
    std::shared_lock lock(mutex_);
    OnlineIndexStats stats;
    stats.documents = live_;
    stats.empty_documents = empty_live_;
    stats.inserts = inserts_;
    stats.removes = removes_;
    stats.settings = signer_->settings();
    stats.memory_bytes = ids_.memory_bytes() + simhashes_.capacity() * sizeof(uint64_t) +
                         removed_.memory_bytes() + empty_.memory_bytes();
    if (sketches_ != nullptr) stats.memory_bytes += sketches_->memory_bytes();
    if (accurate_) stats.memory_bytes += bands_->memory_bytes();
    if (simhash_index_ != nullptr) stats.memory_bytes += simhash_index_->Stats().memory_bytes;
    stats.queries = QueryCounts();
    return stats;
  }

  // The simhash index is left out: its tables are built again at Load (and its background merges
  // may hold its lock, in a child of fork() too).
  Status Save(OutputFile* out) const override {
    std::shared_lock lock(mutex_);
    online_internal::IndexView view;
    view.signer = signer_.get();
    view.ids = &ids_;
    view.simhashes = &simhashes_;
    view.removed = &removed_;
    view.empty = &empty_;
    view.bands = bands_.get();
    view.sketches = sketches_.get();
    view.counters = IndexCounters{live_, empty_live_, inserts_, removes_, QueryCounts()};
    return online_internal::WriteSnapshot(view, out);
  }

 private:
  Status CheckSignature(const Signature& signature) const {
    if (signature.sketch.size() != sketch_bytes_ ||
        signature.band_keys.size() != signer_->bands()) {
      return Status::InvalidArgument(
          "the signature has a sketch of " + std::to_string(signature.sketch.size()) +
          " bytes and " + std::to_string(signature.band_keys.size()) +
          " band keys; this index's method needs " + std::to_string(sketch_bytes_) + " and " +
          std::to_string(signer_->bands()));
    }
    return Status::OK();
  }

  Status FillSignature(uint32_t row, Signature* signature) const {
    signature->simhash = simhashes_[row];
    signature->empty = empty_.Contains(row);
    signature->sketch.assign(sketch_bytes_, 0);
    signature->band_keys.assign(signer_->bands(), 0);
    if (accurate_ && !signature->empty) {
      Status error;
      const uint8_t* sketch = sketches_->Read(row, signature->sketch.data(), &error);
      if (sketch == nullptr) return error;
      if (sketch != signature->sketch.data())
        std::copy_n(sketch, sketch_bytes_, signature->sketch.begin());
    }
    return Status::OK();
  }

  // FailedPrecondition when the id is stored, ResourceExhausted when no row is left.
  Status CheckNewRowLocked(std::string_view id) const {
    if (ids_.Find(id))
      return Status::FailedPrecondition("id '" + PrintableId(id) + "' is already stored");
    if (simhashes_.size() >= kMaxRows)
      return Status::ResourceExhausted("the index holds 2^32 - 2 inserts");
    return Status::OK();
  }

  Status InsertLocked(std::string_view id, const Signature& signature) {
    NEARDUP_RETURN_IF_ERROR(CheckNewRowLocked(id));
    const auto row = static_cast<uint32_t>(simhashes_.size());
    NEARDUP_RETURN_IF_ERROR(AppendRowLocked(id, signature));
    if (accurate_ && !signature.empty) {
      bands_->Add(row, signature.band_keys);
      if (bands_->ShouldMerge()) bands_->Merge(removed_);
    }
    return Status::OK();
  }

  // Stores the next row: its id, fingerprint, and sketch (kAccurate) or table entry (kSimhash). The
  // band keys are the caller's to add. The id is new and there is room for the row; `placement`,
  // when given, is where PlaceFor() found the id's slot.
  Status AppendRowLocked(std::string_view id, const Signature& signature,
                         const IdIndex::Placement* placement = nullptr) {
    const auto row = static_cast<uint32_t>(simhashes_.size());
    if (signature.empty) {
      empty_.Add(row);
      ++empty_live_;
    } else if (accurate_) {
      NEARDUP_RETURN_IF_ERROR(sketches_->Append(row, signature.sketch.data()));
    } else {
      NEARDUP_RETURN_IF_ERROR(simhash_index_->Insert(row, signature.simhash));
    }
    simhashes_.push_back(signature.simhash);
    if (placement != nullptr) {
      ids_.AppendAt(id, *placement);
    } else {
      ids_.Append(id);
      ids_.Link(row);
    }
    ++live_;
    ++inserts_;
    return Status::OK();
  }

  Result<std::vector<OnlineMatch>> QueryLocked(const Signature& signature,
                                               OnlineQueryStats* stats) const {
    ++stats->queries;
    std::vector<OnlineMatch> out;
    if (signature.empty) return out;
    if (!accurate_) {
      auto batch =
          simhash_index_->QueryBatch(std::span(&signature.simhash, 1), signer_->options().k, 1);
      if (!batch.ok()) return batch.status();
      for (const Match& m : batch->matches) {
        out.push_back(
            {std::string(ids_.id(static_cast<uint32_t>(m.id))), static_cast<double>(m.distance)});
      }
      stats->lookups += batch->stats.tables_probed;
      stats->candidates += batch->stats.candidates_verified;
      stats->matches += out.size();
      // Ascending distance, ties by id.
      std::stable_sort(out.begin(), out.end(), [](const OnlineMatch& a, const OnlineMatch& b) {
        return a.score != b.score ? a.score < b.score : a.id < b.id;
      });
      return out;
    }
    thread_local std::vector<uint32_t> candidates;
    candidates.clear();
    for (size_t j = 0; j < signature.band_keys.size(); ++j) {
      bands_->ForEachRow(j, signature.band_keys[j],
                         [&](uint32_t row) { candidates.push_back(row); });
    }
    stats->lookups += signature.band_keys.size();
    std::sort(candidates.begin(), candidates.end());
    candidates.erase(std::unique(candidates.begin(), candidates.end()), candidates.end());
    const Sketcher& sketcher = *signer_->sketcher();
    const double threshold = signer_->options().threshold;
    thread_local std::vector<uint8_t> scratch;
    scratch.resize(sketch_bytes_);
    for (uint32_t row : candidates) {
      if (removed_.Contains(row)) continue;
      ++stats->candidates;
      Status error;
      const uint8_t* stored = sketches_->Read(row, scratch.data(), &error);
      if (stored == nullptr) return error;
      const double jaccard = sketcher.EstimateIfAtLeast(signature.sketch.data(), stored, threshold);
      if (jaccard >= threshold) out.push_back({std::string(ids_.id(row)), jaccard});
    }
    stats->matches += out.size();
    std::sort(out.begin(), out.end(), [](const OnlineMatch& a, const OnlineMatch& b) {
      return a.score != b.score ? a.score > b.score : a.id < b.id;
    });
    return out;
  }

  OnlineQueryStats QueryCounts() const {
    OnlineQueryStats counts;
    counts.queries = query_counts_[0].load(std::memory_order_relaxed);
    counts.lookups = query_counts_[1].load(std::memory_order_relaxed);
    counts.candidates = query_counts_[2].load(std::memory_order_relaxed);
    counts.matches = query_counts_[3].load(std::memory_order_relaxed);
    return counts;
  }

  // Counters, not a lock: every query adds to them, from many threads at once.
  void RecordStats(const OnlineQueryStats& stats) const {
    query_counts_[0].fetch_add(stats.queries, std::memory_order_relaxed);
    query_counts_[1].fetch_add(stats.lookups, std::memory_order_relaxed);
    query_counts_[2].fetch_add(stats.candidates, std::memory_order_relaxed);
    query_counts_[3].fetch_add(stats.matches, std::memory_order_relaxed);
  }

  const std::unique_ptr<DocumentSigner> signer_;
  const bool accurate_;
  const size_t sketch_bytes_;
  const std::unique_ptr<BandTables> bands_;      // kAccurate
  const std::unique_ptr<Index> simhash_index_;   // kSimhash
  const std::unique_ptr<SketchArena> sketches_;  // kAccurate

  mutable std::shared_mutex mutex_;
  IdIndex ids_;
  std::vector<uint64_t> simhashes_;  // by row
  RowBits removed_;
  RowBits empty_;
  uint64_t live_ = 0, empty_live_ = 0, inserts_ = 0, removes_ = 0;

  // OnlineQueryStats' queries, lookups, candidates, matches.
  mutable std::atomic<uint64_t> query_counts_[4] = {};
};

}  // namespace

Result<std::unique_ptr<OnlineIndex>> OnlineIndex::Create(const OnlineIndexOptions& options) {
  auto signer = DocumentSigner::Create(options.method);
  if (!signer.ok()) return signer.status();
  std::unique_ptr<Index> simhash_index;
  if ((*signer)->method() == DedupMethod::kSimhash) {
    IndexOptions index_options;
    index_options.max_k = (*signer)->options().k;
    index_options.expected_size = options.expected_documents;
    auto index = NewPermutedTableIndex(index_options);
    if (!index.ok()) return index.status();
    simhash_index = std::move(*index);
  }
  std::unique_ptr<SketchArena> sketches;
  if ((*signer)->method() == DedupMethod::kAccurate) {
    auto arena = SketchArena::Create((*signer)->sketch_bytes(), options.sketch_directory);
    if (!arena.ok()) return arena.status();
    sketches = std::move(*arena);
  }
  auto index = std::make_unique<OnlineIndexImpl>(std::move(*signer), std::move(simhash_index),
                                                 std::move(sketches));
  index->Reserve(options.expected_documents);
  return std::unique_ptr<OnlineIndex>(std::move(index));
}

Result<std::unique_ptr<OnlineIndex>> OnlineIndex::Load(const std::string& path,
                                                       const OnlineIndexOptions& options) {
  auto signer = DocumentSigner::Create(options.method);
  if (!signer.ok()) return signer.status();
  auto state = online_internal::ReadSnapshot(path, **signer, options.sketch_directory);
  if (!state.ok()) return state.status();
  std::unique_ptr<Index> simhash_index;
  if ((*signer)->method() == DedupMethod::kSimhash) {
    // The permuted tables of the live documents with features, under their rows.
    std::vector<uint64_t> rows, codes;
    for (uint32_t row = 0; row < state->simhashes.size(); ++row) {
      if (state->removed.Contains(row) || state->empty.Contains(row)) continue;
      rows.push_back(row);
      codes.push_back(state->simhashes[row]);
    }
    IndexOptions index_options;
    index_options.max_k = (*signer)->options().k;
    index_options.expected_size = std::max<uint64_t>(options.expected_documents, rows.size());
    auto index = BuildPermutedTableIndex(rows, codes, index_options);
    if (!index.ok()) return index.status().WithContext(path);
    simhash_index = std::move(*index);
  }
  return std::unique_ptr<OnlineIndex>(std::make_unique<OnlineIndexImpl>(
      std::move(*signer), std::move(simhash_index), std::move(*state)));
}

}  // namespace neardup
