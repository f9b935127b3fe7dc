// BruteForceIndex: the reference. Fingerprints in one array (removal swaps in the last), queries
// scan it all with the SIMD kernels of neardup/hamming.h.
#include <mutex>
#include <shared_mutex>
#include <unordered_map>

#include "index/permuted_table_index.h"
#include "neardup/hamming.h"

namespace neardup {
namespace {

class BruteForceIndex final : public Index {
 public:
  Status Insert(uint64_t id, uint64_t fingerprint) override {
    std::unique_lock lock(mutex_);
    if (!position_.emplace(id, ids_.size()).second) {
      return Status::FailedPrecondition("id " + std::to_string(id) + " is already in the index");
    }
    ids_.push_back(id);
    codes_.push_back(fingerprint);
    return Status::OK();
  }

  Status Remove(uint64_t id) override {
    std::unique_lock lock(mutex_);
    auto it = position_.find(id);
    if (it == position_.end())
      return Status::NotFound("id " + std::to_string(id) + " is not in the index");
    const size_t position = it->second;
    position_.erase(it);
    if (position + 1 != ids_.size()) {
      ids_[position] = ids_.back();
      codes_[position] = codes_.back();
      position_[ids_[position]] = position;
    }
    ids_.pop_back();
    codes_.pop_back();
    return Status::OK();
  }

  Status Flush() override { return Status::OK(); }

  Result<std::vector<Match>> Query(uint64_t fingerprint, int k) const override {
    if (k < 0) return Status::InvalidArgument("k must not be negative");
    std::vector<Match> matches;
    QueryStats stats;
    std::shared_lock lock(mutex_);
    QueryLocked(fingerprint, k, &matches, &stats);
    index_internal::SortMatches(matches);
    return matches;
  }

  Result<BatchResult> QueryBatch(std::span<const uint64_t> fingerprints, int k,
                                 int threads) const override {
    if (k < 0) return Status::InvalidArgument("k must not be negative");
    std::shared_lock lock(mutex_);
    return index_internal::RunBatch(fingerprints, threads, 1,
                                    [&](std::span<const uint64_t> group, std::vector<Match>* out,
                                        std::vector<size_t>* counts, QueryStats* stats) {
                                      const size_t before = out->size();
                                      QueryLocked(group[0], k, out, stats);
                                      counts->push_back(out->size() - before);
                                    });
  }

  IndexStats Stats() const override {
    std::shared_lock lock(mutex_);
    IndexStats stats;
    stats.size = ids_.size();
    stats.memory_bytes = (ids_.capacity() + codes_.capacity()) * sizeof(uint64_t) +
                         position_.size() * 32 + position_.bucket_count() * sizeof(void*);
    stats.design = "brute force";
    stats.max_exact_k = 64;
    return stats;
  }

 private:
  void QueryLocked(uint64_t query, int k, std::vector<Match>* out, QueryStats* stats) const {
    std::vector<uint32_t> positions;
    FindWithin(codes_, query, k, &positions);
    for (uint32_t p : positions) out->push_back(Match{ids_[p], HammingDistance(codes_[p], query)});
    ++stats->queries;
    stats->candidates_verified += codes_.size();
    stats->matches += positions.size();
  }

  mutable std::shared_mutex mutex_;
  std::vector<uint64_t> ids_;
  std::vector<uint64_t> codes_;
  std::unordered_map<uint64_t, size_t> position_;
};

}  // namespace

std::unique_ptr<Index> NewBruteForceIndex() { return std::make_unique<BruteForceIndex>(); }

}  // namespace neardup
