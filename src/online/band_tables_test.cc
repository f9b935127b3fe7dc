// BandTables against a brute force (every row's keys kept in a plain array): adds with buffers
// merged small and often, so that directories are shifted, rebuilt at new prefix widths, and
// removed rows are dropped or left behind, at every step.
#include "online/band_tables.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

namespace neardup::online_internal {
namespace {

class BandTablesTest : public ::testing::TestWithParam<size_t> {};

TEST_P(BandTablesTest, EveryLookupMatchesABruteForce) {
  const size_t bands = 5;
  const size_t min_merge_rows = GetParam();
  BandTables tables(bands, min_merge_rows);
  std::mt19937_64 rng(min_merge_rows);
  std::vector<uint32_t> keys;  // row * bands + band
  RowBits removed;
  size_t merges = 0;
  // Keys from a small range (rows share keys) and from the whole range (top bits differ, so every
  // directory bucket is used); key 0 and 0xFFFFFFFF sit at the tables' ends.
  auto next_key = [&](size_t row) -> uint32_t {
    switch (rng() % 4) {
      case 0:
        return static_cast<uint32_t>(rng() % 50);
      case 1:
        return row % 2 == 0 ? 0u : 0xFFFFFFFFu;
      default:
        return static_cast<uint32_t>(rng());
    }
  };
  auto check = [&](size_t rows) {
    for (int probe = 0; probe < 40; ++probe) {
      const size_t band = rng() % bands;
      const uint32_t key =
          probe % 2 == 0 && rows > 0 ? keys[(rng() % rows) * bands + band] : next_key(rows);
      std::vector<uint32_t> got, want;
      tables.ForEachRow(band, key, [&](uint32_t row) {
        if (!removed.Contains(row)) got.push_back(row);
      });
      for (uint32_t row = 0; row < rows; ++row) {
        if (keys[row * bands + band] == key && !removed.Contains(row)) want.push_back(row);
      }
      std::sort(got.begin(), got.end());
      ASSERT_EQ(got, want) << "band " << band << " key " << key << " after " << rows << " rows";
    }
    std::vector<uint32_t> all(rows * bands, 0);
    tables.KeysOfAll(all);
    for (uint32_t row = 0; row < rows; ++row) {
      if (removed.Contains(row)) continue;
      for (size_t j = 0; j < bands; ++j) ASSERT_EQ(all[row * bands + j], keys[row * bands + j]);
    }
    if (rows > 0) {
      const auto row = static_cast<uint32_t>(rng() % rows);
      std::vector<uint32_t> one(bands);
      if (!removed.Contains(row)) {
        ASSERT_TRUE(tables.KeysOf(row, one));
        EXPECT_TRUE(std::equal(one.begin(), one.end(), keys.begin() + row * bands));
      }
    }
  };
  const size_t total = 40 * min_merge_rows + 1000;
  std::vector<uint32_t> row_keys(bands);
  for (size_t row = 0; row < total; ++row) {
    for (size_t j = 0; j < bands; ++j) row_keys[j] = keys.emplace_back(next_key(row));
    tables.Add(static_cast<uint32_t>(row), row_keys);
    // Removes in bursts (enough to be dropped from the main tables) and alone (left behind).
    if (rng() % 100 < (row / 4000 % 2 == 0 ? 12u : 1u))
      removed.Add(static_cast<uint32_t>(rng() % (row + 1)));
    if (tables.ShouldMerge()) {
      tables.Merge(removed);
      ++merges;
      check(row + 1);
    } else if (row % 997 == 0) {
      check(row + 1);
    }
  }
  check(total);
  EXPECT_GT(merges, 20u);
}

INSTANTIATE_TEST_SUITE_P(MergeSizes, BandTablesTest, ::testing::Values(1, 7, 64, 1000));

}  // namespace
}  // namespace neardup::online_internal
