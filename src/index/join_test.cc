// The all-pairs join against a naive double loop, and clustering against a naive flood fill.
#include "neardup/join.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>

#include "index/index_testutil.h"

namespace neardup {
namespace {

using testing::DataKind;

std::vector<Pair> NaivePairs(const std::vector<uint64_t>& codes, int k) {
  std::vector<Pair> pairs;
  for (uint32_t i = 0; i < codes.size(); ++i) {
    for (uint32_t j = i + 1; j < codes.size(); ++j) {
      const int d = std::popcount(codes[i] ^ codes[j]);
      if (d <= k) pairs.push_back(Pair{i, j, d});
    }
  }
  return pairs;
}

TEST(JoinTest, EqualsNaiveForEveryKDesignAndDataKind) {
  const size_t n = testing::Sanitized() ? 400 : 1500;
  for (DataKind kind : {DataKind::kUniform, DataKind::kClustered, DataKind::kDuplicates,
                        DataKind::kZerosAndOnes, DataKind::kLowEntropy}) {
    auto codes = testing::MakeCodes(kind, n, 3);
    if (kind == DataKind::kUniform) {  // plant near-duplicates
      std::mt19937_64 rng(8);
      for (size_t i = 0; i + 1 < n; i += 4) {
        codes[i + 1] = testing::FlipBits(codes[i], static_cast<int>(i % 5), rng);
      }
    }
    for (int k = 0; k <= 7; ++k) {
      const auto expected = NaivePairs(codes, k);
      auto got = FindAllPairs(codes, k);
      ASSERT_TRUE(got.ok()) << got.status().ToString();
      ASSERT_EQ(*got, expected) << testing::DataKindName(kind) << " k=" << k;
      for (const TableDesign& design : testing::TestDesigns()) {
        if (design.max_exact_k() < k || k % 2 == 1) continue;
        JoinOptions options;
        options.design = design;
        options.threads = 1 + k % 3;
        auto with_design = FindAllPairs(codes, k, options);
        ASSERT_TRUE(with_design.ok());
        ASSERT_EQ(*with_design, expected) << design.ToString() << " k=" << k;
      }
    }
  }
}

TEST(JoinTest, SmallInputsAndErrors) {
  EXPECT_TRUE(FindAllPairs({}, 3)->empty());
  EXPECT_TRUE(FindAllPairs(std::vector<uint64_t>{5}, 3)->empty());
  EXPECT_EQ(FindAllPairs(std::vector<uint64_t>{5, 5}, 0)->size(), 1u);
  EXPECT_EQ(FindAllPairs({}, 8).status().code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(FindAllPairs({}, -1).status().code(), Status::Code::kInvalidArgument);
  JoinOptions options;
  options.design = TableDesign::Even(4, 1);
  EXPECT_EQ(FindAllPairs({}, 4, options).status().code(), Status::Code::kInvalidArgument);
}

TEST(JoinTest, OrderDoesNotDependOnThreads) {
  const auto codes =
      testing::MakeCodes(DataKind::kClustered, testing::Sanitized() ? 2000 : 20000, 4);
  std::vector<Pair> first;
  for (int threads : {1, 2, 5}) {
    JoinOptions options;
    options.threads = threads;
    auto pairs = FindAllPairs(codes, 3, options);
    ASSERT_TRUE(pairs.ok());
    if (threads == 1) {
      first = *pairs;
      ASSERT_FALSE(first.empty());
    }
    EXPECT_EQ(*pairs, first);
    std::vector<Pair> streamed;
    ASSERT_TRUE(ForEachPair(codes, 3, options, [&](const Pair& p) {
                  streamed.push_back(p);
                  return Status::OK();
                }).ok());
    EXPECT_EQ(streamed, first);
  }
  size_t calls = 0;
  const Status stopped = ForEachPair(codes, 3, {}, [&](const Pair&) {
    return ++calls == 3 ? Status::Cancelled("enough") : Status::OK();
  });
  EXPECT_EQ(stopped.code(), Status::Code::kCancelled);
  EXPECT_EQ(calls, 3u);
}

// Large enough for several threads and thousands of buckets per table. Uniform 64-bit codes are
// within 3 bits of each other with probability ~2e-15 per pair, so the exact answer is the planted
// pairs: neighbours with 0..4 bits flipped, and a block of 40 identical codes (one long run).
TEST(JoinTest, LargeInputFindsExactlyThePlantedPairsOnEveryThreadCount) {
  const size_t n = 150'000;
  auto codes = testing::MakeCodes(DataKind::kUniform, n, 9);
  std::mt19937_64 rng(10);
  std::vector<Pair> expected;
  for (uint32_t i = 0; i + 1 < 100'000; i += 7) {
    const int flips = static_cast<int>(i % 5);
    codes[i + 1] = testing::FlipBits(codes[i], flips, rng);
    if (flips <= 3) expected.push_back(Pair{i, i + 1, flips});
  }
  for (uint32_t i = 120'000; i < 120'040; ++i) {
    codes[i] = codes[120'000];
    for (uint32_t j = 120'000; j < i; ++j) expected.push_back(Pair{j, i, 0});
  }
  std::sort(expected.begin(), expected.end(), [](const Pair& x, const Pair& y) {
    return x.first != y.first ? x.first < y.first : x.second < y.second;
  });
  for (int threads : {1, 2, 3}) {
    JoinOptions options;
    options.threads = threads;
    auto pairs = FindAllPairs(codes, 3, options);
    ASSERT_TRUE(pairs.ok());
    EXPECT_EQ(*pairs, expected) << threads << " threads";
  }
}

// Components by repeated relaxation: every item takes the best label among its neighbours.
std::vector<uint32_t> NaiveClusters(uint32_t n, const std::vector<Pair>& pairs,
                                    const std::vector<int64_t>& priority) {
  std::vector<uint32_t> label(n);
  for (uint32_t i = 0; i < n; ++i) label[i] = i;
  auto better = [&](uint32_t a, uint32_t b) {
    if (priority.empty()) return a < b;
    return priority[a] != priority[b] ? priority[a] > priority[b] : a < b;
  };
  for (bool changed = true; changed;) {
    changed = false;
    for (const Pair& p : pairs) {
      const uint32_t best =
          better(label[p.first], label[p.second]) ? label[p.first] : label[p.second];
      if (label[p.first] != best || label[p.second] != best) changed = true;
      label[p.first] = label[p.second] = best;
    }
  }
  return label;
}

TEST(ClusterTest, EqualsNaiveComponentsWithBothRepresentativeRules) {
  const auto codes = testing::MakeCodes(DataKind::kClustered, 3000, 5);
  auto pairs = FindAllPairs(codes, 3);
  ASSERT_TRUE(pairs.ok());
  const auto n = static_cast<uint32_t>(codes.size());
  auto first_seen = ClusterPairs(n, *pairs);
  ASSERT_TRUE(first_seen.ok());
  EXPECT_EQ(*first_seen, NaiveClusters(n, *pairs, {}));
  std::mt19937_64 rng(6);
  std::vector<int64_t> priority(n);
  for (auto& p : priority) p = static_cast<int64_t>(rng() % 5);  // many ties
  auto prioritised = ClusterPairs(n, *pairs, priority);
  ASSERT_TRUE(prioritised.ok());
  EXPECT_EQ(*prioritised, NaiveClusters(n, *pairs, priority));
  // The sketch join's pairs: the same components.
  std::vector<SimilarPair> similar;
  for (const Pair& p : *pairs) similar.push_back({p.first, p.second, 0.9f});
  auto from_similar = ClusterSimilarPairs(n, similar);
  ASSERT_TRUE(from_similar.ok());
  EXPECT_EQ(*from_similar, *first_seen);
}

TEST(ClusterTest, Errors) {
  const std::vector<Pair> pairs{{0, 5, 1}};
  EXPECT_EQ(ClusterPairs(3, pairs).status().code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(ClusterPairs(3, {}, std::vector<int64_t>{1}).status().code(),
            Status::Code::kInvalidArgument);
  EXPECT_EQ(*ClusterPairs(3, {}), (std::vector<uint32_t>{0, 1, 2}));
  const std::vector<SimilarPair> similar{{0, 5, 0.9f}};
  EXPECT_EQ(ClusterSimilarPairs(3, similar).status().code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(*ClusterSimilarPairs(3, {}), (std::vector<uint32_t>{0, 1, 2}));
}

}  // namespace
}  // namespace neardup
