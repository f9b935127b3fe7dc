#include "neardup/hamming.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "neardup/cpu.h"
#include "simd_levels.h"

namespace neardup {
namespace {

std::vector<uint64_t> CodesWithPlantedNeighbours(std::mt19937_64& rng, size_t n, uint64_t query) {
  std::vector<uint64_t> codes(n);
  for (auto& c : codes) {
    c = rng();
    if (rng() % 4 == 0) {  // within a few bits of the query
      c = query;
      for (int flips = static_cast<int>(rng() % 8); flips > 0; --flips)
        c ^= uint64_t{1} << (rng() % 64);
    }
  }
  return codes;
}

std::vector<uint32_t> Naive(const std::vector<uint64_t>& codes, uint64_t query, int k) {
  std::vector<uint32_t> out;
  for (size_t i = 0; i < codes.size(); ++i) {
    if (std::popcount(codes[i] ^ query) <= k) out.push_back(static_cast<uint32_t>(i));
  }
  return out;
}

class HammingScanTest : public ::testing::TestWithParam<SimdLevel> {
 protected:
  void SetUp() override {
    // Fails when the CPU has the level but it is not detected; skips visibly when the CPU lacks it.
    const auto levels = testing::SimdLevelsToTest();
    if (std::find(levels.begin(), levels.end(), GetParam()) == levels.end()) {
      GTEST_SKIP() << "CPU lacks " << SimdLevelName(GetParam());
    }
    SetSimdLevel(GetParam());
  }
  void TearDown() override { SetSimdLevel(DetectedSimdLevel()); }
};

TEST_P(HammingScanTest, EqualsNaiveScan) {
  std::mt19937_64 rng(20);
  for (size_t n : {0, 1, 3, 63, 64, 65, 127, 4095, 4096, 4097, 10000}) {
    const uint64_t query = rng();
    auto codes = CodesWithPlantedNeighbours(rng, n, query);
    for (int k : {-1, 0, 1, 2, 3, 5, 7, 12, 32, 63, 64, 100}) {
      std::vector<uint32_t> got;
      FindWithin(codes, query, k, &got);
      ASSERT_EQ(got, Naive(codes, query, k)) << "n=" << n << " k=" << k;
      ASSERT_EQ(CountWithin(codes, query, k), got.size());
    }
  }
}

TEST_P(HammingScanTest, BatchEqualsSingleQueries) {
  std::mt19937_64 rng(21);
  const uint64_t center = rng();
  auto codes = CodesWithPlantedNeighbours(rng, 9000, center);
  std::vector<uint64_t> queries = {center, rng(), codes[5], codes[8999], 0, ~uint64_t{0}};
  for (int k : {0, 3, 7}) {
    std::vector<std::vector<uint32_t>> batch;
    FindWithinBatch(codes, queries, k, &batch);
    ASSERT_EQ(batch.size(), queries.size());
    for (size_t q = 0; q < queries.size(); ++q) EXPECT_EQ(batch[q], Naive(codes, queries[q], k));
  }
}

INSTANTIATE_TEST_SUITE_P(Levels, HammingScanTest,
                         ::testing::Values(SimdLevel::kPortable, SimdLevel::kAvx2,
                                           SimdLevel::kAvx512),
                         [](const auto& param_info) {
                           return std::string(SimdLevelName(param_info.param));
                         });

TEST(HammingDistanceTest, Basics) {
  EXPECT_EQ(HammingDistance(0, 0), 0);
  EXPECT_EQ(HammingDistance(0, ~uint64_t{0}), 64);
  EXPECT_EQ(HammingDistance(0b1011, 0b0001), 2);
}

}  // namespace
}  // namespace neardup
