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

// Entries are packed into the fewest bytes that hold the key bits below the directory's and the
// row: rows far above the entries' count (a load that skips most rows, rows near 2^32) widen them,
// and every lookup still finds exactly its rows.
TEST(BandTablesPacking, SparseAndHighRowsWidenEntries) {
  const size_t bands = 3;
  BandTables tables(bands, 4);
  std::mt19937_64 rng(7);
  std::vector<std::pair<uint32_t, std::vector<uint32_t>>> stored;  // row, keys
  RowBits removed;
  auto check = [&] {
    for (const auto& [row, keys] : stored) {
      for (size_t j = 0; j < bands; ++j) {
        std::vector<uint32_t> got, want;
        tables.ForEachRow(j, keys[j], [&](uint32_t r) { got.push_back(r); });
        for (const auto& [other, other_keys] : stored) {
          if (other_keys[j] == keys[j]) want.push_back(other);
        }
        std::sort(got.begin(), got.end());
        ASSERT_EQ(got, want) << "row " << row << " band " << j;
      }
      std::vector<uint32_t> one(bands);
      ASSERT_TRUE(tables.KeysOf(row, one));
      EXPECT_EQ(one, keys);
    }
  };
  // A load of 2,000 rows of which 1 in 50 is present, then single rows jumping towards 2^32.
  const uint32_t first = 1000;
  std::vector<uint32_t> keys(2000 * bands);
  std::vector<uint8_t> present(2000);
  for (size_t i = 0; i < present.size(); ++i) {
    present[i] = i % 50 == 0 ? 1 : 0;
    for (size_t j = 0; j < bands; ++j) keys[i * bands + j] = static_cast<uint32_t>(rng() % 64);
    if (present[i] != 0) {
      stored.emplace_back(
          static_cast<uint32_t>(first + i),
          std::vector<uint32_t>(keys.begin() + static_cast<std::ptrdiff_t>(i * bands),
                                keys.begin() + static_cast<std::ptrdiff_t>((i + 1) * bands)));
    }
  }
  tables.AddAll(first, keys, present, removed);
  check();
  // Then loads of a few rows each, starting ever higher (as after many removes), each followed by
  // single rows in the buffer.
  uint32_t row = first + 2000;
  for (int step = 0; step < 60; ++step) {
    const uint64_t jump = rng() % (uint64_t{1} << (step / 2 + 1));
    row = static_cast<uint32_t>(std::min<uint64_t>(uint64_t{row} + jump, 0xFFFFFFFEu - 1000));
    auto next_keys = [&] {
      std::vector<uint32_t> k(bands);
      for (uint32_t& key : k) {
        key = step % 3 == 0 ? static_cast<uint32_t>(rng())
                            : 0xFFFFFFFFu - static_cast<uint32_t>(rng() % 4);
      }
      return k;
    };
    std::vector<uint32_t> load_keys;
    const std::vector<uint8_t> load_present = {1, 0, 1};
    for (size_t i = 0; i < load_present.size(); ++i) {
      auto k = next_keys();
      load_keys.insert(load_keys.end(), k.begin(), k.end());
      if (load_present[i] != 0) stored.emplace_back(row + static_cast<uint32_t>(i), k);
    }
    tables.AddAll(row, load_keys, load_present, removed);
    row += static_cast<uint32_t>(load_present.size());
    for (int single = 0; single < 5; ++single, ++row) {
      auto k = next_keys();
      tables.Add(row, k);
      stored.emplace_back(row, k);
      if (tables.ShouldMerge()) tables.Merge(removed);
    }
    check();
  }
  EXPECT_GT(stored.back().first, 0x80000000u);
}

INSTANTIATE_TEST_SUITE_P(MergeSizes, BandTablesTest, ::testing::Values(1, 7, 64, 1000));

}  // namespace
}  // namespace neardup::online_internal
