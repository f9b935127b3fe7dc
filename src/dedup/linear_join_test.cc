// The linear join against references: on runs of at most 64 members, against the all-pairs band
// join (FindSimilarPairs: the same components, a subset of its pairs with the same estimates) and
// against a brute-force model of its contract (every pair of a run not connected by the earlier
// bands or by the run's pairs so far is verified: exactly its pairs, boundary pairs and counters);
// on a long run, one component for a cluster with a linear number of verifications; the same result
// for every thread count and memory budget; items mapped to groups; errors of the band key reader
// and cancellation.
#include "dedup/linear_join.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <utility>

#include "dedup/signature_groups.h"
#include "neardup/cpu.h"
#include "simd_levels.h"
#include "testutil.h"

namespace neardup::dedup_internal {
namespace {

// Documents' band keys (document d's at d * bands) and sketches, computed by a real Sketcher.
struct Corpus {
  size_t bands = 0;
  size_t sketch_bytes = 0;
  std::vector<uint32_t> keys;
  std::vector<uint8_t> sketches;

  size_t size() const { return bands == 0 ? 0 : keys.size() / bands; }
  uint32_t key(uint64_t d, size_t band) const { return keys[d * bands + band]; }
  const uint8_t* sketch(uint64_t d) const { return sketches.data() + d * sketch_bytes; }
  // Appends a copy of document d of `from`.
  void AppendCopy(const Corpus& from, uint64_t d) {
    keys.insert(keys.end(), from.keys.begin() + static_cast<std::ptrdiff_t>(d * bands),
                from.keys.begin() + static_cast<std::ptrdiff_t>((d + 1) * bands));
    sketches.insert(sketches.end(), from.sketch(d), from.sketch(d) + sketch_bytes);
  }
};

Corpus EmptyCorpus(const Sketcher& sketcher) {
  Corpus c;
  c.bands = static_cast<size_t>(sketcher.options().bands);
  c.sketch_bytes = sketcher.sketch_bytes();
  return c;
}

void Add(const Sketcher& sketcher, const std::vector<uint64_t>& set, Corpus* c) {
  c->keys.resize(c->keys.size() + c->bands);
  c->sketches.resize(c->sketches.size() + c->sketch_bytes);
  const Status status = sketcher.Compute(set, std::span(c->sketches).last(c->sketch_bytes),
                                         std::span(c->keys).last(c->bands));
  ASSERT_TRUE(status.ok()) << status.ToString();
}

std::vector<uint64_t> RandomSet(std::mt19937_64& rng, size_t size) {
  std::vector<uint64_t> set(size);
  for (uint64_t& h : set) h = rng();
  return set;
}

// `base` with k of its hashes replaced by new ones: Jaccard (n - k) / (n + k) ~ `jaccard` with it.
std::vector<uint64_t> Variant(std::mt19937_64& rng, std::vector<uint64_t> base, double jaccard) {
  const double n = static_cast<double>(base.size());
  const auto k = static_cast<size_t>(std::llround(n * (1 - jaccard) / (1 + jaccard)));
  std::shuffle(base.begin(), base.end(), rng);
  base.resize(base.size() - k);
  for (size_t i = 0; i < k; ++i) base.push_back(rng());
  return base;
}

double Uniform(std::mt19937_64& rng, double low, double high) {
  return std::uniform_real_distribution<double>(low, high)(rng);
}

// A quarter of the sets small enough for the exact form (<= 44 features), the others 100..800.
size_t RandomSize(std::mt19937_64& rng) {
  return rng() % 4 == 0 ? 16 + rng() % 29 : 100 + rng() % 700;
}

bool ShareABand(const Corpus& c, uint64_t a, uint64_t b) {
  for (size_t j = 0; j < c.bands; ++j) {
    if (c.key(a, j) == c.key(b, j)) return true;
  }
  return false;
}

struct CorpusShape {
  size_t background = 0;    // unrelated documents
  size_t clusters = 0;      // 2..10 variants of a base at Jaccard 0.85..0.95 with it
  size_t middle_pairs = 0;  // pairs at Jaccard ~0.5 that share a band key
  size_t near_pairs = 0;    // pairs at Jaccard 0.7..0.9 (around the threshold 0.8)
};

CorpusShape DefaultShape() {
  if (testing::Sanitized()) return {600, 60, 40, 80};
  return {3000, 300, 200, 300};
}

// The documents of `shape` in random order.
Corpus MakeCorpus(const Sketcher& sketcher, const CorpusShape& shape, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::vector<uint64_t>> sets;
  for (size_t i = 0; i < shape.background; ++i) sets.push_back(RandomSet(rng, RandomSize(rng)));
  for (size_t i = 0; i < shape.clusters; ++i) {
    const std::vector<uint64_t> base = RandomSet(rng, RandomSize(rng));
    const size_t members = 2 + rng() % 9;
    sets.push_back(base);
    for (size_t m = 1; m < members; ++m)
      sets.push_back(Variant(rng, base, Uniform(rng, 0.85, 0.95)));
  }
  for (size_t found = 0; found < shape.middle_pairs;) {
    const std::vector<uint64_t> a = RandomSet(rng, 200 + rng() % 400);
    const std::vector<uint64_t> b = Variant(rng, a, 0.5);
    Corpus pair = EmptyCorpus(sketcher);
    Add(sketcher, a, &pair);
    Add(sketcher, b, &pair);
    if (!ShareABand(pair, 0, 1)) continue;
    sets.push_back(a);
    sets.push_back(b);
    ++found;
  }
  for (size_t i = 0; i < shape.near_pairs; ++i) {
    const std::vector<uint64_t> a = RandomSet(rng, RandomSize(rng));
    sets.push_back(a);
    sets.push_back(Variant(rng, a, Uniform(rng, 0.7, 0.9)));
  }
  std::shuffle(sets.begin(), sets.end(), rng);
  Corpus c = EmptyCorpus(sketcher);
  for (const auto& set : sets) Add(sketcher, set, &c);
  return c;
}

// The corpus's band keys through the reader callback, in chunks of an odd size. Internal when a
// read breaks the reader's contract (begin not aligned, or past the items).
BandKeyReader InMemoryReader(const Corpus& c, size_t chunk = 777) {
  return [&c, chunk](size_t band, uint64_t begin, uint64_t end, const auto& fn) -> Status {
    if (begin % kBandKeyAlignment != 0 || begin > end || end > c.size() || band >= c.bands) {
      return Status::Internal("band keys read out of the reader's contract");
    }
    std::vector<uint32_t> buffer;
    for (uint64_t first = begin; first < end; first += chunk) {
      buffer.clear();
      for (uint64_t d = first; d < std::min<uint64_t>(end, first + chunk); ++d) {
        buffer.push_back(c.key(d, band));
      }
      NEARDUP_RETURN_IF_ERROR(fn(first, buffer));
    }
    return Status::OK();
  };
}

LinearJoinInput InputOf(const Sketcher& sketcher, const Corpus& c,
                        const std::vector<uint32_t>* group_of = nullptr, uint32_t groups = 0) {
  LinearJoinInput input;
  input.sketcher = &sketcher;
  input.items = c.size();
  input.group_of = group_of;
  input.groups = group_of == nullptr ? static_cast<uint32_t>(c.size()) : groups;
  input.sketches = c.sketches.data();
  input.band_keys = InMemoryReader(c);
  return input;
}

LinearJoinOptions OptionsOf(double threshold, int threads, double boundary_sigmas = 0) {
  LinearJoinOptions options;
  options.threshold = threshold;
  options.threads = threads;
  options.boundary_sigmas = boundary_sigmas;
  return options;
}

class UnionFind {
 public:
  explicit UnionFind(size_t n) : parent_(n) {
    for (size_t i = 0; i < n; ++i) parent_[i] = static_cast<uint32_t>(i);
  }
  uint32_t Find(uint32_t x) {
    while (parent_[x] != x) x = parent_[x] = parent_[parent_[x]];
    return x;
  }
  // Whether a and b were in two components.
  bool Unite(uint32_t a, uint32_t b) {
    a = Find(a);
    b = Find(b);
    parent_[std::max(a, b)] = std::min(a, b);
    return a != b;
  }

 private:
  std::vector<uint32_t> parent_;
};

// Components of the graph of `pairs` over n nodes, as each node's smallest member.
std::vector<uint32_t> Components(size_t n, const std::vector<SimilarPair>& pairs) {
  UnionFind components(n);
  for (const SimilarPair& p : pairs) components.Unite(p.first, p.second);
  std::vector<uint32_t> out(n);
  for (uint32_t i = 0; i < n; ++i) out[i] = components.Find(i);
  return out;
}

bool ByPair(const SimilarPair& x, const SimilarPair& y) {
  return x.first != y.first ? x.first < y.first : x.second < y.second;
}

void SortUnique(std::vector<SimilarPair>* pairs) {
  std::stable_sort(pairs->begin(), pairs->end(), ByPair);
  pairs->erase(std::unique(pairs->begin(), pairs->end(),
                           [](const SimilarPair& x, const SimilarPair& y) {
                             return x.first == y.first && x.second == y.second;
                           }),
               pairs->end());
}

// The pair (first, second) of sorted `pairs`, or null.
const SimilarPair* FindPair(const std::vector<SimilarPair>& pairs, uint32_t first,
                            uint32_t second) {
  const SimilarPair key{first, second, 0};
  auto it = std::lower_bound(pairs.begin(), pairs.end(), key, ByPair);
  return it != pairs.end() && it->first == first && it->second == second ? &*it : nullptr;
}

struct Expected {
  std::vector<SimilarPair> pairs, boundary;
  uint64_t band_collisions = 0, connected = 0, verifications = 0;
  size_t longest_run = 0;  // members
};

// The linear join's contract for runs of at most 64 members, by brute force: band by band, every
// pair of members of a run (equal keys; items of kNoGroup and all but the first item of each group
// left out), in order, whose groups neither
// the pairs of the earlier bands nor the run's pairs so far connect is verified by
// Sketcher::Estimate and found as a pair (>= threshold, out of the margin) or a boundary pair
// (within the margin, not both in exact form); the pairs found that join two components, taken in
// order at the end of the band, are kept.
Expected ShortRunModel(const Sketcher& sketcher, const Corpus& c, double threshold,
                       double boundary_sigmas, const std::vector<uint32_t>* group_of = nullptr,
                       size_t groups = 0) {
  auto group = [&](uint32_t item) { return group_of == nullptr ? item : (*group_of)[item]; };
  std::unique_ptr<BoundaryMargins> margins;
  if (boundary_sigmas > 0) {
    margins = std::make_unique<BoundaryMargins>(sketcher.options(), threshold, boundary_sigmas);
  }
  const size_t capacity = sketcher.exact_capacity();
  UnionFind components(group_of == nullptr ? c.size() : groups);
  Expected e;
  for (size_t band = 0; band < c.bands; ++band) {
    std::vector<std::pair<uint32_t, uint32_t>> sorted;  // (key, item)
    std::vector<bool> seen(group_of == nullptr ? 0 : groups, false);
    for (uint32_t d = 0; d < c.size(); ++d) {
      if (group(d) == kNoGroup) continue;
      if (group_of != nullptr) {
        if (seen[group(d)]) continue;  // only the first item of a group joins
        seen[group(d)] = true;
      }
      sorted.emplace_back(c.key(d, band), d);
    }
    std::sort(sorted.begin(), sorted.end());
    std::vector<SimilarPair> found;
    for (size_t start = 0; start < sorted.size();) {
      size_t end = start + 1;
      while (end < sorted.size() && sorted[end].first == sorted[start].first) ++end;
      if (end - start > 1) {
        e.band_collisions += end - start;
        e.longest_run = std::max(e.longest_run, end - start);
      }
      // The run's own pairs connect its members too: a map over the roots as the band began.
      std::map<uint32_t, uint32_t> in_run;
      auto find = [&](uint32_t root) {
        while (in_run.count(root) && in_run[root] != root) root = in_run[root];
        return root;
      };
      for (size_t x = start; x < end; ++x) {
        for (size_t y = x + 1; y < end; ++y) {
          const uint32_t a = sorted[x].second, b = sorted[y].second;
          const uint32_t ga = group(a), gb = group(b);
          const uint32_t ra = find(components.Find(ga)), rb = find(components.Find(gb));
          if (ra == rb) {
            ++e.connected;
            continue;
          }
          ++e.verifications;
          const uint32_t fa = SketchFeatureCount(c.sketch(a)), fb = SketchFeatureCount(c.sketch(b));
          const bool exact = fa <= capacity && fb <= capacity;
          const double margin = margins == nullptr || exact ? 0 : (*margins)(fa, fb);
          const double estimate = sketcher.Estimate(c.sketch(a), c.sketch(b));
          const SimilarPair pair{std::min(ga, gb), std::max(ga, gb), static_cast<float>(estimate)};
          // J <= min / max for the exact Jaccard too: below the threshold, not a boundary pair.
          if (static_cast<double>(std::min(fa, fb)) / std::max(fa, fb) < threshold) continue;
          if (estimate < threshold - margin) continue;
          if (margin > 0 && estimate < threshold + margin) {
            e.boundary.push_back(pair);
          } else if (estimate >= threshold) {
            found.push_back(pair);
            in_run[std::max(ra, rb)] = std::min(ra, rb);
          }
        }
      }
      start = end;
    }
    // Only the pairs that join two components, in the order found, are kept.
    for (const SimilarPair& p : found) {
      if (components.Unite(p.first, p.second)) e.pairs.push_back(p);
    }
  }
  SortUnique(&e.pairs);
  SortUnique(&e.boundary);
  return e;
}

void ExpectSameResult(const LinearJoinResult& got, const LinearJoinResult& want) {
  EXPECT_EQ(got.pairs, want.pairs);
  EXPECT_EQ(got.boundary, want.boundary);
  EXPECT_EQ(got.band_collisions, want.band_collisions);
  EXPECT_EQ(got.connected, want.connected);
  EXPECT_EQ(got.verifications, want.verifications);
}

// The join of `corpus` with `options` at this memory and thread count gives `want`.
void ExpectSameResultWith(const Sketcher& sketcher, const Corpus& corpus, LinearJoinOptions options,
                          size_t memory, int threads, const LinearJoinResult& want) {
  SCOPED_TRACE(::testing::Message() << "memory " << memory << " threads " << threads);
  options.memory_bytes = memory;
  options.threads = threads;
  auto got = LinearJoin(InputOf(sketcher, corpus), options);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  ExpectSameResult(*got, want);
}

// Every pair of `pairs` is in one component of `components` (by each node's smallest member).
void ExpectConnected(const std::vector<uint32_t>& components,
                     const std::vector<SimilarPair>& pairs) {
  for (const SimilarPair& p : pairs) {
    ASSERT_EQ(components[p.first], components[p.second]) << p.first << " " << p.second;
  }
}

TEST(LinearJoinTest, ShortRunsConnectTheComponentsOfAllPairs) {
  auto sketcher = Sketcher::Create({});
  ASSERT_TRUE(sketcher.ok());
  const Corpus corpus = MakeCorpus(**sketcher, DefaultShape(), 11);
  const size_t n = corpus.size();
  for (double threshold : {0.8, 0.5}) {
    SCOPED_TRACE(threshold);
    BandJoinStats stats;
    BandJoinOptions all_pairs;
    all_pairs.threshold = threshold;
    all_pairs.threads = 1;
    auto all = FindSimilarPairs(**sketcher, corpus.keys, corpus.sketches, all_pairs, &stats);
    ASSERT_TRUE(all.ok()) << all.status().ToString();
    const Expected expected = ShortRunModel(**sketcher, corpus, threshold, 0);
    ASSERT_LE(expected.longest_run, 64u) << "the corpus must have short runs only";
    const std::vector<uint32_t> components = Components(n, *all);
    size_t joined = 0;
    for (uint32_t d = 0; d < n; ++d) joined += components[d] != d;
    EXPECT_GT(joined, n / 5) << "too few near-duplicates for a meaningful test";
    for (int threads : {1, 3}) {
      SCOPED_TRACE(threads);
      auto got = LinearJoin(InputOf(**sketcher, corpus), OptionsOf(threshold, threads));
      ASSERT_TRUE(got.ok()) << got.status().ToString();
      EXPECT_EQ(Components(n, got->pairs), components);
      for (const SimilarPair& p : got->pairs) {
        const SimilarPair* reference = FindPair(*all, p.first, p.second);
        ASSERT_NE(reference, nullptr) << p.first << " " << p.second << " not an all-pairs pair";
        EXPECT_EQ(p, *reference);
      }
      // Pairs connected through earlier bands are left out (with clusters of up to 10 members),
      // and so are those that join what another run's pairs joined: a spanning forest.
      EXPECT_LT(got->pairs.size(), all->size());
      EXPECT_EQ(got->pairs.size(), joined);
      EXPECT_TRUE(got->boundary.empty());
      // Every pair of every run is verified or skipped as connected: what the all-pairs join sees.
      EXPECT_EQ(got->verifications + got->connected, stats.band_collisions);
      EXPECT_GT(got->connected, 0u);
      // Exactly the pairs and the counters of the contract.
      EXPECT_EQ(got->pairs, expected.pairs);
      EXPECT_EQ(got->verifications, expected.verifications);
      EXPECT_EQ(got->connected, expected.connected);
      EXPECT_EQ(got->band_collisions, expected.band_collisions);
    }
  }
}

// Verify rejects most pairs by their differing bits alone (FastReject, a kernel for each SIMD
// level); its decisions are those of the estimate, margins included: the model verifies with
// Sketcher::Estimate.
// Also with other sketches: 256 1-bit bins (a 32-byte payload), and 2-bit bins (no FastReject: one
// SIMD level).
TEST(LinearJoinTest, ShortRunsMatchTheModelOnEverySimdLevel) {
  struct Case {
    SketchOptions sketch;
    double threshold;
  };
  for (const Case& k :
       {Case{{}, 0.8}, Case{{}, 0.5}, Case{{256, 1, 16, 5}, 0.8}, Case{{512, 2, 20, 6}, 0.8}}) {
    auto sketcher = Sketcher::Create(k.sketch);
    ASSERT_TRUE(sketcher.ok());
    const Corpus corpus = MakeCorpus(**sketcher, DefaultShape(), 23);
    for (const double sigmas : {0.0, 3.0}) {
      const Expected expected = ShortRunModel(**sketcher, corpus, k.threshold, sigmas);
      ASSERT_LE(expected.longest_run, 64u);
      EXPECT_GT(expected.pairs.size(), 100u);
      if (sigmas > 0) {
        EXPECT_GT(expected.boundary.size(), 10u);
      }
      std::vector<SimdLevel> levels = testing::SimdLevelsToTest();
      if (k.sketch.bits_per_bin != 1) levels = {DetectedSimdLevel()};
      for (const SimdLevel level : levels) {
        SCOPED_TRACE(::testing::Message()
                     << k.sketch.bins << "x" << k.sketch.bits_per_bin << " t " << k.threshold
                     << " sigmas " << sigmas << " " << SimdLevelName(level));
        SetSimdLevel(level);
        auto got = LinearJoin(InputOf(**sketcher, corpus), OptionsOf(k.threshold, 2, sigmas));
        ASSERT_TRUE(got.ok()) << got.status().ToString();
        EXPECT_EQ(got->pairs, expected.pairs);
        EXPECT_EQ(got->boundary, expected.boundary);
        EXPECT_EQ(got->verifications, expected.verifications);
        EXPECT_EQ(got->connected, expected.connected);
      }
      SetSimdLevel(DetectedSimdLevel());
    }
  }
}

// Documents labelled with their cluster (kUnrelated: none).
constexpr uint32_t kUnrelated = UINT32_MAX;
struct LabelledSet {
  std::vector<uint64_t> set;
  uint32_t cluster = kUnrelated;
};

// The documents in one run: band 0's key is the same for all; with `other_bands_random`, every
// other band key is random, so that only that run can join them.
Corpus OneRunCorpus(const Sketcher& sketcher, const std::vector<LabelledSet>& sets,
                    bool other_bands_random, uint64_t seed) {
  std::mt19937_64 rng(seed);
  Corpus c = EmptyCorpus(sketcher);
  for (const LabelledSet& s : sets) Add(sketcher, s.set, &c);
  for (size_t d = 0; d < c.size(); ++d) {
    c.keys[d * c.bands] = 0x12345678;
    for (size_t j = 1; j < c.bands && other_bands_random; ++j) {
      c.keys[d * c.bands + j] = static_cast<uint32_t>(rng());
    }
  }
  return c;
}

// The join of a corpus of one long run at threshold 0.8: every cluster one component of its own,
// unrelated documents alone, pairs with their estimates, at most 200 verifications per item.
void ExpectClustersJoined(const Sketcher& sketcher, const Corpus& corpus,
                          const std::vector<LabelledSet>& sets) {
  const size_t n = corpus.size();
  for (int threads : {1, 2}) {
    SCOPED_TRACE(threads);
    auto got = LinearJoin(InputOf(sketcher, corpus), OptionsOf(0.8, threads));
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    const std::vector<uint32_t> components = Components(n, got->pairs);
    std::map<uint32_t, uint32_t> root_of_cluster;
    size_t apart = 0, unrelated_joined = 0;
    for (uint32_t d = 0; d < n; ++d) {
      if (sets[d].cluster == kUnrelated) {
        unrelated_joined += components[d] != d;
      } else {
        apart +=
            root_of_cluster.emplace(sets[d].cluster, components[d]).first->second != components[d];
      }
    }
    EXPECT_EQ(apart, 0u) << "members left out of their cluster's component";
    EXPECT_EQ(unrelated_joined, 0u);
    std::set<uint32_t> roots;
    for (const auto& [cluster, root] : root_of_cluster) roots.insert(root);
    EXPECT_EQ(roots.size(), root_of_cluster.size()) << "clusters joined together";
    for (const SimilarPair& p : got->pairs) {
      ASSERT_LT(p.first, p.second);
      const double estimate = sketcher.Estimate(corpus.sketch(p.first), corpus.sketch(p.second));
      EXPECT_EQ(p.jaccard, static_cast<float>(estimate));
      EXPECT_GE(estimate, 0.8);
    }
    EXPECT_TRUE(std::is_sorted(got->pairs.begin(), got->pairs.end(), ByPair));
    EXPECT_GE(got->band_collisions, n);  // band 0's run
    // All pairs would be n^2 / 2; a bounded number of verifications per member and band.
    EXPECT_LE(got->verifications, 200 * n);
  }
}

TEST(LinearJoinTest, LongRunJoinsNearCopiesWithLinearWork) {
  auto sketcher = Sketcher::Create({});
  ASSERT_TRUE(sketcher.ok());
  const size_t copies = testing::Sanitized() ? 1500 : 5000;
  const size_t unrelated = testing::Sanitized() ? 600 : 2000;
  std::mt19937_64 rng(21);
  const std::vector<uint64_t> base = RandomSet(rng, 400);
  std::vector<LabelledSet> sets = {{base, 0}};
  for (size_t i = 0; i < copies; ++i)
    sets.push_back({Variant(rng, base, Uniform(rng, 0.92, 0.98)), 0});
  for (size_t i = 0; i < unrelated; ++i) sets.push_back({RandomSet(rng, RandomSize(rng))});
  std::shuffle(sets.begin(), sets.end(), rng);
  // The copies also share their other band keys (long runs of copies only).
  ExpectClustersJoined(**sketcher, OneRunCorpus(**sketcher, sets, false, 1), sets);
}

TEST(LinearJoinTest, LongRunRepresentativeFindsAClusterAmongUnrelated) {
  // The run's first member is a representative: the near-copies of it that follow, scattered
  // among unrelated documents of the same size (too far apart for the neighbours by size), join it.
  auto sketcher = Sketcher::Create({});
  ASSERT_TRUE(sketcher.ok());
  const size_t copies = testing::Sanitized() ? 150 : 300;
  std::mt19937_64 rng(22);
  const std::vector<uint64_t> base = RandomSet(rng, 400);
  std::vector<LabelledSet> sets;
  for (size_t i = 0; i < copies; ++i)
    sets.push_back({Variant(rng, base, Uniform(rng, 0.92, 0.98)), 0});
  for (size_t i = 0; i < 10 * copies; ++i) sets.push_back({RandomSet(rng, 400)});
  std::shuffle(sets.begin(), sets.end(), rng);
  sets.insert(sets.begin(), {base, 0});
  ExpectClustersJoined(**sketcher, OneRunCorpus(**sketcher, sets, true, 2), sets);
}

TEST(LinearJoinTest, LongRunNeighboursFindClustersBeyondTheRepresentatives) {
  // The first 40 members (unrelated) take every representative; 20 clusters of 10 near-copies,
  // each of its own size, are found by the neighbours by size.
  auto sketcher = Sketcher::Create({});
  ASSERT_TRUE(sketcher.ok());
  std::mt19937_64 rng(23);
  std::vector<LabelledSet> sets;
  for (uint32_t c = 0; c < 20; ++c) {
    const std::vector<uint64_t> base = RandomSet(rng, 100 + 40 * c);
    for (size_t i = 0; i < 10; ++i)
      sets.push_back({Variant(rng, base, Uniform(rng, 0.92, 0.98)), c});
  }
  for (size_t i = 0; i < 100; ++i) sets.push_back({RandomSet(rng, 1000 + rng() % 1000)});
  std::shuffle(sets.begin(), sets.end(), rng);
  for (size_t i = 0; i < 40; ++i) sets.insert(sets.begin(), {RandomSet(rng, 1000 + rng() % 1000)});
  ExpectClustersJoined(**sketcher, OneRunCorpus(**sketcher, sets, true, 3), sets);
}

// In a long run each member is verified against its next 120 neighbours in the order of a 32-bit
// word of the sketches (band 0's: the payload's fourth), within the size bound: every pair there
// whose estimate reaches the threshold ends in one component, whatever else the run holds. One run
// (band 0) of pairs of near-copies among unrelated documents of similar sizes.
TEST(LinearJoinTest, LongRunWindowJoinsEveryPairItReaches) {
  auto sketcher = Sketcher::Create({});
  ASSERT_TRUE(sketcher.ok());
  std::mt19937_64 rng(24);
  std::vector<LabelledSet> sets;
  const uint32_t pairs = testing::Sanitized() ? 200 : 600;
  for (uint32_t c = 0; c < pairs; ++c) {
    const std::vector<uint64_t> base = RandomSet(rng, 300 + rng() % 200);
    sets.push_back({base, c});
    sets.push_back({Variant(rng, base, Uniform(rng, 0.82, 0.95)), c});
  }
  for (size_t i = 0; i < 2 * pairs; ++i) sets.push_back({RandomSet(rng, 300 + rng() % 200)});
  std::shuffle(sets.begin(), sets.end(), rng);
  const Corpus corpus = OneRunCorpus(**sketcher, sets, true, 4);
  const size_t n = corpus.size();
  std::vector<std::pair<uint32_t, uint32_t>> order;  // (band 0's word, member)
  for (uint32_t d = 0; d < n; ++d) {
    uint32_t word;
    std::memcpy(&word, corpus.sketch(d) + 4 + 4 * 3, sizeof(word));
    order.emplace_back(word, d);
  }
  std::sort(order.begin(), order.end());
  for (int threads : {1, 2}) {
    SCOPED_TRACE(threads);
    auto got = LinearJoin(InputOf(**sketcher, corpus), OptionsOf(0.8, threads));
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    const std::vector<uint32_t> components = Components(n, got->pairs);
    size_t reached = 0;
    for (size_t x = 0; x < n; ++x) {
      for (size_t y = x + 1; y < n && y <= x + 120; ++y) {
        const uint32_t a = order[x].second, b = order[y].second;
        const uint32_t fa = SketchFeatureCount(corpus.sketch(a)),
                       fb = SketchFeatureCount(corpus.sketch(b));
        if (static_cast<double>(std::min(fa, fb)) / std::max(fa, fb) < 0.8 ||
            (*sketcher)->Estimate(corpus.sketch(a), corpus.sketch(b)) < 0.8) {
          continue;
        }
        ++reached;
        EXPECT_EQ(components[a], components[b]) << "members " << a << " and " << b;
      }
    }
    EXPECT_GT(reached, pairs / 3);
  }
}

// A corpus of short and long runs, over more items than one pass of the smallest sort array holds
// (65536 values): the corpus of DefaultShape three times (identical copies), a long run of 300
// near-copies sharing band 3's key, and filler documents with random keys.
Corpus MakeLargeCorpus(const Sketcher& sketcher) {
  std::mt19937_64 rng(31);
  const Corpus real = MakeCorpus(sketcher, DefaultShape(), 13);
  std::vector<uint64_t> order;
  for (uint64_t d = 0; d < real.size(); ++d) order.insert(order.end(), {d, d, d});
  Corpus cluster = EmptyCorpus(sketcher);
  const std::vector<uint64_t> base = RandomSet(rng, 300);
  for (size_t i = 0; i < 300; ++i)
    Add(sketcher, Variant(rng, base, Uniform(rng, 0.8, 0.97)), &cluster);
  for (size_t d = 0; d < cluster.size(); ++d) cluster.keys[d * cluster.bands + 3] = 77;
  const size_t filler = testing::Sanitized() ? 70000 : 140000;
  for (size_t i = 0; i < filler; ++i) order.push_back(UINT64_MAX - rng() % real.size());
  for (uint64_t d = 0; d < cluster.size(); ++d) order.push_back(uint64_t{1} << 40 | d);
  std::shuffle(order.begin(), order.end(), rng);
  Corpus c = EmptyCorpus(sketcher);
  for (const uint64_t o : order) {
    if (o < real.size()) {
      c.AppendCopy(real, o);
    } else if (o >> 40 == 1) {
      c.AppendCopy(cluster, o & 0xFFFFFFFF);
    } else {
      c.AppendCopy(real, UINT64_MAX - o);
      for (size_t j = 0; j < c.bands; ++j) c.keys[c.keys.size() - c.bands + j] = rng();
    }
  }
  return c;
}

TEST(LinearJoinTest, SameResultForEveryThreadCountAndMemory) {
  auto sketcher = Sketcher::Create({});
  ASSERT_TRUE(sketcher.ok());
  const Corpus corpus = MakeLargeCorpus(**sketcher);
  ASSERT_GT(corpus.size(), 65536u + 4096u);  // two passes of the smallest sort array at least
  ASSERT_NE(corpus.size() % kBandKeyAlignment, 0u);
  LinearJoinOptions options = OptionsOf(0.8, 1, 3);
  options.memory_bytes = size_t{1} << 30;
  auto reference = LinearJoin(InputOf(**sketcher, corpus), options);
  ASSERT_TRUE(reference.ok()) << reference.status().ToString();
  EXPECT_GT(reference->pairs.size(), 1000u);
  EXPECT_GT(reference->boundary.size(), 10u);
  // 1 << 16 bytes: the smallest sort array (65536 values), several passes per band.
  for (size_t memory : {size_t{1} << 16, size_t{1} << 20, size_t{1} << 30}) {
    for (int threads : {1, 2, 3}) {
      if (memory == size_t{1} << 30 && threads == 1) continue;
      // Sanitized (slow): the smallest and the largest memory, 1 and 3 threads.
      if (testing::Sanitized() && (memory == size_t{1} << 20 || threads == 2)) continue;
      ExpectSameResultWith(**sketcher, corpus, options, memory, threads, *reference);
    }
  }
}

// Long runs too give the same result on every SIMD level.
TEST(LinearJoinTest, LongRunsSameOnEverySimdLevel) {
  auto sketcher = Sketcher::Create({});
  ASSERT_TRUE(sketcher.ok());
  const Corpus corpus = MakeLargeCorpus(**sketcher);
  const LinearJoinOptions options = OptionsOf(0.8, 2, 3);
  SetSimdLevel(SimdLevel::kPortable);
  auto reference = LinearJoin(InputOf(**sketcher, corpus), options);
  ASSERT_TRUE(reference.ok()) << reference.status().ToString();
  EXPECT_GT(reference->pairs.size(), 1000u);
  for (const SimdLevel level : testing::SimdLevelsToTest()) {
    if (level == SimdLevel::kPortable) continue;
    SCOPED_TRACE(SimdLevelName(level));
    SetSimdLevel(level);
    auto got = LinearJoin(InputOf(**sketcher, corpus), options);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    ExpectSameResult(*got, *reference);
  }
  SetSimdLevel(DetectedSimdLevel());
}

// A small max_boundary: the list is cut during bands and after them, the same way whatever the
// threads and the memory; the pairs cut that the estimate accepts connect their components, so the
// clusters are those of the uncut join or coarser.
TEST(LinearJoinTest, BoundaryListCutDuringAndAfterBands) {
  auto sketcher = Sketcher::Create({});
  ASSERT_TRUE(sketcher.ok());
  const Corpus corpus = MakeLargeCorpus(**sketcher);
  const size_t n = corpus.size();
  LinearJoinOptions options = OptionsOf(0.8, 2, 3);
  auto whole = LinearJoin(InputOf(**sketcher, corpus), options);
  ASSERT_TRUE(whole.ok()) << whole.status().ToString();
  ASSERT_GT(whole->boundary.size(), 40u);
  options.max_boundary = 1;  // cut past 4 during a band, past 2 after it
  auto reference = LinearJoin(InputOf(**sketcher, corpus), options);
  ASSERT_TRUE(reference.ok()) << reference.status().ToString();
  EXPECT_LE(reference->boundary.size(), 2 * options.max_boundary);
  EXPECT_GE(reference->boundary.size(), 1u);
  ExpectConnected(Components(n, reference->pairs), whole->pairs);
  // A boundary pair cut from the list is decided by its estimate: accepted, its groups are joined.
  {
    const std::vector<uint32_t> components = Components(n, reference->pairs);
    size_t cut_and_accepted = 0;
    for (const SimilarPair& p : whole->boundary) {
      if (p.jaccard < options.threshold ||
          std::binary_search(reference->boundary.begin(), reference->boundary.end(), p,
                             [](const SimilarPair& x, const SimilarPair& y) {
                               return x.first != y.first ? x.first < y.first : x.second < y.second;
                             })) {
        continue;
      }
      ++cut_and_accepted;
      EXPECT_EQ(components[p.first], components[p.second]) << p.first << " " << p.second;
    }
    EXPECT_GT(cut_and_accepted, 10u);
  }
  for (size_t memory : {size_t{1} << 16, size_t{1} << 30}) {
    for (int threads : {1, 3}) {
      ExpectSameResultWith(**sketcher, corpus, options, memory, threads, *reference);
    }
  }
  // 0: every boundary pair is decided by its estimate, as soon as its block is joined.
  options.max_boundary = 0;
  auto none = LinearJoin(InputOf(**sketcher, corpus), options);
  ASSERT_TRUE(none.ok()) << none.status().ToString();
  EXPECT_TRUE(none->boundary.empty());
  ExpectConnected(Components(n, none->pairs), whole->pairs);
}

// With `release` the join copies each pass's run members' sketches into a buffer of its own (in
// parts when they do not fit, or reads the input when not even a block's fit) and releases what it
// has read: the same result every way, and every release within the items.
TEST(LinearJoinTest, GatheredSketchesGiveTheSameResult) {
  auto sketcher = Sketcher::Create({});
  ASSERT_TRUE(sketcher.ok());
  const Corpus corpus = MakeLargeCorpus(**sketcher);
  LinearJoinOptions options = OptionsOf(0.8, 2, 3);
  options.memory_bytes = size_t{1} << 30;
  auto reference = LinearJoin(InputOf(**sketcher, corpus), options);
  ASSERT_TRUE(reference.ok()) << reference.status().ToString();
  // 1 << 16: no room for any gathered sketch (read from the input); 2 MiB: passes of 65,536 keys
  // (1 MiB) and about 7,900 sketches at a time, a band's in parts; 1 << 30: all at once.
  for (size_t memory : {size_t{1} << 16, size_t{2} << 20, size_t{1} << 30}) {
    for (int threads : {1, 3}) {
      if (testing::Sanitized() && threads == 1) continue;
      SCOPED_TRACE(::testing::Message() << "memory " << memory << " threads " << threads);
      std::mutex mutex;
      uint64_t released = 0, everything = 0;
      bool outside = false;
      LinearJoinInput input = InputOf(**sketcher, corpus);
      input.release = [&](uint64_t begin, uint64_t end) {
        std::lock_guard<std::mutex> lock(mutex);
        outside |= begin >= end || end > corpus.size();
        released += end - begin;
        everything += begin == 0 && end == corpus.size();
      };
      options.memory_bytes = memory;
      options.threads = threads;
      auto got = LinearJoin(input, options);
      ASSERT_TRUE(got.ok()) << got.status().ToString();
      ExpectSameResult(*got, *reference);
      EXPECT_FALSE(outside);
      // A pass that reads sketches releases every item once: read in order, or all of them after
      // reading at random.
      EXPECT_EQ(released % corpus.size(), 0u);
      EXPECT_GT(released, 0u);
      if (memory == size_t{1} << 16) {
        EXPECT_EQ(everything * corpus.size(), released);
      } else {
        EXPECT_EQ(everything, 0u);
      }
      if (memory == size_t{2} << 20) {
        EXPECT_GT(released / corpus.size(), corpus.bands);  // some band in parts
      }
    }
  }
}

// A pair whose sizes bound its Jaccard below the threshold (J <= |A| / |B|) is not a near-duplicate
// whatever its estimate, nor a boundary pair: its exact Jaccard could only reject it. Subsets of
// one set at ratios 0.74..0.79 of its size have estimates within the margin of 0.8 (they would be
// boundary pairs by their estimates alone); those at 0.81..0.86 are boundary pairs or pairs. Both
// joins, with and without the boundary decision.
TEST(LinearJoinTest, PairsBelowTheSizeBoundAreNotBoundaryPairs) {
  auto sketcher = Sketcher::Create({});
  ASSERT_TRUE(sketcher.ok());
  const double t = 0.8;
  std::mt19937_64 rng(5);
  Corpus corpus = EmptyCorpus(**sketcher);
  for (int cluster = 0; cluster < 20; ++cluster) {
    const std::vector<uint64_t> base = RandomSet(rng, 1500 + rng() % 1000);
    Add(**sketcher, base, &corpus);
    for (const double ratio : {0.74, 0.76, 0.78, 0.79, 0.81, 0.83, 0.86}) {
      const auto size = static_cast<size_t>(std::llround(ratio * static_cast<double>(base.size())));
      Add(**sketcher, std::vector<uint64_t>(base.begin(), base.begin() + size), &corpus);
    }
  }
  for (int i = 0; i < 200; ++i) Add(**sketcher, RandomSet(rng, 100 + rng() % 2000), &corpus);
  const BoundaryMargins margins((*sketcher)->options(), t, 3);
  auto features = [&](uint32_t d) { return SketchFeatureCount(corpus.sketch(d)); };
  auto bound = [&](uint32_t a, uint32_t b) {
    return static_cast<double>(std::min(features(a), features(b))) /
           std::max(features(a), features(b));
  };
  // Pairs below the bound whose estimates alone would make them boundary pairs: the case at hand.
  size_t in_margin = 0;
  for (uint32_t a = 0; a < corpus.size(); ++a) {
    for (uint32_t b = a + 1; b < corpus.size(); ++b) {
      if (bound(a, b) >= t || !ShareABand(corpus, a, b)) continue;
      in_margin += (*sketcher)->Estimate(corpus.sketch(a), corpus.sketch(b)) >=
                   t - margins(features(a), features(b));
    }
  }
  EXPECT_GT(in_margin, 20u);
  for (const double sigmas : {0.0, 3.0}) {
    SCOPED_TRACE(::testing::Message() << "sigmas " << sigmas);
    auto linear = LinearJoin(InputOf(**sketcher, corpus), OptionsOf(t, 2, sigmas));
    ASSERT_TRUE(linear.ok()) << linear.status().ToString();
    BandJoinOptions all_pairs;
    all_pairs.threshold = t;
    all_pairs.threads = 2;
    all_pairs.boundary_sigmas = sigmas;
    std::vector<SimilarPair> all_boundary;
    auto all = FindSimilarPairs(**sketcher, corpus.keys, corpus.sketches, all_pairs, nullptr,
                                sigmas > 0 ? &all_boundary : nullptr);
    ASSERT_TRUE(all.ok()) << all.status().ToString();
    for (const auto* list : {&linear->pairs, &linear->boundary, &*all, &all_boundary}) {
      for (const SimilarPair& p : *list) {
        EXPECT_GE(bound(p.first, p.second), t) << p.first << ", " << p.second;
      }
    }
    if (sigmas > 0) {
      EXPECT_GT(all_boundary.size(), 10u);
      EXPECT_FALSE(linear->boundary.empty());
    }
    EXPECT_GT(all->size(), 100u);
  }
}

// The band in which documents a and b first share a key (bands if none).
size_t FirstSharedBand(const Corpus& c, uint32_t a, uint32_t b) {
  size_t j = 0;
  while (j < c.bands && c.key(a, j) != c.key(b, j)) ++j;
  return j;
}

TEST(LinearJoinTest, BoundaryPairsAreThoseOfTheAllPairsJoin) {
  auto sketcher = Sketcher::Create({});
  ASSERT_TRUE(sketcher.ok());
  const Corpus corpus = MakeCorpus(**sketcher, DefaultShape(), 17);
  const double threshold = 0.8, sigmas = 3;
  BandJoinOptions all_pairs;
  all_pairs.threshold = threshold;
  all_pairs.threads = 1;
  all_pairs.boundary_sigmas = sigmas;
  std::vector<SimilarPair> all_boundary;
  auto all =
      FindSimilarPairs(**sketcher, corpus.keys, corpus.sketches, all_pairs, nullptr, &all_boundary);
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  const Expected expected = ShortRunModel(**sketcher, corpus, threshold, sigmas);
  ASSERT_LE(expected.longest_run, 64u);

  auto got = LinearJoin(InputOf(**sketcher, corpus), OptionsOf(threshold, 2, sigmas));
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->pairs, expected.pairs);
  EXPECT_EQ(got->boundary, expected.boundary);
  EXPECT_EQ(Components(corpus.size(), got->pairs), Components(corpus.size(), *all));

  // Every boundary pair of the all-pairs join is a boundary pair here (never a pair), unless the
  // pairs of the bands up to the first it shares already connect its documents (then it is not
  // verified).
  const BoundaryMargins margins((*sketcher)->options(), threshold, sigmas);
  const uint32_t capacity = static_cast<uint32_t>((*sketcher)->exact_capacity());
  std::vector<std::vector<SimilarPair>> pairs_by_band(corpus.bands + 1);
  for (const SimilarPair& p : got->pairs) {
    pairs_by_band[FirstSharedBand(corpus, p.first, p.second)].push_back(p);
  }
  std::vector<std::vector<SimilarPair>> boundary_by_band(corpus.bands + 1);
  for (const SimilarPair& p : all_boundary) {
    const uint32_t fa = SketchFeatureCount(corpus.sketch(p.first));
    const uint32_t fb = SketchFeatureCount(corpus.sketch(p.second));
    EXPECT_FALSE(fa <= capacity && fb <= capacity) << "exact pairs are decided, not boundary";
    EXPECT_LT(std::abs(p.jaccard - threshold), margins(fa, fb) + 1e-6);
    EXPECT_EQ(FindPair(got->pairs, p.first, p.second), nullptr) << p.first << " " << p.second;
    boundary_by_band[FirstSharedBand(corpus, p.first, p.second)].push_back(p);
  }
  UnionFind earlier(corpus.size());
  size_t in_boundary = 0, connected_before = 0;
  for (size_t band = 0; band < corpus.bands; ++band) {
    // The pairs of this band count too: a run's pairs connect its later members.
    for (const SimilarPair& p : pairs_by_band[band]) earlier.Unite(p.first, p.second);
    for (const SimilarPair& p : boundary_by_band[band]) {
      const SimilarPair* found = FindPair(got->boundary, p.first, p.second);
      if (found != nullptr) {
        EXPECT_EQ(*found, p);
        ++in_boundary;
      } else {
        EXPECT_EQ(earlier.Find(p.first), earlier.Find(p.second))
            << p.first << " " << p.second << " (estimate " << p.jaccard
            << ") is a boundary pair of the all-pairs join, missing and not connected by band "
            << band;
        ++connected_before;
      }
    }
  }
  EXPECT_GT(in_boundary, 20u);
  // And nothing else: every boundary pair here is one of the all-pairs join's.
  EXPECT_EQ(got->boundary.size(), in_boundary);
  // The exact-form near pairs are decided: none is a boundary pair.
  for (const SimilarPair& p : got->boundary) {
    EXPECT_FALSE(SketchFeatureCount(corpus.sketch(p.first)) <= capacity &&
                 SketchFeatureCount(corpus.sketch(p.second)) <= capacity);
  }
  RecordProperty("boundary_pairs", static_cast<int>(in_boundary));
  RecordProperty("boundary_pairs_already_connected", static_cast<int>(connected_before));
}

TEST(LinearJoinTest, ItemsMappedToGroups) {
  auto sketcher = Sketcher::Create({});
  ASSERT_TRUE(sketcher.ok());
  CorpusShape shape = DefaultShape();
  shape.background /= 2;
  const Corpus groups = MakeCorpus(**sketcher, shape, 19);
  const auto group_count = static_cast<uint32_t>(groups.size());
  // Every group's documents (1..3, identical signatures), and left-out documents that copy a
  // group's signature: in the join they would pair with it.
  std::mt19937_64 rng(23);
  std::vector<uint32_t> order;
  for (uint32_t g = 0; g < group_count; ++g) {
    for (uint64_t k = 1 + rng() % 3; k > 0; --k) order.push_back(g);
  }
  const size_t left_out = group_count / 4;
  for (size_t i = 0; i < left_out; ++i) {
    order.push_back(group_count + static_cast<uint32_t>(rng() % group_count));
  }
  std::shuffle(order.begin(), order.end(), rng);
  Corpus items = EmptyCorpus(**sketcher);
  std::vector<uint32_t> group_of;
  for (const uint32_t o : order) {
    items.AppendCopy(groups, o % group_count);
    group_of.push_back(o < group_count ? o : kNoGroup);
  }
  const double threshold = 0.8, sigmas = 3;
  const Expected expected =
      ShortRunModel(**sketcher, items, threshold, sigmas, &group_of, group_count);
  ASSERT_LE(expected.longest_run, 64u);
  auto by_group = LinearJoin(InputOf(**sketcher, groups), OptionsOf(threshold, 1, sigmas));
  ASSERT_TRUE(by_group.ok()) << by_group.status().ToString();
  for (int threads : {1, 2}) {
    SCOPED_TRACE(threads);
    auto got = LinearJoin(InputOf(**sketcher, items, &group_of, group_count),
                          OptionsOf(threshold, threads, sigmas));
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    // The members of a run come in another order than the groups', so other pairs of a run may be
    // the ones verified: the same components.
    EXPECT_EQ(Components(group_count, got->pairs), Components(group_count, by_group->pairs));
    EXPECT_EQ(got->pairs, expected.pairs);
    EXPECT_EQ(got->boundary, expected.boundary);
    EXPECT_EQ(got->band_collisions, expected.band_collisions);
    EXPECT_EQ(got->connected, expected.connected);
    EXPECT_EQ(got->verifications, expected.verifications);
    for (const auto* list : {&got->pairs, &got->boundary}) {
      for (const SimilarPair& p : *list) {
        EXPECT_LT(p.first, p.second);
        EXPECT_LT(p.second, group_count);
      }
    }
  }
  EXPECT_GT(by_group->pairs.size(), 100u);
}

TEST(LinearJoinTest, ReaderErrorsAndCancellation) {
  auto sketcher = Sketcher::Create({});
  ASSERT_TRUE(sketcher.ok());
  CorpusShape shape = DefaultShape();
  shape.background = 2000;  // the second thread reads items from 1024 on
  const Corpus corpus = MakeCorpus(**sketcher, shape, 29);
  for (int threads : {1, 2}) {
    for (uint64_t failing_from : {uint64_t{0}, uint64_t{1024}}) {
      SCOPED_TRACE(::testing::Message() << threads << " threads, fails from " << failing_from);
      LinearJoinInput input = InputOf(**sketcher, corpus);
      const BandKeyReader keys = input.band_keys;
      // Band 5 fails for the reads that include item failing_from, after a first chunk.
      input.band_keys = [&](size_t band, uint64_t begin, uint64_t end, const auto& fn) -> Status {
        if (band != 5 || end <= failing_from) return keys(band, begin, end, fn);
        return keys(band, begin, end, [&](uint64_t first, std::span<const uint32_t> chunk) {
          if (first + chunk.size() > failing_from) return Status::IOError("band-5: disk gone");
          return fn(first, chunk);
        });
      };
      auto got = LinearJoin(input, OptionsOf(0.8, threads));
      ASSERT_FALSE(got.ok());
      EXPECT_EQ(got.status().code(), Status::Code::kIOError);
      EXPECT_EQ(got.status().message(), "band-5: disk gone");
    }
  }
  std::atomic<bool> cancel{true};
  LinearJoinOptions options = OptionsOf(0.8, 2);
  options.cancel = &cancel;
  auto cancelled = LinearJoin(InputOf(**sketcher, corpus), options);
  ASSERT_FALSE(cancelled.ok());
  EXPECT_EQ(cancelled.status().code(), Status::Code::kCancelled);
  cancel = false;
  EXPECT_TRUE(LinearJoin(InputOf(**sketcher, corpus), options).ok());

  LinearJoinInput too_many = InputOf(**sketcher, corpus);
  too_many.items = uint64_t{1} << 32;
  EXPECT_EQ(LinearJoin(too_many, options).status().code(), Status::Code::kInvalidArgument);

  Corpus none = EmptyCorpus(**sketcher);
  auto empty = LinearJoin(InputOf(**sketcher, none), OptionsOf(0.8, 3));
  ASSERT_TRUE(empty.ok()) << empty.status().ToString();
  EXPECT_TRUE(empty->pairs.empty());
  EXPECT_EQ(empty->verifications, 0u);
}

// The size bound by its cuts answers as its definition (the division) for every pair of sizes up to
// past the cuts' end and for large ones, at several thresholds and sketch sizes.
TEST(SizeBoundTest, CutsAnswerAsTheDivision) {
  struct Case {
    SketchOptions sketch;
    double threshold;
  };
  for (const Case& k :
       {Case{{}, 0.8}, Case{{}, 0.5}, Case{{}, 0.95}, Case{{}, 0.01}, Case{{256, 1, 16, 5}, 0.8}}) {
    const auto unions = 2 * static_cast<uint32_t>(k.sketch.bins) + 1;
    const SizeBound bound(k.threshold, unions);
    uint64_t below = 0;
    for (uint32_t a = 0; a <= unions + 40; ++a) {
      for (uint32_t b = 0; b <= unions + 40; ++b) {
        ASSERT_EQ(bound.Below(a, b), bound.BelowByDivision(a, b))
            << a << ", " << b << " threshold " << k.threshold;
        below += bound.Below(a, b);
      }
    }
    // Both answers occur (a bound that is never or always below would agree trivially).
    EXPECT_GT(below, uint64_t{unions} * unions / 200);
    EXPECT_LT(below, uint64_t{unions + 41} * (unions + 41));
    std::mt19937_64 random(7);
    for (int i = 0; i < 100000; ++i) {
      const auto a = static_cast<uint32_t>(random()), b = static_cast<uint32_t>(random() >> 40);
      ASSERT_EQ(bound.Below(a, b), bound.BelowByDivision(a, b)) << a << ", " << b;
      ASSERT_EQ(bound.Below(b, a), bound.BelowByDivision(b, a)) << b << ", " << a;
    }
  }
}

}  // namespace
}  // namespace neardup::dedup_internal
