#include "dedup/linear_join.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <thread>
#include <utility>

#include "dedup/signature_groups.h"
#include "sketch/kernels.h"
#include "util/pod_array.h"

namespace neardup::dedup_internal {
namespace {

constexpr int kPrefixBits = 16;
constexpr size_t kPrefixes = size_t{1} << kPrefixBits;
// Threads take the prefixes of a band this many at a time.
constexpr size_t kPrefixBlock = 256;
// Runs of at most this many members are joined pair by pair.
constexpr size_t kShortRun = 64;
// At most this many representatives per long run.
constexpr size_t kMaxRepresentatives = 64;
// In a long run, each member is also verified against this many neighbours by number of features,
// and this many in the order of 32 bins of the sketches.
constexpr size_t kSizeNeighbours = 4;
constexpr size_t kBinNeighbours = 120;

// Items are gathered in chunks of this many, each released from the mapping when copied.
constexpr uint64_t kGatherChunk = uint64_t{1} << 14;
// The gathered sketches take kGatherBytesPerItem bytes per item, at least kMinGatherBytes, within
// what memory_bytes leaves: a band's blocks are joined in as many parts as their runs' sketches
// need, each part reading the mapping once. A part faults in most of the mapping whatever its size
// (0.3 s of page faults a part at 100M documents), so the buffer grows with the corpus: capped at
// 256 MB, a band of 100M took 21 parts, and their copies a third of the join.
constexpr uint64_t kGatherBytesPerItem = 16;
constexpr uint64_t kMinGatherBytes = uint64_t{64} << 20;

// Where a pass of a band finds a sketch: the input's of item e.item, or the pass's buffer of its
// runs' sketches, in the order of the runs (their members' e.item then numbers their places).
struct SketchLookup {
  const uint8_t* sketches = nullptr;  // the input's
  size_t sketch_bytes = 0;
  const uint8_t* gathered = nullptr;  // null: the input's are read

  const uint8_t* operator()(uint32_t item) const {
    return (gathered != nullptr ? gathered : sketches) + uint64_t{item} * sketch_bytes;
  }
};

// The rejection of a pair of bin-form sketches of 1-bit bins by their differing bits alone, with no
// early exit and no floating point: most verifications are rejections (at 10M documents of the
// scale corpus, 993 M of 1,118 M were decided here before the size bound left out more). Decides as
// Verify's estimate would: a pair is rejected here iff its estimate (from its matching bins) is
// below the threshold minus its margin, so only the pairs Verify would keep, or list at the
// boundary, go on to the estimate.
class FastReject {
 public:
  // Null when the sketches do not have 1-bit bins in whole 64-bit words.
  static std::unique_ptr<FastReject> Create(const Sketcher& sketcher, double threshold,
                                            const BoundaryMargins* margins) {
    const SketchOptions& o = sketcher.options();
    const size_t payload = sketcher.sketch_bytes() - 4;
    if (o.bits_per_bin != 1 || payload % 8 != 0 || payload * 8 != static_cast<size_t>(o.bins)) {
      return nullptr;
    }
    auto reject = std::unique_ptr<FastReject>(new FastReject);
    reject->differing_ = sketch_internal::ChooseDifferingBits();
    reject->differing_many_ = sketch_internal::ChooseDifferingBitsMany();
    reject->payload_bytes_ = payload;
    // The sketcher's own estimate for every number of differing bins, from two sketches of many
    // features (bin form, size bound 1) whose payloads differ in the first m bits.
    std::vector<uint8_t> a(sketcher.sketch_bytes(), 0), b(sketcher.sketch_bytes(), 0);
    const uint32_t many = static_cast<uint32_t>(sketcher.exact_capacity()) + 1000;
    for (int k = 0; k < 4; ++k) a[k] = b[k] = static_cast<uint8_t>(many >> (8 * k));
    std::vector<double> estimate(payload * 8 + 1);
    for (size_t m = 0; m < estimate.size(); ++m) {
      if (m > 0) b[4 + (m - 1) / 8] |= static_cast<uint8_t>(1u << ((m - 1) % 8));
      estimate[m] = sketcher.Estimate(a.data(), b.data());
    }
    // The most differing bits whose estimate reaches `lowest` (the estimate falls as bits differ),
    // -1 for none.
    const auto most = [&](double lowest) {
      const auto end = std::partition_point(estimate.begin(), estimate.end(),
                                            [lowest](double e) { return e >= lowest; });
      return static_cast<int>(end - estimate.begin()) - 1;
    };
    // BoundaryMargins depends on the union's size up to bins * (1 + t) <= 2 * bins features.
    const size_t unions = margins == nullptr ? 0 : 2 * static_cast<size_t>(o.bins) + 1;
    for (size_t u = 0; u < unions; ++u) {
      reject->by_union_.push_back(most(threshold - (*margins)(static_cast<uint32_t>(u), 0)));
    }
    reject->larger_ = most(threshold - (margins == nullptr ? 0 : (*margins)(UINT32_MAX, 0)));
    return reject;
  }

  // Whether Verify would reject the pair by its estimate (sketches in bin form).
  bool Rejects(const uint8_t* a, const uint8_t* b, uint32_t features_a, uint32_t features_b) const {
    return RejectsDiffering(differing_(a + 4, b + 4, payload_bytes_), features_a, features_b);
  }

  // The same, for a pair whose differing bits are counted already (CountDiffering).
  bool RejectsDiffering(uint32_t differing, uint32_t features_a, uint32_t features_b) const {
    const uint64_t size = uint64_t{features_a} + features_b;
    const int most = size < by_union_.size() ? by_union_[size] : larger_;
    return static_cast<int>(differing) > most;
  }

  // out[i] = the bits in which the payloads of sketch a and sketch base + index[i] * stride differ,
  // for i < count.
  void CountDiffering(const uint8_t* a, const uint8_t* base, size_t stride, const uint32_t* index,
                      size_t count, uint32_t* out) const {
    differing_many_(a + 4, base + 4, stride, index, count, payload_bytes_, out);
  }

 private:
  FastReject() = default;

  sketch_internal::DifferingBitsFn differing_ = nullptr;
  sketch_internal::DifferingBitsManyFn differing_many_ = nullptr;
  size_t payload_bytes_ = 0;
  std::vector<int> by_union_;  // by features_a + features_b
  int larger_ = 0;
};

// What the threads of a band read: the input, the options, the components as the band began
// (group -> its root; read-only during a band) and where the sketches are.
struct BandContext {
  const LinearJoinInput& input;
  const LinearJoinOptions& options;
  const std::vector<uint32_t>& root;
  const BoundaryMargins* margins;  // null: no boundary pairs
  const FastReject* reject;        // null: every pair goes to the estimate
  const SizeBound& size_bound;
  size_t sketch_bytes;
  uint32_t exact_capacity;
  SketchLookup sketch;
  // A bit per item: whether it joins (the first item of its group); null: every item does.
  const std::vector<uint64_t>* joining;

  bool Joins(uint64_t item) const {
    return joining == nullptr || ((*joining)[item / 64] >> (item % 64) & 1) != 0;
  }
};

// What one block of prefixes of a band found (and the join's total).
struct Found {
  std::vector<SimilarPair> pairs;
  std::vector<SimilarPair> boundary;
  uint64_t band_collisions = 0;
  uint64_t connected = 0;
  uint64_t verifications = 0;
  // The join's: once CapBoundary has cut the boundary list to the max_boundary pairs nearest the
  // threshold at the end of a band, the farthest distance kept. Those kept are as many as the next
  // cut keeps, and nearer, so a pair listed since beyond it is dropped by that cut without the
  // selection (at 10M documents the cuts selected among 169 M listed pairs, 1.3 s on one thread;
  // 67 M now). Set at band ends only, so that it does not depend on when the cuts during a band
  // happen (on --memory).
  double boundary_cutoff = std::numeric_limits<double>::infinity();
};

// An item of a band in the sort array: its key, and what the join reads of it, looked up while the
// band is scattered (items in order: near-sequential reads) rather than at random in the runs.
struct BandEntry {
  uint32_t key;
  uint32_t item;
  uint32_t group;
  uint32_t root;  // of the group, as the band began
};

// A member of a run: its group, the group's root, its sketch and (read when needed) its number of
// distinct features.
struct Member {
  uint32_t group;
  uint32_t root;
  uint32_t features;
  uint32_t item;  // where SketchLookup finds its sketch
  const uint8_t* sketch;
};

uint32_t GroupOf(const LinearJoinInput& input, uint64_t item) {
  return input.group_of == nullptr ? static_cast<uint32_t>(item) : (*input.group_of)[item];
}

// The items that join, a bit each: the first of each group (the others have its signature, so they
// would only repeat its verifications). Empty without group_of.
std::vector<uint64_t> JoiningItems(const LinearJoinInput& input) {
  if (input.group_of == nullptr) return {};
  std::vector<uint64_t> joining((input.items + 63) / 64, 0);
  std::vector<bool> seen(input.groups, false);
  for (uint64_t item = 0; item < input.items; ++item) {
    const uint32_t g = (*input.group_of)[item];
    if (g == kNoGroup || seen[g]) continue;
    seen[g] = true;
    joining[item / 64] |= uint64_t{1} << (item % 64);
  }
  return joining;
}

// Whether the members of a sorted run are all of one component as the band began: nothing to
// verify (nor any sketch to read).
bool OneComponent(std::span<const BandEntry> run) {
  for (const BandEntry& e : run) {
    if (e.root != run.front().root) return false;
  }
  return true;
}

SimilarPair Ordered(uint32_t a, uint32_t b, double jaccard) {
  return a < b ? SimilarPair{a, b, static_cast<float>(jaccard)}
               : SimilarPair{b, a, static_cast<float>(jaccard)};
}

// What Verify decides of a pair FastReject did not reject.
bool Decide(const BandContext& c, const Member& a, const Member& b, uint32_t features_a,
            uint32_t features_b, Found* out) {
  // Below the size bound the exact Jaccard cannot reach the threshold: not a boundary pair either.
  if (c.size_bound.Below(features_a, features_b)) return false;
  const bool exact = features_a <= c.exact_capacity && features_b <= c.exact_capacity;
  const double margin = c.margins == nullptr || exact ? 0 : (*c.margins)(features_a, features_b);
  const double lowest = c.options.threshold - margin;
  const double estimate = c.input.sketcher->EstimateIfAtLeast(a.sketch, b.sketch, lowest);
  if (estimate < lowest) return false;
  if (estimate < c.options.threshold + margin && margin > 0) {
    out->boundary.push_back(Ordered(a.group, b.group, estimate));
    return false;
  }
  if (estimate < c.options.threshold) return false;
  out->pairs.push_back(Ordered(a.group, b.group, estimate));
  return true;
}

// Verifies a and b (not yet connected) and records a pair, a boundary pair or nothing. True for a
// pair.
bool Verify(const BandContext& c, const Member& a, const Member& b, Found* out) {
  ++out->verifications;
  const uint32_t features_a = SketchFeatureCount(a.sketch),
                 features_b = SketchFeatureCount(b.sketch);
  const bool in_bins = features_a > c.exact_capacity && features_b > c.exact_capacity;
  if (in_bins && c.reject != nullptr &&
      c.reject->Rejects(a.sketch, b.sketch, features_a, features_b))
    return false;
  return Decide(c, a, b, features_a, features_b, out);
}

// Verify, for a pair whose payloads differ in `differing` bits (c.reject is not null) and whose
// members' features are read.
bool VerifyDiffering(const BandContext& c, const Member& a, const Member& b, uint32_t differing,
                     Found* out) {
  ++out->verifications;
  const bool in_bins = a.features > c.exact_capacity && b.features > c.exact_capacity;
  if (in_bins && c.reject->RejectsDiffering(differing, a.features, b.features)) return false;
  return Decide(c, a, b, a.features, b.features, out);
}

// The members of a run of entries (their sketches are not read here).
void CollectMembers(const BandContext& c, std::span<const BandEntry> run,
                    std::vector<Member>* members) {
  members->clear();
  for (const BandEntry& e : run) {
    members->push_back({e.group, e.root, 0, e.item, c.sketch(e.item)});
  }
}

// The components of a run's members: connected as the band began (equal roots), and as the pairs
// found in the run join them, so that a pair already connected either way is not verified.
class RunComponents {
 public:
  void Reset(std::span<const Member> members) {
    const auto n = static_cast<uint32_t>(members.size());
    parent_.resize(n);
    by_root_.resize(n);
    for (uint32_t i = 0; i < n; ++i) by_root_[i] = {members[i].root, i};
    std::sort(by_root_.begin(), by_root_.end());
    for (uint32_t k = 0; k < n; ++k) {
      const bool same = k > 0 && by_root_[k].first == by_root_[k - 1].first;
      parent_[by_root_[k].second] = same ? parent_[by_root_[k - 1].second] : by_root_[k].second;
    }
  }
  uint32_t Find(uint32_t i) {
    while (parent_[i] != i) i = parent_[i] = parent_[parent_[i]];
    return i;
  }
  bool Connected(uint32_t a, uint32_t b) { return Find(a) == Find(b); }
  // Returns the root of the united component.
  uint32_t Unite(uint32_t a, uint32_t b) {
    a = Find(a);
    b = Find(b);
    parent_[std::max(a, b)] = std::min(a, b);
    return std::min(a, b);
  }

 private:
  std::vector<uint32_t> parent_;
  std::vector<std::pair<uint32_t, uint32_t>> by_root_;
};

// What a thread reuses from run to run.
struct RunScratch {
  std::vector<Member> members;
  RunComponents components;
  std::vector<std::pair<uint64_t, uint32_t>> order;  // a long run's (sort key, member)
  std::vector<Member> ordered;                       // its members in that order
  std::vector<uint8_t> sketches;                     // their sketches, in that order
  std::vector<uint32_t> window;     // a member's next neighbours within the size bound
  std::vector<uint32_t> differing;  // the bits their payloads differ from the member's in
};

// Every pair of a short run whose groups are not connected yet (as the band began, or by the pairs
// found in the run): the components the all-pairs join finds in it. The bits in which each member's
// payload differs from those of the members after it are counted in one call.
void JoinShortRun(const BandContext& c, std::span<Member> members, RunScratch* scratch,
                  Found* out) {
  RunComponents* components = &scratch->components;
  components->Reset(members);
  const auto n = static_cast<uint32_t>(members.size());
  if (c.reject == nullptr) {
    for (uint32_t x = 0; x + 1 < n; ++x) {
      for (uint32_t y = x + 1; y < n; ++y) {
        if (components->Connected(x, y)) {
          ++out->connected;
          continue;
        }
        if (Verify(c, members[x], members[y], out)) components->Unite(x, y);
      }
    }
    return;
  }
  std::vector<uint32_t>& items = scratch->window;
  std::vector<uint32_t>& differing = scratch->differing;
  items.resize(n);
  differing.resize(n);
  for (uint32_t i = 0; i < n; ++i) {
    members[i].features = SketchFeatureCount(members[i].sketch);
    items[i] = members[i].item;
  }
  const uint8_t* base = c.sketch(0);
  for (uint32_t x = 0; x + 1 < n; ++x) {
    c.reject->CountDiffering(members[x].sketch, base, c.sketch_bytes, items.data() + x + 1,
                             n - x - 1, differing.data());
    for (uint32_t y = x + 1; y < n; ++y) {
      if (components->Connected(x, y)) {
        ++out->connected;
        continue;
      }
      if (VerifyDiffering(c, members[x], members[y], differing[y - x - 1], out)) {
        components->Unite(x, y);
      }
    }
  }
}

// The order of a long run's members for JoinLongRun: a 32-bit word of the sketch's payload (32
// adjacent bins), of the band's choice; members in exact form (whose payload holds feature hashes,
// not bins) after all others, by number of features.
uint64_t SortKey(const BandContext& c, size_t band, const Member& m) {
  if (m.features <= c.exact_capacity) return (uint64_t{1} << 32) | m.features;
  const size_t word = (band * 7 + 3) % ((c.sketch_bytes - 4) / 4);
  uint32_t bits;
  std::memcpy(&bits, m.sketch + 4 + 4 * word, sizeof(bits));
  return bits;
}

// A long run, in two ways that each cost a bounded number of verifications per member:
//  1. representatives: each member is verified against every representative of another component
//     (RunComponents: as the band began, and as the pairs found in the run join them); a member in
//     no representative's component becomes one while there is room;
//  2. neighbours: sorted by number of features, then by 32 bins of their sketches (SortKey), each
//     member is verified against its next kSizeNeighbours, then kBinNeighbours, within the size
//     bound J(A, B) <= |A| / |B|. Two documents agree on each bin with probability about
//     (1 + J) / 2, so near-duplicates share long prefixes of the word and sort next to each other,
//     while members that merely share the run's band key (J about 0.5) agree on 0.75 of the bits;
//     near sizes catch the small sets, whose few real bins densification copies into many. This
//     finds the pairs between members that are not representatives.
void JoinLongRun(const BandContext& c, size_t band, std::span<Member> members, RunScratch* scratch,
                 Found* out) {
  RunComponents* components = &scratch->components;
  components->Reset(members);
  std::array<uint32_t, kMaxRepresentatives> reps;
  size_t rep_count = 0;
  const size_t max_reps = std::min(c.options.representatives, kMaxRepresentatives);
  const auto n = static_cast<uint32_t>(members.size());
  for (uint32_t m = 0; m < n; ++m) {
    bool represented = false;
    for (size_t r = 0; r < rep_count; ++r) {
      if (components->Connected(m, reps[r])) {
        represented = true;
        ++out->connected;
        continue;
      }
      if (Verify(c, members[m], members[reps[r]], out)) {
        components->Unite(m, reps[r]);
        represented = true;
      }
    }
    if (!represented && rep_count < max_reps) reps[rep_count++] = m;
  }
  std::vector<std::pair<uint64_t, uint32_t>>& order = scratch->order;
  order.resize(n);
  // Each member against its next `neighbours` in `order` (their members in `ordered`), within the
  // size bound: a pair whose bound is below the threshold is not verified, as Verify would reject
  // it.
  auto join_neighbours = [&](std::span<const Member> ordered, size_t neighbours) {
    for (size_t x = 0; x < n; ++x) {
      const uint32_t a = order[x].second;
      for (size_t y = x + 1; y < n && y <= x + neighbours; ++y) {
        const uint32_t b = order[y].second;
        if (c.size_bound.Below(ordered[x].features, ordered[y].features)) continue;
        if (components->Connected(a, b)) {
          ++out->connected;
          continue;
        }
        if (Verify(c, ordered[x], ordered[y], out)) components->Unite(a, b);
      }
    }
  };
  // The same, for members whose sketches follow each other in `sketches` in their order: each
  // member's neighbours within the size bound are listed without a branch, and the bits in which
  // their payloads differ from its own counted in one call (most verifications end there).
  auto join_window = [&](std::span<const Member> ordered, const uint8_t* sketches,
                         size_t neighbours) {
    std::vector<uint32_t>& window = scratch->window;
    std::vector<uint32_t>& differing = scratch->differing;
    window.resize(neighbours);
    differing.resize(neighbours);
    for (size_t x = 0; x < n; ++x) {
      const uint32_t fa = ordered[x].features;
      const size_t end = std::min<size_t>(n, x + 1 + neighbours);
      size_t count = 0;
      for (size_t y = x + 1; y < end; ++y) {
        window[count] = static_cast<uint32_t>(y);
        count += !c.size_bound.Below(fa, ordered[y].features);
      }
      c.reject->CountDiffering(ordered[x].sketch, sketches, c.sketch_bytes, window.data(), count,
                               differing.data());
      const uint32_t a = order[x].second;
      // The root of a's component, which changes only when a pair is found.
      uint32_t root_a = components->Find(a);
      for (size_t k = 0; k < count; ++k) {
        const uint32_t y = window[k], b = order[y].second;
        if (components->Find(b) == root_a) {
          ++out->connected;
          continue;
        }
        if (VerifyDiffering(c, ordered[x], ordered[y], differing[k], out)) {
          root_a = components->Unite(a, b);
        }
      }
    }
  };
  std::vector<Member>& ordered = scratch->ordered;
  ordered.resize(n);
  for (uint32_t i = 0; i < n; ++i) {
    members[i].features = SketchFeatureCount(members[i].sketch);
    order[i] = {members[i].features, i};
  }
  std::sort(order.begin(), order.end());
  for (uint32_t x = 0; x < n; ++x) ordered[x] = members[order[x].second];
  join_neighbours(ordered, kSizeNeighbours);
  for (uint32_t i = 0; i < n; ++i) order[i] = {SortKey(c, band, members[i]), i};
  std::sort(order.begin(), order.end());
  // The sketches copied in this order: a member's window of neighbours is then the next
  // kBinNeighbours sketches in memory (16 KB), not places all over the run's.
  scratch->sketches.resize(uint64_t{n} * c.sketch_bytes);
  for (uint32_t x = 0; x < n; ++x) {
    uint8_t* copy = scratch->sketches.data() + uint64_t{x} * c.sketch_bytes;
    std::memcpy(copy, members[order[x].second].sketch, c.sketch_bytes);
    ordered[x] = members[order[x].second];
    ordered[x].sketch = copy;
  }
  if (c.reject != nullptr) {
    join_window(ordered, scratch->sketches.data(), kBinNeighbours);
  } else {
    join_neighbours(ordered, kBinNeighbours);
  }
}

// Sorts a bucket's entries by key, then item. The scatter leaves them in item order (each thread's
// items ascending, the threads' ranges in order), and their keys share the top kPrefixBits bits: a
// stable sort on the low 16 bits, by insertion for a few entries, else two 8-bit radix passes.
void SortBucket(std::span<BandEntry> entries, std::vector<BandEntry>* scratch) {
  static_assert(kPrefixBits == 16);
  const size_t n = entries.size();
  if (n < 48) {
    for (size_t i = 1; i < n; ++i) {
      const BandEntry e = entries[i];
      size_t j = i;
      for (; j > 0 && entries[j - 1].key > e.key; --j) entries[j] = entries[j - 1];
      entries[j] = e;
    }
    return;
  }
  std::array<uint32_t, 256> low{}, high{};
  for (const BandEntry& e : entries) {
    ++low[e.key & 0xFF];
    ++high[e.key >> 8 & 0xFF];
  }
  const auto starts = [](std::array<uint32_t, 256>* counts) {
    uint32_t sum = 0;
    for (uint32_t& c : *counts) sum += std::exchange(c, sum);
  };
  starts(&low);
  starts(&high);
  scratch->resize(n);
  for (const BandEntry& e : entries) (*scratch)[low[e.key & 0xFF]++] = e;
  for (const BandEntry& e : *scratch) entries[high[e.key >> 8 & 0xFF]++] = e;
}

// Calls fn(run, reads) for every run of two or more equal keys of the sorted bucket, with whether
// JoinBucket reads its members' sketches (its members are not all of one component already).
template <typename Entry, typename Fn>
void ForEachRun(std::span<Entry> entries, Fn fn) {
  for (size_t start = 0; start < entries.size();) {
    size_t end = start + 1;
    while (end < entries.size() && entries[end].key == entries[start].key) ++end;
    if (end - start > 1) {
      const std::span<Entry> run = entries.subspan(start, end - start);
      fn(run, !OneComponent(run));
    }
    start = end;
  }
}

// The members of the sorted bucket's runs that JoinBucket reads the sketches of.
uint64_t RunMembersToRead(std::span<const BandEntry> entries) {
  uint64_t members = 0;
  ForEachRun(entries, [&](std::span<const BandEntry> run, bool reads) {
    if (reads) members += run.size();
  });
  return members;
}

// Marks the members that RunMembersToRead counts in `marked` (a bit per item; other threads mark
// theirs at once).
void MarkRunMembers(std::span<const BandEntry> entries, std::vector<uint64_t>* marked) {
  ForEachRun(entries, [&](std::span<const BandEntry> run, bool reads) {
    if (!reads) return;
    for (const BandEntry& e : run) {
      std::atomic_ref<uint64_t>((*marked)[e.item / 64])
          .fetch_or(uint64_t{1} << (e.item % 64), std::memory_order_relaxed);
    }
  });
}

// Joins every run of two or more of a sorted bucket.
void JoinBucket(const BandContext& c, size_t band, std::span<const BandEntry> entries,
                RunScratch* scratch, Found* out) {
  ForEachRun(entries, [&](std::span<const BandEntry> run, bool reads) {
    const uint64_t size = run.size();
    out->band_collisions += size;
    if (!reads) {
      // Connected already: every pair of a short run, the checks against the first member of a
      // long one.
      out->connected += size <= kShortRun ? size * (size - 1) / 2 : size - 1;
      return;
    }
    CollectMembers(c, run, &scratch->members);
    if (size <= kShortRun) {
      JoinShortRun(c, scratch->members, scratch, out);
    } else {
      JoinLongRun(c, band, scratch->members, scratch, out);
    }
  });
}

bool IsCancelled(const LinearJoinOptions& options) {
  return options.cancel != nullptr && options.cancel->load(std::memory_order_relaxed);
}

// Runs fn(t) on `threads` threads (t = 0 on the calling one) and returns the first error.
Status OnThreads(size_t threads, const std::function<Status(size_t)>& fn) {
  std::vector<Status> statuses(threads);
  std::vector<std::thread> pool;
  for (size_t t = 1; t < threads; ++t) pool.emplace_back([&, t] { statuses[t] = fn(t); });
  statuses[0] = fn(0);
  for (auto& thread : pool) thread.join();
  for (const Status& s : statuses) NEARDUP_RETURN_IF_ERROR(s);
  return Status::OK();
}

// The buffers of the gathered sketches, kept from pass to pass.
struct GatherBuffers {
  std::vector<uint64_t> marked;  // a bit per item: its sketch is read in the pass
  std::vector<uint64_t> ranks;   // marked items before each word
  std::vector<uint32_t> slots;   // the place in `sketches` of each marked item, by rank
  std::unique_ptr<uint8_t[]> sketches;
  uint64_t capacity = 0;  // bytes of `sketches`

  uint64_t Rank(uint32_t item) const {
    const uint64_t below = marked[item / 64] & ((uint64_t{1} << (item % 64)) - 1);
    return ranks[item / 64] + static_cast<uint64_t>(std::popcount(below));
  }
};

// Counts the marked items into g->ranks and makes room for their sketches. False when they take
// more than `budget` bytes.
bool PrepareGather(size_t sketch_bytes, uint64_t budget, GatherBuffers* g) {
  const size_t words = g->marked.size();
  g->ranks.resize(words);
  uint64_t total = 0;
  for (size_t w = 0; w < words; ++w) {
    g->ranks[w] = total;
    total += static_cast<uint64_t>(std::popcount(g->marked[w]));
  }
  const uint64_t bytes = total * sketch_bytes;
  if (bytes > budget) return false;
  if (bytes > g->capacity) {
    g->sketches.reset();
    g->sketches.reset(new uint8_t[bytes]);
    g->capacity = bytes;
  }
  g->slots.resize(total);
  return true;
}

// Gives the members of the sorted bucket's runs that MarkRunMembers marked the next places from
// *slot, in run order: e.item becomes the place, and g->slots says it by the item's rank.
void AssignSlots(std::span<BandEntry> entries, GatherBuffers* g, uint32_t* slot) {
  ForEachRun(entries, [&](std::span<BandEntry> run, bool reads) {
    if (!reads) return;
    for (BandEntry& e : run) {
      g->slots[g->Rank(e.item)] = *slot;
      e.item = (*slot)++;
    }
  });
}

// Copies the sketches of the marked items to their places, reading the input's mapping in item
// order on all threads, each chunk of items released once copied.
void CopyGathered(const BandContext& c, size_t threads, GatherBuffers* g) {
  const uint64_t items = c.input.items;
  const uint64_t chunks = (items + kGatherChunk - 1) / kGatherChunk;
  std::atomic<uint64_t> next{0};
  // Copying cannot fail.
  (void)OnThreads(threads, [&](size_t) {
    for (uint64_t k = next++; k < chunks; k = next++) {
      const uint64_t begin = k * kGatherChunk, end = std::min(items, begin + kGatherChunk);
      for (uint64_t w = begin / 64; w < (end + 63) / 64; ++w) {
        uint64_t rank = g->ranks[w];
        for (uint64_t bits = g->marked[w]; bits != 0; bits &= bits - 1) {
          const uint64_t item = w * 64 + static_cast<uint64_t>(std::countr_zero(bits));
          std::memcpy(g->sketches.get() + uint64_t{g->slots[rank++]} * c.sketch_bytes,
                      c.input.sketches + item * c.sketch_bytes, c.sketch_bytes);
        }
      }
      c.input.release(begin, end);
    }
    return Status::OK();
  });
}

void CapBoundary(double threshold, size_t max_boundary, bool band_end, Found* found);

// Joins band `band`: each thread counts the keys of its share of the items by prefix; then, in as
// many passes as `values` needs, the threads scatter a range of prefixes into it, sort its buckets
// (and gather the sketches of their runs' members, with input.release) and join them, a block of
// prefixes at a time. The blocks' findings are appended to *found in prefix order (the same
// whatever the thread count).
Status JoinBand(const BandContext& c, size_t band, size_t threads, size_t max_values,
                util_internal::PodArray<BandEntry>* values, GatherBuffers* gather, Found* found) {
  const LinearJoinInput& input = c.input;
  // Item ranges of the threads, on read boundaries.
  std::vector<uint64_t> bounds(threads + 1, input.items);
  for (size_t t = 0; t < threads; ++t) {
    bounds[t] =
        std::min(input.items, input.items / threads * t / kBandKeyAlignment * kBandKeyAlignment);
  }
  std::vector<std::vector<uint64_t>> counts(threads, std::vector<uint64_t>(kPrefixes, 0));
  NEARDUP_RETURN_IF_ERROR(OnThreads(threads, [&](size_t t) {
    return input.band_keys(band, bounds[t], bounds[t + 1],
                           [&](uint64_t first, std::span<const uint32_t> keys) {
                             for (size_t i = 0; i < keys.size(); ++i) {
                               if (!c.Joins(first + i)) continue;
                               ++counts[t][keys[i] >> (32 - kPrefixBits)];
                             }
                             return Status::OK();
                           });
  }));
  std::vector<uint64_t> totals(kPrefixes, 0);
  for (size_t p = 0; p < kPrefixes; ++p) {
    for (size_t t = 0; t < threads; ++t) totals[p] += counts[t][p];
  }
  std::vector<std::vector<uint64_t>> cursors(threads, std::vector<uint64_t>(kPrefixes));
  std::vector<uint64_t> starts(kPrefixes + 1);
  for (size_t lo = 0; lo < kPrefixes;) {
    // The widest range of whole prefix blocks that fits (at least one block, however large).
    size_t hi = lo;
    uint64_t total = 0;
    while (hi < kPrefixes) {
      uint64_t block = 0;
      for (size_t p = hi; p < hi + kPrefixBlock; ++p) block += totals[p];
      if (hi != lo && total + block > max_values) break;
      total += block;
      hi += kPrefixBlock;
    }
    values->resize(total);
    uint64_t offset = 0;
    for (size_t p = lo; p < hi; ++p) {
      starts[p] = offset;
      for (size_t t = 0; t < threads; ++t) {
        cursors[t][p] = offset;
        offset += counts[t][p];
      }
    }
    starts[hi] = offset;
    NEARDUP_RETURN_IF_ERROR(OnThreads(threads, [&](size_t t) {
      std::vector<uint64_t>& cursor = cursors[t];
      return input.band_keys(band, bounds[t], bounds[t + 1],
                             [&](uint64_t first, std::span<const uint32_t> keys) {
                               for (size_t i = 0; i < keys.size(); ++i) {
                                 const uint32_t key = keys[i];
                                 const size_t prefix = key >> (32 - kPrefixBits);
                                 if (prefix < lo || prefix >= hi) continue;
                                 if (!c.Joins(first + i)) continue;
                                 const uint32_t group = GroupOf(input, first + i);
                                 (*values)[cursor[prefix]++] = {
                                     key, static_cast<uint32_t>(first + i), group, c.root[group]};
                               }
                               return Status::OK();
                             });
    }));
    const size_t blocks = (hi - lo) / kPrefixBlock;
    const bool gathering = static_cast<bool>(input.release);
    const auto bucket = [&](size_t p) {
      return std::span<BandEntry>(values->data() + starts[p], totals[p]);
    };
    // Sort the buckets; count the sketches each block's runs read.
    std::vector<uint64_t> need(blocks, 0);
    std::atomic<size_t> next{0};
    NEARDUP_RETURN_IF_ERROR(OnThreads(threads, [&](size_t) {
      std::vector<BandEntry> scratch;
      for (size_t b = next++; b < blocks; b = next++) {
        for (size_t p = lo + b * kPrefixBlock; p < lo + (b + 1) * kPrefixBlock; ++p) {
          SortBucket(bucket(p), &scratch);
          if (gathering) need[b] += RunMembersToRead(bucket(p));
        }
      }
      return Status::OK();
    }));
    const uint64_t values_bytes = uint64_t{values->size()} * sizeof(BandEntry);
    const uint64_t budget = std::min(std::max(kGatherBytesPerItem * input.items, kMinGatherBytes),
                                     c.options.memory_bytes > values_bytes
                                         ? uint64_t{c.options.memory_bytes} - values_bytes
                                         : 0);
    // Join the blocks, as many at a time as their sketches fit in the budget.
    for (size_t first = 0; first < blocks;) {
      size_t last = blocks;
      BandContext pass = c;
      bool read_input = false;  // at random, from the mapping: the gathered sketches did not fit
      if (gathering) {
        uint64_t sketches = need[first];
        for (last = first + 1; last < blocks; ++last) {
          if ((sketches + need[last]) * c.sketch_bytes > budget) break;
          sketches += need[last];
        }
        std::fill(gather->marked.begin(), gather->marked.end(), 0);
        next = first;
        NEARDUP_RETURN_IF_ERROR(OnThreads(threads, [&](size_t) {
          for (size_t b = next++; b < last; b = next++) {
            for (size_t p = lo + b * kPrefixBlock; p < lo + (b + 1) * kPrefixBlock; ++p) {
              MarkRunMembers(bucket(p), &gather->marked);
            }
          }
          return Status::OK();
        }));
        read_input = !PrepareGather(c.sketch_bytes, budget, gather);
        if (!read_input && !gather->slots.empty()) {
          std::vector<uint32_t> block_slot(last - first);
          for (size_t b = first, slot = 0; b < last; slot += need[b++]) {
            block_slot[b - first] = static_cast<uint32_t>(slot);
          }
          next = first;
          NEARDUP_RETURN_IF_ERROR(OnThreads(threads, [&](size_t) {
            for (size_t b = next++; b < last; b = next++) {
              uint32_t slot = block_slot[b - first];
              for (size_t p = lo + b * kPrefixBlock; p < lo + (b + 1) * kPrefixBlock; ++p) {
                AssignSlots(bucket(p), gather, &slot);
              }
            }
            return Status::OK();
          }));
          CopyGathered(c, threads, gather);
          pass.sketch.gathered = gather->sketches.get();
        }
      }
      std::vector<Found> block_found(last - first);
      next = first;
      NEARDUP_RETURN_IF_ERROR(OnThreads(threads, [&](size_t) {
        RunScratch scratch;
        for (size_t b = next++; b < last; b = next++) {
          if (IsCancelled(pass.options)) return Status::Cancelled("interrupted");
          Found& out = block_found[b - first];
          for (size_t p = lo + b * kPrefixBlock; p < lo + (b + 1) * kPrefixBlock; ++p) {
            JoinBucket(pass, band, bucket(p), &scratch, &out);
          }
        }
        return Status::OK();
      }));
      if (read_input) input.release(0, input.items);
      for (Found& f : block_found) {
        found->pairs.insert(found->pairs.end(), f.pairs.begin(), f.pairs.end());
        found->boundary.insert(found->boundary.end(), f.boundary.begin(), f.boundary.end());
        // Cut as the band goes too, not only at its end: at 100M documents a band's boundary pairs
        // were tens of millions, and their list's growth was the peak of the whole job.
        if (found->boundary.size() > 4 * c.options.max_boundary) {
          CapBoundary(c.options.threshold, c.options.max_boundary, false, found);
        }
        found->band_collisions += f.band_collisions;
        found->connected += f.connected;
        found->verifications += f.verifications;
      }
      first = last;
    }
    lo = hi;
  }
  return Status::OK();
}

uint32_t Find(std::vector<uint32_t>* parent, uint32_t x) {
  uint32_t root = x;
  while ((*parent)[root] != root) root = (*parent)[root];
  while ((*parent)[x] != root) {
    const uint32_t next = (*parent)[x];
    (*parent)[x] = root;
    x = next;
  }
  return root;
}

// Applies pairs to the components, in order: a root is linked under the smaller root, so every
// group's parent is at most the group itself. Keeps (moved to the front, in order) only the pairs
// that joined two components, and returns their number: clustering needs no other pair, and the
// rest (the same components met again by runs of other keys, and the boundary's accepted pairs,
// found anew in band after band) were most of them (84-95% of a band's at 1M documents).
size_t Apply(std::span<SimilarPair> pairs, std::vector<uint32_t>* parent) {
  size_t kept = 0;
  for (const SimilarPair& p : pairs) {
    const uint32_t a = Find(parent, p.first), b = Find(parent, p.second);
    if (a == b) continue;
    (*parent)[std::max(a, b)] = std::min(a, b);
    pairs[kept++] = p;
  }
  return kept;
}

// Sorts and removes repeats (the same pair found in several bands, with the same estimate: one
// pair's sketches give one estimate), in place.
void SortUnique(std::vector<SimilarPair>* pairs) {
  std::sort(pairs->begin(), pairs->end(), [](const SimilarPair& x, const SimilarPair& y) {
    return x.first != y.first ? x.first < y.first : x.second < y.second;
  });
  pairs->erase(std::unique(pairs->begin(), pairs->end(),
                           [](const SimilarPair& x, const SimilarPair& y) {
                             return x.first == y.first && x.second == y.second;
                           }),
               pairs->end());
}

// Keeps the max_boundary boundary pairs nearest the threshold once there are twice as many (a
// selection in linear time, not a sort: this runs after every band); those dropped that the
// estimate accepts are appended to found->pairs. At a band's end, found->boundary_cutoff becomes
// the farthest distance kept.
void CapBoundary(double threshold, size_t max_boundary, bool band_end, Found* found) {
  std::vector<SimilarPair>* boundary = &found->boundary;
  std::vector<SimilarPair>* pairs = &found->pairs;
  if (boundary->size() <= 2 * max_boundary) return;
  // The pairs beyond the cutoff are beyond as many as this cut keeps (those the last band-end cut
  // kept, or nearer ones): dropped without the selection.
  const double cutoff = found->boundary_cutoff;
  const auto far = std::partition(boundary->begin(), boundary->end(), [&](const SimilarPair& p) {
    return std::abs(p.jaccard - threshold) <= cutoff;
  });
  if (far - boundary->begin() >= static_cast<std::ptrdiff_t>(max_boundary)) {
    for (auto p = far; p != boundary->end(); ++p) {
      if (p->jaccard >= threshold) pairs->push_back(*p);
    }
    boundary->erase(far, boundary->end());
  }
  if (boundary->size() <= max_boundary) return;
  const auto nearer = [threshold](const SimilarPair& x, const SimilarPair& y) {
    const double dx = std::abs(x.jaccard - threshold), dy = std::abs(y.jaccard - threshold);
    if (dx != dy) return dx < dy;
    return x.first != y.first ? x.first < y.first : x.second < y.second;
  };
  std::nth_element(boundary->begin(), boundary->begin() + static_cast<std::ptrdiff_t>(max_boundary),
                   boundary->end(), nearer);
  for (size_t i = max_boundary; i < boundary->size(); ++i) {
    if ((*boundary)[i].jaccard >= threshold) pairs->push_back((*boundary)[i]);
  }
  boundary->resize(max_boundary);
  if (!band_end) return;
  double farthest = 0;
  for (const SimilarPair& p : *boundary) {
    farthest = std::max(farthest, std::abs(p.jaccard - threshold));
  }
  found->boundary_cutoff = std::min(found->boundary_cutoff, farthest);
}

}  // namespace

SizeBound::SizeBound(double threshold, uint32_t unions) : threshold_(threshold), cuts_(unions) {
  for (uint32_t u = 0; u < unions; ++u) {
    uint32_t lo = 0, hi = u / 2 + 1;  // min(a, b) <= u / 2: the cut is at most u / 2 + 1
    while (lo < hi) {
      const uint32_t mid = lo + (hi - lo) / 2;
      if (BelowByDivision(mid, u - mid)) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    cuts_[u] = lo;
  }
}

Result<LinearJoinResult> LinearJoin(const LinearJoinInput& input,
                                    const LinearJoinOptions& options) {
  if (input.items >= UINT32_MAX) return Status::InvalidArgument("too many documents for one join");
  const Sketcher& sketcher = *input.sketcher;
  const size_t bands = static_cast<size_t>(sketcher.options().bands);
  std::unique_ptr<BoundaryMargins> margins;
  if (options.boundary_sigmas > 0) {
    margins = std::make_unique<BoundaryMargins>(sketcher.options(), options.threshold,
                                                options.boundary_sigmas);
  }
  const std::unique_ptr<FastReject> reject =
      FastReject::Create(sketcher, options.threshold, margins.get());
  const std::vector<uint64_t> joining = JoiningItems(input);
  std::vector<uint32_t> root(input.groups);
  for (uint32_t g = 0; g < input.groups; ++g) root[g] = g;
  const SizeBound size_bound(options.threshold,
                             2 * static_cast<uint32_t>(sketcher.options().bins) + 1);
  const BandContext context{input,
                            options,
                            root,
                            margins.get(),
                            reject.get(),
                            size_bound,
                            sketcher.sketch_bytes(),
                            static_cast<uint32_t>(sketcher.exact_capacity()),
                            {input.sketches, sketcher.sketch_bytes()},
                            input.group_of == nullptr ? nullptr : &joining};
  const size_t threads = static_cast<size_t>(std::max(options.threads, 1));
  // With gathering, half of the memory for the sort array and half for the gathered sketches.
  const size_t sort_bytes = input.release ? options.memory_bytes / 2 : options.memory_bytes;
  const size_t max_values = std::max<size_t>(sort_bytes / sizeof(BandEntry), kPrefixes);
  util_internal::PodArray<BandEntry> values;  // not zeroed: every entry is written
  GatherBuffers gather;
  if (input.release) gather.marked.assign((input.items + 63) / 64, 0);
  Found found;
  for (size_t band = 0; band < bands; ++band) {
    const size_t before = found.pairs.size();
    NEARDUP_RETURN_IF_ERROR(JoinBand(context, band, threads, max_values, &values, &gather, &found));
    CapBoundary(options.threshold, options.max_boundary, true, &found);
    found.pairs.resize(before + Apply(std::span(found.pairs).subspan(before), &root));
    // Full compression: parents are never above their groups, so one ascending pass leaves every
    // group pointing at its root.
    for (uint32_t g = 0; g < input.groups; ++g) root[g] = root[root[g]];
  }
  values = {};
  LinearJoinResult result;
  result.pairs = std::move(found.pairs);
  result.boundary = std::move(found.boundary);
  result.band_collisions = found.band_collisions;
  result.connected = found.connected;
  result.verifications = found.verifications;
  SortUnique(&result.pairs);
  SortUnique(&result.boundary);
  return result;
}

}  // namespace neardup::dedup_internal
