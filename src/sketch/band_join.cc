// FindSimilarPairs: LSH band join with verification by the sketch (include/neardup/sketch.h).
#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstring>
#include <memory>
#include <thread>

#include "neardup/cpu.h"
#include "neardup/sketch.h"

namespace neardup {
namespace {

// The join compares documents whose keys share their top kPrefixBits bits (and then checks the
// whole key): two radix passes instead of four, and with random 32-bit keys few prefixes hold more
// than one key.
constexpr int kPrefixShift = 64 - 22;

// Sorts (key << 32 | document) values by the key's top 22 bits, stably (documents stay ascending
// within a prefix): least-significant-digit radix sort, two passes of 11 bits. `scratch` is resized
// to values' size.
void SortByKeyPrefix(std::vector<uint64_t>* values, std::vector<uint64_t>* scratch) {
  scratch->resize(values->size());
  for (int shift = kPrefixShift; shift < 64; shift += 11) {
    std::array<size_t, 2049> starts{};
    for (uint64_t v : *values) ++starts[((v >> shift) & 0x7FF) + 1];
    for (size_t i = 1; i < starts.size(); ++i) starts[i] += starts[i - 1];
    for (uint64_t v : *values) (*scratch)[starts[(v >> shift) & 0x7FF]++] = v;
    values->swap(*scratch);
  }
}

// Union-find over documents shared by the band threads, without locks (compare-and-swap on the
// parent links; a root is linked under the smaller root, paths are halved). Components only merge,
// so Connected() answering true is always right; a false answer racing with a merge only costs one
// verification.
class SharedComponents {
 public:
  explicit SharedComponents(size_t n) : parent_(n) {
    for (size_t i = 0; i < n; ++i)
      parent_[i].store(static_cast<uint32_t>(i), std::memory_order_relaxed);
  }

  bool Connected(uint32_t a, uint32_t b) {
    while (true) {
      a = Find(a);
      b = Find(b);
      if (a == b) return true;
      if (parent_[a].load(std::memory_order_acquire) == a) return false;
    }
  }

  void Unite(uint32_t a, uint32_t b) {
    while (true) {
      a = Find(a);
      b = Find(b);
      if (a == b) return;
      if (a < b) std::swap(a, b);
      uint32_t expected = a;
      if (parent_[a].compare_exchange_strong(expected, b, std::memory_order_acq_rel)) return;
    }
  }

 private:
  uint32_t Find(uint32_t x) {
    while (true) {
      uint32_t parent = parent_[x].load(std::memory_order_acquire);
      if (parent == x) return x;
      const uint32_t grandparent = parent_[parent].load(std::memory_order_acquire);
      if (grandparent != parent) {
        parent_[x].compare_exchange_weak(parent, grandparent, std::memory_order_acq_rel,
                                         std::memory_order_relaxed);
      }
      x = grandparent;
    }
  }

  std::vector<std::atomic<uint32_t>> parent_;
};

struct BandWork {
  const Sketcher& sketcher;
  std::span<const uint32_t> band_keys;
  std::span<const uint8_t> sketches;
  size_t bands;
  size_t documents;
  double threshold;
  const BoundaryMargins* margins;  // all pairs: estimates within them of the threshold: boundary
  SharedComponents* components;    // null: every candidate is verified
  size_t exact_capacity;
};

// The pairs verified in band j: those sharing no earlier band key (all pairs), or those not yet
// connected (clustering).
void JoinBand(const BandWork& w, size_t j, std::vector<uint64_t>* values,
              std::vector<uint64_t>* scratch, std::vector<SimilarPair>* out,
              std::vector<SimilarPair>* boundary, BandJoinStats* stats) {
  values->resize(w.documents);
  for (size_t d = 0; d < w.documents; ++d) {
    (*values)[d] = (uint64_t{w.band_keys[d * w.bands + j]} << 32) | d;
  }
  SortByKeyPrefix(values, scratch);
  // Counted locally: the threads' BandJoinStats are neighbours in memory (shared cache lines).
  BandJoinStats local;
  const size_t bytes = w.sketcher.sketch_bytes();
  const auto& v = *values;
  for (size_t start = 0; start < v.size();) {
    size_t end = start + 1;
    while (end < v.size() && (v[end] >> kPrefixShift) == (v[start] >> kPrefixShift)) ++end;
    for (size_t x = start; x + 1 < end; ++x) {
      const auto a = static_cast<uint32_t>(v[x]);
      for (size_t y = x + 1; y < end; ++y) {
        if ((v[y] >> 32) != (v[x] >> 32)) continue;  // another key with the same prefix
        const auto b = static_cast<uint32_t>(v[y]);
        ++local.band_collisions;
        if (w.components == nullptr) {
          // Every pair once: in the first band whose key both documents share.
          const uint32_t* keys_a = &w.band_keys[a * w.bands];
          const uint32_t* keys_b = &w.band_keys[b * w.bands];
          bool earlier = false;
          for (size_t e = 0; e < j && !earlier; ++e) earlier = keys_a[e] == keys_b[e];
          if (earlier) continue;
        } else if (w.components->Connected(a, b)) {
          // Clustering: a pair sharing several bands is connected after its first verification, and
          // looking up the earlier bands' keys (two random cache lines) costs more than the rare
          // second verification of a dissimilar pair.
          ++local.connected;
          continue;
        }
        ++local.candidates;
        const uint8_t* sketch_a = &w.sketches[a * bytes];
        const uint8_t* sketch_b = &w.sketches[b * bytes];
        const uint32_t count_a = SketchFeatureCount(sketch_a),
                       count_b = SketchFeatureCount(sketch_b);
        // J <= |A| / |B|, the exact Jaccard too: below the threshold, not even a boundary pair
        // (without margins, EstimateIfAtLeast rejects the pair by the same bound).
        if (w.margins != nullptr &&
            static_cast<double>(std::min(count_a, count_b)) / std::max(count_a, count_b) <
                w.threshold) {
          continue;
        }
        const bool exact = count_a <= w.exact_capacity && count_b <= w.exact_capacity;
        const double margin = w.margins == nullptr || exact ? 0 : (*w.margins)(count_a, count_b);
        const double lowest = w.threshold - margin;
        const double jaccard = w.sketcher.EstimateIfAtLeast(sketch_a, sketch_b, lowest);
        if (jaccard < lowest) continue;
        if (margin > 0 && jaccard < w.threshold + margin) {
          boundary->push_back({a, b, static_cast<float>(jaccard)});
          continue;
        }
        if (jaccard < w.threshold) continue;
        out->push_back({a, b, static_cast<float>(jaccard)});
        if (w.components != nullptr) w.components->Unite(a, b);
      }
    }
    start = end;
  }
  local.pairs = out->size();
  *stats = local;
}

}  // namespace

double EstimateSpread(const SketchOptions& sketch, double threshold, uint64_t features_a,
                      uint64_t features_b) {
  const double t = std::clamp(threshold, 0.0, 1.0);
  const double chance = std::ldexp(1.0, -sketch.bits_per_bin);
  const double p = t + (1 - t) * chance;
  const double union_at_threshold = static_cast<double>(features_a + features_b) / (1 + t);
  const double bins = std::clamp(union_at_threshold, 1.0, static_cast<double>(sketch.bins));
  return std::sqrt(p * (1 - p) / bins) / (1 - chance);
}

BoundaryMargins::BoundaryMargins(const SketchOptions& sketch, double threshold, double z) {
  const double t = std::clamp(threshold, 0.0, 1.0);
  // Unions of at least bins * (1 + t) features have the spread of the full sketch.
  const auto full = static_cast<size_t>(std::ceil(sketch.bins * (1 + t)));
  by_union_.resize(full);
  for (size_t size = 0; size < full; ++size)
    by_union_[size] = z * EstimateSpread(sketch, t, size, 0);
  largest_sets_ = z * EstimateSpread(sketch, t, full, 0);
}

Result<std::vector<SimilarPair>> FindSimilarPairs(const Sketcher& sketcher,
                                                  std::span<const uint32_t> band_keys,
                                                  std::span<const uint8_t> sketches,
                                                  const BandJoinOptions& options,
                                                  BandJoinStats* stats,
                                                  std::vector<SimilarPair>* boundary) {
  const auto bands = static_cast<size_t>(sketcher.options().bands);
  const size_t bytes = sketcher.sketch_bytes();
  if (band_keys.size() % bands != 0 || sketches.size() % bytes != 0 ||
      band_keys.size() / bands != sketches.size() / bytes) {
    return Status::InvalidArgument("band keys (" + std::to_string(band_keys.size()) +
                                   ") and sketches (" + std::to_string(sketches.size()) +
                                   " bytes) do not describe the same documents");
  }
  const size_t documents = band_keys.size() / bands;
  if (documents >= UINT32_MAX) return Status::InvalidArgument("too many documents for one join");
  if (!(options.threshold >= -1 && options.threshold <= 1)) {
    return Status::InvalidArgument("threshold must be in [-1, 1], got " +
                                   std::to_string(options.threshold));
  }
  if (options.boundary_sigmas < 0 ||
      (options.boundary_sigmas > 0 && (boundary == nullptr || !options.all_pairs))) {
    return Status::InvalidArgument(
        "boundary pairs need every pair (all_pairs) and a list to receive them");
  }
  std::unique_ptr<BoundaryMargins> margins;
  if (options.boundary_sigmas > 0) {
    margins = std::make_unique<BoundaryMargins>(sketcher.options(), options.threshold,
                                                options.boundary_sigmas);
  }
  std::unique_ptr<SharedComponents> components;
  if (!options.all_pairs) components = std::make_unique<SharedComponents>(documents);
  const BandWork work{sketcher,      band_keys,        sketches,
                      bands,         documents,        options.threshold,
                      margins.get(), components.get(), sketcher.exact_capacity()};
  std::vector<std::vector<SimilarPair>> found(bands), found_boundary(bands);
  std::vector<BandJoinStats> band_stats(bands);
  std::atomic<size_t> next_band{0};
  auto worker = [&] {
    std::vector<uint64_t> values, scratch;
    for (size_t j = next_band++; j < bands; j = next_band++) {
      JoinBand(work, j, &values, &scratch, &found[j], &found_boundary[j], &band_stats[j]);
    }
  };
  const int threads = std::clamp(ResolveThreads(options.threads), 1, static_cast<int>(bands));
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();

  size_t total = 0;
  for (const auto& f : found) total += f.size();
  std::vector<SimilarPair> pairs;
  pairs.reserve(total);
  for (auto& f : found) {
    pairs.insert(pairs.end(), f.begin(), f.end());
    std::vector<SimilarPair>().swap(f);
  }
  std::sort(pairs.begin(), pairs.end(), [](const SimilarPair& x, const SimilarPair& y) {
    return x.first != y.first ? x.first < y.first : x.second < y.second;
  });
  if (components != nullptr) {
    // Two threads may have verified the same pair in different bands at the same time.
    pairs.erase(std::unique(pairs.begin(), pairs.end(),
                            [](const SimilarPair& x, const SimilarPair& y) {
                              return x.first == y.first && x.second == y.second;
                            }),
                pairs.end());
  }
  if (margins != nullptr) {
    boundary->clear();
    for (auto& f : found_boundary) boundary->insert(boundary->end(), f.begin(), f.end());
    std::sort(boundary->begin(), boundary->end(), [](const SimilarPair& x, const SimilarPair& y) {
      return x.first != y.first ? x.first < y.first : x.second < y.second;
    });
  }
  if (stats != nullptr) {
    *stats = {};
    for (const auto& s : band_stats) {
      stats->band_collisions += s.band_collisions;
      stats->candidates += s.candidates;
      stats->connected += s.connected;
    }
    stats->pairs = pairs.size();
  }
  return pairs;
}

}  // namespace neardup
