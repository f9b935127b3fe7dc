// A small per-document sketch that estimates Jaccard similarity, and LSH band keys that find the
// pairs worth estimating (doc/candidates.md gives the design and the math; doc/fingerprint.md the
// format).
//
// Both come from a document's distinct feature hashes (FingerprintBuilder::DistinctFeatureHashes
// with FeatureWeighting::kDistinct), through their top 23 bits t, by one-permutation MinHash:
//   - bin of t: its top log2(bins) bits; value: Remix(t) (the splitmix64 finaliser);
//   - every bin keeps the minimum value of its hashes;
//   - densification: an empty bin b takes the minimum m of the first non-empty bin b + s
//     (s = 1, 2, ... cyclically); every bin's final value is v_b = Remix(m + s) (s = 0 when
//     the bin is not empty);
//   - band j (of `bands`) hashes the full 64-bit v of its `rows` bins into a 32-bit key; its
//     bins are spread over the sketch: bin (i * bands + j) * (bins / (bands * rows)) for row i.
// The stored sketch is a 4-byte count of the distinct features, then a payload of bins *
// bits_per_bin / 8 bytes: for a document of at most payload bits / 23 features (44 by default) the
// sorted t themselves (exact form: two such documents get their exact Jaccard similarity),
// otherwise the low bits_per_bin bits of each v_b. Two documents with Jaccard similarity J agree on
// each bin with probability about J, so on a band key with probability about J^rows; the estimate
// corrects the chance agreement of b-bit values, (matches / bins - 2^-b) / (1 - 2^-b), and is
// capped by the bound J <= smaller count / larger count. doc/fingerprint.md, section 9, is the
// byte-exact definition.
//
// Thread safety: a Sketcher is immutable after Create() and may be shared by threads.
// Estimate() uses the SIMD level in effect at Create() (neardup/cpu.h); results do not depend on
// it.
#ifndef NEARDUP_SKETCH_H_
#define NEARDUP_SKETCH_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "neardup/simhash.h"
#include "neardup/status.h"

namespace neardup {

// Version of the sketch definition above (doc/fingerprint.md, "Sketch"); stored sketches of another
// version must be recomputed.
inline constexpr uint32_t kSketchVersion = 1;

struct SketchOptions {
  // Bins: a power of two, 64..4096. Bits kept per bin: 1, 2, 4, 8, 16 or 32. The default payload is
  // 128 bytes: for a fixed size, more bins of fewer bits estimate Jaccard near 0.8 better
  // (doc/candidates.md).
  int bins = 1024;
  int bits_per_bin = 1;
  // LSH banding (bands * rows <= bins, bands <= 64). ChooseRows() picks the rows for a threshold
  // and a number of bands.
  int bands = 20;
  int rows = 6;
};

// The probability that two documents of Jaccard similarity `jaccard` share at least one of `bands`
// band keys of `rows` bins: 1 - (1 - J^rows)^bands (bins taken as independent).
double BandCollisionProbability(double jaccard, int bands, int rows);

// The most rows (so the fewest chance candidates) for which a pair at Jaccard `threshold` shares a
// band key with probability >= target_recall. InvalidArgument for a threshold outside (0, 1], bands
// outside 1..64 or target_recall outside (0, 1). The default design: threshold 0.8, 20 bands -> 6
// rows (0.9977).
Result<int> ChooseRows(double threshold, int bands = 20, double target_recall = 0.995);

// The defaults of the accurate design (doc/candidates.md): character 5-grams of the token stream,
// each distinct feature once, Traditional Chinese folded to Simplified; the sketch options above.
FingerprintOptions AccurateFingerprintOptions();

// OK when Sketcher::Create takes the options (rows resolved, not 0), else InvalidArgument naming
// the bad option.
Status CheckSketchOptions(const SketchOptions& options);

class Sketcher {
 public:
  // InvalidArgument naming the bad option (CheckSketchOptions).
  static Result<std::unique_ptr<Sketcher>> Create(const SketchOptions& options);

  virtual ~Sketcher() = default;

  // Bytes of one stored sketch: 4 + bins * bits_per_bin / 8 (132 with the defaults).
  virtual size_t sketch_bytes() const = 0;
  // Documents with at most this many distinct features are stored in exact form (44 by default).
  virtual size_t exact_capacity() const = 0;
  virtual const SketchOptions& options() const = 0;

  // Writes the sketch of the set `feature_hashes` to `sketch` and its band keys to `band_keys`. The
  // hashes must be distinct (their number is stored as the set's size); their order does not
  // matter. InvalidArgument when sketch.size() != sketch_bytes() or band_keys.size() != bands. An
  // empty set gives an all-zero sketch and all-zero band keys.
  virtual Status Compute(std::span<const uint64_t> feature_hashes, std::span<uint8_t> sketch,
                         std::span<uint32_t> band_keys) const = 0;

  // Estimated Jaccard similarity (in [-1, 1]; below 0 when fewer bins agree than by chance) of two
  // sketches of sketch_bytes() bytes each (unchecked: the hot path of the join; EstimateJaccard
  // checks). Exact when both are in exact form; 1 for two empty sets, 0 for one.
  virtual double Estimate(const uint8_t* a, const uint8_t* b) const = 0;

  // Estimate(a, b) when it is >= threshold, else some value below threshold: a cheaper test for the
  // band join (the size bound first; sketches of wider bins stop comparing once too many disagree).
  virtual double EstimateIfAtLeast(const uint8_t* a, const uint8_t* b, double threshold) const = 0;

  // Estimate() of two stored sketches. InvalidArgument when a span is not sketch_bytes() long.
  Result<double> EstimateJaccard(std::span<const uint8_t> a, std::span<const uint8_t> b) const;
};

// The number of distinct features a stored sketch was made from: its first 4 bytes (little-endian,
// as the sketch format stores it). At most Sketcher::exact_capacity(): the sketch is in exact form.
inline uint32_t SketchFeatureCount(const uint8_t* sketch) {
  return uint32_t{sketch[0]} | uint32_t{sketch[1]} << 8 | uint32_t{sketch[2]} << 16 |
         uint32_t{sketch[3]} << 24;
}

// A pair of documents (positions, first < second) found similar, with its estimated Jaccard.
struct SimilarPair {
  uint32_t first = 0;
  uint32_t second = 0;
  float jaccard = 0;

  friend bool operator==(const SimilarPair&, const SimilarPair&) = default;
};

struct BandJoinOptions {
  double threshold = 0.8;  // pairs with estimated Jaccard >= threshold are kept
  int threads = 0;         // 0: one per core
  // true: every candidate is verified and every pair at or above the threshold is returned. false
  // (for clustering): a candidate whose two documents are already connected through the pairs found
  // so far is not verified, so fewer pairs come back, but they connect exactly the same components
  // as all the pairs would (which of the redundant pairs are left out depends on thread timing).
  bool all_pairs = true;
  // > 0: a pair whose estimate is within boundary_sigmas standard deviations of the estimate
  // (EstimateSpread, at the pair's sizes) of the threshold is not decided by the sketch but handed
  // to the caller as a boundary pair (FindSimilarPairs' `boundary`), unless both sketches are in
  // exact form (their estimate is exact). Needs all_pairs.
  double boundary_sigmas = 0;
};

// The standard deviation of the estimate (Sketcher::Estimate) of a pair at Jaccard `threshold`
// whose sets have features_a and features_b distinct features: with B bins of b bits each bin
// agrees with probability p = t + (1 - t) 2^-b, and sigma = sqrt(p (1 - p) / B') / (1 - 2^-b),
// where B' = min(B, (features_a + features_b) / (1 + t)): sets smaller than the bins fill most bins
// by densification, leaving about as many independent bins as the union has features
// (doc/candidates.md, "Exact at the boundary"). 0.0188 at the defaults for large sets.
double EstimateSpread(const SketchOptions& sketch, double threshold, uint64_t features_a,
                      uint64_t features_b);

// z * EstimateSpread for every union size (features_a + features_b), precomputed: a join calls it
// once per candidate near the threshold.
class BoundaryMargins {
 public:
  BoundaryMargins(const SketchOptions& sketch, double threshold, double z);
  double operator()(uint32_t features_a, uint32_t features_b) const {
    const uint64_t size = uint64_t{features_a} + features_b;
    return size < by_union_.size() ? by_union_[size] : largest_sets_;
  }
  double largest() const { return by_union_.empty() ? largest_sets_ : by_union_[0]; }

 private:
  std::vector<double> by_union_;
  double largest_sets_ = 0;
};

// Counters of the work of one join.
struct BandJoinStats {
  uint64_t band_collisions = 0;  // (band, pair) collisions seen, a pair counted once per band
  uint64_t candidates = 0;  // pairs verified: all_pairs, distinct pairs (each in the first band
                            // it collides in); else verifications (a dissimilar pair colliding
                            // in several bands may be verified again)
  uint64_t pairs = 0;       // of them, pairs kept
  uint64_t connected = 0;   // all_pairs = false: candidates not verified (already connected)
};

// Every pair of documents that share at least one band key and whose sketches estimate Jaccard >=
// threshold, in ascending (first, second) order whatever the thread count. Document d's band keys
// are band_keys[d * bands .. (d + 1) * bands) and its sketch sketches[d * sketch_bytes ..]. Each
// band is sorted by the keys' top 22 bits (a stable radix sort, so ids ascend inside a run) and
// pairs are compared only inside runs, when their whole keys are equal; with all_pairs a pair is
// verified only in the first band whose key both documents share, so no pair is verified or
// reported twice (without it, see BandJoinOptions::all_pairs). InvalidArgument when the spans
// disagree with the sketcher's sizes or there are 2^32 documents or more. Memory: 16 bytes per
// document per thread (one band's sort) plus 12 bytes per pair kept (24 while the bands' results
// are merged); time grows with the square of the longest run of equal keys (many near-identical
// documents: group exact duplicates before joining).
// With options.margin > 0, `boundary` receives the boundary pairs, ascending, with their
// estimates (InvalidArgument when it is null, or without all_pairs).
Result<std::vector<SimilarPair>> FindSimilarPairs(const Sketcher& sketcher,
                                                  std::span<const uint32_t> band_keys,
                                                  std::span<const uint8_t> sketches,
                                                  const BandJoinOptions& options = {},
                                                  BandJoinStats* stats = nullptr,
                                                  std::vector<SimilarPair>* boundary = nullptr);

}  // namespace neardup

#endif  // NEARDUP_SKETCH_H_
