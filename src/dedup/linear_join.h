// The clustering join of the default method, with work linear in the corpus (doc/candidates.md,
// "The linear join").
//
// Band by band, the items (documents or groups of identical signatures; of a group only its first
// item joins) are sorted by band key. A run of equal keys whose members are all of one component
// already is passed over. In a run of at most 64 members, every pair not already connected (by the
// pairs of the earlier bands) is verified, as the all-pairs join would. A longer run is joined in
// two ways that each cost a bounded number of verifications per member: against at most
// `representatives` earlier members (each member is verified against every representative of
// another component; one in no representative's component becomes one while there is room), and
// against its next 4 neighbours by number of features and its next 120 in the order of 32 bins of
// the sketches (near-duplicates agree on most bins and sort together), within the size bound
// J(A, B) <= |A| / |B|. A run of m members costs at most m * (representatives + 124)
// verifications, whatever its length; the components found are those of all the pairs except where
// a long run hides a pair that neither way reaches (measured in doc/candidates.md, "The linear
// join").
//
// The result does not depend on thread timing, the thread count or the memory: one band at a time,
// its runs are joined on all threads against the components as the band began (the pairs of the
// earlier bands), and its pairs are applied between bands in key order.
//
// Memory: a band's keys are sorted in at most memory_bytes (16 bytes per item in a pass: key, item,
// group and root; several passes over the band's keys when they do not fit; with `release`, half of
// it), plus the components (4 bytes per group), 12 bytes per pair found and, with `release`, the
// sketches of the runs being joined: 16 bytes per item (from 64 to 256 MiB, within memory_bytes),
// the runs of a band joined in as many parts as their sketches need.
#ifndef NEARDUP_DEDUP_LINEAR_JOIN_H_
#define NEARDUP_DEDUP_LINEAR_JOIN_H_

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "dedup/spill.h"
#include "neardup/sketch.h"
#include "neardup/status.h"

namespace neardup::dedup_internal {

// Calls fn(first, keys) for consecutive chunks of band `band`'s keys of items [begin, end): item
// first, first + 1, ... (begin is a multiple of kBandKeyAlignment. Callable by several threads at
// once.)
using BandKeyReader =
    std::function<Status(size_t band, uint64_t begin, uint64_t end,
                         const std::function<Status(uint64_t, std::span<const uint32_t>)>& fn)>;

struct LinearJoinInput {
  const Sketcher* sketcher = nullptr;
  uint64_t items = 0;
  // Item -> group (kNoGroup: left out of the join); null: item i is group i. Items of one group
  // have one signature: only the first of each joins.
  const std::vector<uint32_t>* group_of = nullptr;
  uint32_t groups = 0;
  const uint8_t* sketches = nullptr;  // item i's sketch at i * sketch_bytes
  BandKeyReader band_keys;
  // Set when `sketches` maps a file: release(begin, end) unmaps the pages of items [begin, end)
  // (SketchFile::Release). The join then copies the sketches of each pass's run members into a
  // buffer of its own, reading the mapping once in item order and releasing it behind, so that
  // the mapping's resident pages stay few (when the buffer does not fit in memory_bytes, the pass
  // reads the mapping at random and releases it when done).
  std::function<void(uint64_t, uint64_t)> release;
};

struct LinearJoinOptions {
  double threshold = 0.8;
  // > 0: estimates within this many standard deviations (EstimateSpread at the pair's sizes) of
  // the threshold are boundary pairs, decided by the caller (pairs of two documents in exact form
  // are decided here: their estimate is exact).
  double boundary_sigmas = 0;
  int threads = 1;
  size_t memory_bytes = size_t{1} << 30;  // for the bands' sort arrays, all threads together
  size_t representatives = 4;
  // At most about this many boundary pairs are kept (the nearest the threshold; the list is cut
  // to this once it holds twice as many after a band, or four times as many during one); the
  // others are decided by their estimates, and those accepted connect their components when the
  // band ends. The caller decides exactly only as many as their feature sets fit in its memory
  // (about 80,000 pairs of 250-feature documents in 256 MB): the nearest 1Mi leave it the pairs
  // that matter.
  size_t max_boundary = size_t{1} << 20;
  const std::atomic<bool>* cancel = nullptr;
};

struct LinearJoinResult {
  // Pairs of groups (first < second), ascending, each once, with their estimate: at or above the
  // threshold and out of the margin (in exact form: at or above the threshold). Only those that
  // joined two components when their band ended (taken in the order found: by key, then in each
  // run in the order verified) are kept, a spanning forest of the components: at most groups - 1.
  std::vector<SimilarPair> pairs;
  // Pairs of groups whose estimate is within the margin of the threshold, ascending, each once (a
  // pair may also be in `pairs` when another band decided it): at most 2 * max_boundary, the
  // nearest the threshold; those beyond were decided by their estimates (and then in `pairs` if
  // accepted and joining).
  std::vector<SimilarPair> boundary;
  uint64_t band_collisions = 0;  // run members seen, all bands
  uint64_t connected = 0;        // of them, skipped: already in a representative's component
  uint64_t verifications = 0;    // sketch comparisons
};

// InvalidArgument for 2^32 - 1 items or more; errors of band_keys; Cancelled.
Result<LinearJoinResult> LinearJoin(const LinearJoinInput& input, const LinearJoinOptions& options);

// The size bound of the join: J(A, B) <= min(|A|, |B|) / max(|A|, |B|) for the exact Jaccard of the
// two feature sets (the counts are their sizes), so a pair whose bound is below the threshold is
// not a near-duplicate whatever its estimate: it is neither verified nor listed at the boundary
// (its exact Jaccard, from the texts, could only reject it).
class SizeBound {
 public:
  // Cuts are kept for unions of fewer than `unions` features.
  SizeBound(double threshold, uint32_t unions);

  // The bound's definition: the quotient in double precision, compared with the threshold.
  bool BelowByDivision(uint32_t features_a, uint32_t features_b) const {
    return static_cast<double>(std::min(features_a, features_b)) /
               std::max(features_a, features_b) <
           threshold_;
  }

  // The same answer. For a union size u = a + b, BelowByDivision is true exactly for min(a, b)
  // below a cut (the rounded quotient min / (u - min) never falls as min grows): below `unions`, a
  // comparison with that cut instead of a division.
  bool Below(uint32_t features_a, uint32_t features_b) const {
    const uint64_t u = uint64_t{features_a} + features_b;
    if (u < cuts_.size()) return std::min(features_a, features_b) < cuts_[u];
    return BelowByDivision(features_a, features_b);
  }

 private:
  double threshold_;
  std::vector<uint32_t> cuts_;  // by union size
};

}  // namespace neardup::dedup_internal

#endif  // NEARDUP_DEDUP_LINEAR_JOIN_H_
