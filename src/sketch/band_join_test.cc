// The band join against brute force (every pair: shares a band key and estimates >= threshold).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>

#include "neardup/sketch.h"
#include "sketch/sketch_testutil.h"
#include "testutil.h"

namespace neardup {
namespace {

struct Corpus {
  std::vector<uint32_t> keys;
  std::vector<uint8_t> sketches;
  size_t size = 0;
};

// Families of sets: a base set and copies that keep a random share of it and add new hashes, so
// that pairs span Jaccard 0..1; some exact copies; some small sets (densified sketches).
Corpus MakeCorpus(const Sketcher& sketcher, size_t families, uint64_t seed) {
  std::mt19937_64 rng(seed);
  Corpus c;
  const size_t bands = static_cast<size_t>(sketcher.options().bands);
  auto add = [&](const std::vector<uint64_t>& set) {
    c.keys.resize(c.keys.size() + bands);
    c.sketches.resize(c.sketches.size() + sketcher.sketch_bytes());
    Status status = sketcher.Compute(set, std::span(c.sketches).last(sketcher.sketch_bytes()),
                                     std::span(c.keys).last(bands));
    EXPECT_TRUE(status.ok());
    ++c.size;
  };
  for (size_t f = 0; f < families; ++f) {
    const size_t n = f % 3 == 0 ? 8 + rng() % 30 : 300 + rng() % 700;
    std::vector<uint64_t> base(n);
    for (auto& h : base) h = rng();
    add(base);
    const size_t copies = 1 + rng() % 5;
    for (size_t k = 0; k < copies; ++k) {
      std::vector<uint64_t> copy;
      const double keep = 0.6 + 0.4 * static_cast<double>(rng() % 1000) / 1000;
      for (uint64_t h : base) {
        if (static_cast<double>(rng() % 1000) / 1000 < keep) copy.push_back(h);
      }
      const size_t added = static_cast<size_t>((1 - keep) * static_cast<double>(n) * 0.5);
      for (size_t i = 0; i < added; ++i) copy.push_back(rng());
      add(rng() % 7 == 0 ? base : copy);
    }
  }
  return c;
}

std::vector<SimilarPair> BruteForce(const Sketcher& sketcher, const Corpus& c, double threshold,
                                    uint64_t* colliding) {
  const size_t bands = static_cast<size_t>(sketcher.options().bands),
               bytes = sketcher.sketch_bytes();
  std::vector<SimilarPair> pairs;
  *colliding = 0;
  for (uint32_t a = 0; a < c.size; ++a) {
    for (uint32_t b = a + 1; b < c.size; ++b) {
      bool share = false;
      for (size_t j = 0; j < bands; ++j) share |= c.keys[a * bands + j] == c.keys[b * bands + j];
      if (!share) continue;
      ++*colliding;
      auto estimate = sketcher.EstimateJaccard(std::span(c.sketches).subspan(a * bytes, bytes),
                                               std::span(c.sketches).subspan(b * bytes, bytes));
      EXPECT_TRUE(estimate.ok());
      if (*estimate >= threshold) pairs.push_back({a, b, static_cast<float>(*estimate)});
    }
  }
  return pairs;
}

TEST(BandJoinTest, EqualsBruteForceForEveryThreadCountAndThreshold) {
  for (auto options :
       {SketchOptions{1024, 1, 20, 6}, SketchOptions{256, 4, 16, 4}, SketchOptions{64, 8, 8, 2}}) {
    auto sketcher = Sketcher::Create(options);
    ASSERT_TRUE(sketcher.ok());
    const Corpus corpus = MakeCorpus(**sketcher, testing::Sanitized() ? 120 : 400, 7);
    for (double threshold : {0.5, 0.8, 0.95, -1.0}) {
      uint64_t colliding = 0;
      const auto expected = BruteForce(**sketcher, corpus, threshold, &colliding);
      for (int threads : {1, 2, 3}) {
        BandJoinStats stats;
        auto got = FindSimilarPairs(**sketcher, corpus.keys, corpus.sketches, {threshold, threads},
                                    &stats);
        ASSERT_TRUE(got.ok()) << got.status().ToString();
        EXPECT_EQ(*got, expected) << "threshold " << threshold << " threads " << threads;
        EXPECT_EQ(stats.candidates, colliding);
        EXPECT_EQ(stats.pairs, expected.size());
        EXPECT_GE(stats.band_collisions, stats.candidates);
      }
      if (threshold == 0.8) {
        EXPECT_GT(expected.size(), 50u);
      }
    }
  }
}

// With boundary_sigmas, a pair whose estimate is within that many EstimateSpread of the threshold
// (at its sizes; not when both sketches are in exact form) and whose sizes allow the threshold is a
// boundary pair, not a pair; the rest as without it. The spread is that of the formula.
TEST(BandJoinTest, BoundaryPairsAreThoseNearTheThreshold) {
  auto sketcher = Sketcher::Create({});
  ASSERT_TRUE(sketcher.ok());
  const Corpus corpus = MakeCorpus(**sketcher, testing::Sanitized() ? 120 : 400, 11);
  const size_t bytes = (*sketcher)->sketch_bytes();
  const double t = 0.8;
  uint64_t colliding = 0;
  const auto all = BruteForce(**sketcher, corpus, -1.0, &colliding);
  const BoundaryMargins margins((*sketcher)->options(), t, 3);
  std::vector<SimilarPair> want_pairs, want_boundary;
  for (const SimilarPair& p : all) {
    uint32_t a, b;
    std::memcpy(&a, &corpus.sketches[p.first * bytes], 4);
    std::memcpy(&b, &corpus.sketches[p.second * bytes], 4);
    const bool exact = a <= (*sketcher)->exact_capacity() && b <= (*sketcher)->exact_capacity();
    const double margin = exact ? 0 : margins(a, b);
    // J <= min / max for the exact Jaccard too: below the threshold, not a boundary pair.
    if (static_cast<double>(std::min(a, b)) / std::max(a, b) < t) continue;
    if (margin > 0 && p.jaccard >= t - margin && p.jaccard < t + margin) {
      want_boundary.push_back(p);
    } else if (p.jaccard >= t) {
      want_pairs.push_back(p);
    }
  }
  ASSERT_GT(want_boundary.size(), 5u);
  BandJoinOptions options{t, 2};
  options.boundary_sigmas = 3;
  std::vector<SimilarPair> boundary;
  auto got =
      FindSimilarPairs(**sketcher, corpus.keys, corpus.sketches, options, nullptr, &boundary);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(*got, want_pairs);
  EXPECT_EQ(boundary, want_boundary);
  // Without a list for them, or in clustering mode: refused.
  EXPECT_FALSE(FindSimilarPairs(**sketcher, corpus.keys, corpus.sketches, options).ok());
  options.all_pairs = false;
  EXPECT_FALSE(
      FindSimilarPairs(**sketcher, corpus.keys, corpus.sketches, options, nullptr, &boundary).ok());
  // The spread: 0.0188 for large sets at the defaults, wider for small ones, never narrower.
  EXPECT_NEAR(EstimateSpread((*sketcher)->options(), t, 5000, 5000), 0.01875, 1e-4);
  EXPECT_GT(EstimateSpread((*sketcher)->options(), t, 100, 100),
            2 * EstimateSpread((*sketcher)->options(), t, 5000, 5000));
  EXPECT_NEAR(margins(5000, 5000), 3 * 0.01875, 3e-4);
  EXPECT_NEAR(margins(100, 120), 3 * EstimateSpread((*sketcher)->options(), t, 100, 120), 1e-12);
}

// Components of the graph of `pairs` over n documents, as each document's smallest member.
std::vector<uint32_t> Components(size_t n, const std::vector<SimilarPair>& pairs) {
  std::vector<uint32_t> root(n);
  for (uint32_t i = 0; i < n; ++i) root[i] = i;
  auto find = [&](uint32_t x) {
    while (root[x] != x) x = root[x];
    return x;
  };
  for (const auto& p : pairs) {
    const uint32_t a = find(p.first), b = find(p.second);
    root[std::max(a, b)] = std::min(a, b);
  }
  std::vector<uint32_t> out(n);
  for (uint32_t i = 0; i < n; ++i) out[i] = find(i);
  return out;
}

TEST(BandJoinTest, ClusteringModeConnectsTheSameComponents) {
  auto sketcher = Sketcher::Create({});
  ASSERT_TRUE(sketcher.ok());
  const Corpus corpus = MakeCorpus(**sketcher, testing::Sanitized() ? 120 : 400, 8);
  for (double threshold : {0.5, 0.8}) {
    BandJoinStats all_stats;
    auto all =
        FindSimilarPairs(**sketcher, corpus.keys, corpus.sketches, {threshold, 1}, &all_stats);
    ASSERT_TRUE(all.ok());
    for (int threads : {1, 2, 3}) {
      BandJoinStats stats;
      auto some = FindSimilarPairs(**sketcher, corpus.keys, corpus.sketches,
                                   {threshold, threads, false}, &stats);
      ASSERT_TRUE(some.ok());
      EXPECT_EQ(Components(corpus.size, *some), Components(corpus.size, *all)) << threads;
      // A subset of all the pairs, each once, in order.
      EXPECT_TRUE(std::includes(all->begin(), all->end(), some->begin(), some->end(),
                                [](const SimilarPair& x, const SimilarPair& y) {
                                  return x.first != y.first ? x.first < y.first
                                                            : x.second < y.second;
                                }));
      EXPECT_TRUE(std::adjacent_find(some->begin(), some->end()) == some->end());
      EXPECT_LT(some->size(), all->size());
      EXPECT_EQ(stats.pairs, some->size());
      EXPECT_GT(stats.connected, 0u);
    }
  }
}

TEST(BandJoinTest, ManyIdenticalDocumentsGiveEachPairOnce) {
  auto sketcher = Sketcher::Create({});
  ASSERT_TRUE(sketcher.ok());
  Corpus c;
  const std::vector<uint64_t> set = {11, 22, 33, 44, 55, 66, 77};
  const size_t bytes = (*sketcher)->sketch_bytes();
  c.keys.resize(20 * 30);
  c.sketches.resize(bytes * 30);
  for (size_t d = 0; d < 30; ++d) {
    ASSERT_TRUE((*sketcher)
                    ->Compute(set, std::span(c.sketches).subspan(d * bytes, bytes),
                              std::span(c.keys).subspan(d * 20, 20))
                    .ok());
  }
  BandJoinStats stats;
  auto got = FindSimilarPairs(**sketcher, c.keys, c.sketches, {}, &stats);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->size(), 30u * 29 / 2);
  EXPECT_EQ(stats.candidates, 30u * 29 / 2);
  EXPECT_EQ(stats.band_collisions, 20u * 30 * 29 / 2);
  for (const auto& p : *got) EXPECT_EQ(p.jaccard, 1.0f);
}

TEST(BandJoinTest, EmptyInputAndMismatchedSpans) {
  auto sketcher = Sketcher::Create({});
  ASSERT_TRUE(sketcher.ok());
  auto none = FindSimilarPairs(**sketcher, {}, {});
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
  std::vector<uint32_t> keys(40);
  std::vector<uint8_t> one_sketch((*sketcher)->sketch_bytes()), odd(100);
  EXPECT_EQ(FindSimilarPairs(**sketcher, keys, one_sketch).status().code(),
            Status::Code::kInvalidArgument);
  EXPECT_EQ(FindSimilarPairs(**sketcher, std::span(keys).first(20), odd).status().code(),
            Status::Code::kInvalidArgument);
  EXPECT_FALSE(FindSimilarPairs(**sketcher, std::span(keys).first(20), one_sketch, {1.5, 1}).ok());
}

}  // namespace
}  // namespace neardup
