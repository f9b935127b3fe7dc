// The permuted-table index against a naive scan: every design, k = 0..max, uniform and skewed data,
// after inserts, removes and merges, in batches, at every SIMD level.
#include "neardup/index.h"

#include <gtest/gtest.h>

#include <set>
#include <thread>

#include "index/index_testutil.h"
#include "index/layout.h"
#include "neardup/cpu.h"
#include "simd_levels.h"

namespace neardup {
namespace {

using testing::DataKind;

constexpr DataKind kAllKinds[] = {DataKind::kUniform, DataKind::kClustered, DataKind::kDuplicates,
                                  DataKind::kZerosAndOnes, DataKind::kLowEntropy};

std::vector<uint64_t> Ids(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::set<uint64_t> seen;
  std::vector<uint64_t> ids;
  while (ids.size() < n) {
    const uint64_t id = rng() % 4 == 0 ? rng() % 1000000 : rng();
    if (seen.insert(id).second) ids.push_back(id);
  }
  return ids;
}

// Checks index against the naive scan for every query and every k up to max_k, single and batched.
void ExpectExact(const Index& index, const std::vector<uint64_t>& ids,
                 const std::vector<uint64_t>& codes, const std::vector<bool>& live,
                 const std::vector<uint64_t>& queries, int max_k, const std::string& context) {
  for (int k = 0; k <= max_k; ++k) {
    auto batch = index.QueryBatch(queries, k, 2);
    ASSERT_TRUE(batch.ok()) << batch.status().ToString();
    for (size_t q = 0; q < queries.size(); ++q) {
      const auto expected = testing::NaiveQuery(ids, codes, live, queries[q], k);
      auto got = index.Query(queries[q], k);
      ASSERT_TRUE(got.ok()) << got.status().ToString();
      ASSERT_EQ(*got, expected) << context << " k=" << k << " query " << q;
      const auto span = batch->MatchesOf(q);
      ASSERT_EQ(std::vector<Match>(span.begin(), span.end()), expected)
          << context << " batch k=" << k;
    }
  }
}

TEST(LayoutTest, EveryPairWithinKIsOwnedByExactlyOneSharedTable) {
  std::mt19937_64 rng(7);
  for (const TableDesign& design : testing::TestDesigns()) {
    ASSERT_TRUE(design.Validate().ok()) << design.ToString();
    const index_internal::Layout layout(design);
    ASSERT_EQ(layout.tables(), design.tables());
    for (int trial = 0; trial < 2000; ++trial) {
      const uint64_t a = rng();
      const uint64_t b =
          testing::FlipBits(a, static_cast<int>(rng() % (design.max_exact_k() + 1)), rng);
      int owners = 0;
      for (int t = 0; t < layout.tables(); ++t) {
        if (!layout.Owns(t, a, b)) continue;
        ++owners;
        EXPECT_EQ(layout.Key(t, a), layout.Key(t, b)) << design.ToString();
      }
      EXPECT_EQ(owners, 1) << design.ToString();
    }
  }
}

TEST(TableDesignTest, EvenSplitsAndValidation) {
  EXPECT_EQ(TableDesign::Even(5, 2).block_bits, (std::vector<int>{13, 13, 13, 13, 12}));
  EXPECT_EQ(TableDesign::Even(5, 2).tables(), 10);
  EXPECT_EQ(TableDesign::Even(6, 3).tables(), 20);
  EXPECT_EQ(TableDesign::Even(4, 1).max_exact_k(), 3);
  EXPECT_FALSE((TableDesign{{16, 16, 16}, 1}).Validate().ok());  // sums to 48
  EXPECT_FALSE((TableDesign{{32, 32}, 2}).Validate().ok());      // no block left over
  EXPECT_FALSE((TableDesign{{40, 24}, 1}).Validate().ok());      // block over 32 bits
  EXPECT_FALSE(TableDesign::Even(9, 1).Validate().ok());         // too many blocks
  IndexOptions options;
  options.design = TableDesign{{16, 16, 16}, 1};
  EXPECT_EQ(NewPermutedTableIndex(options).status().code(), Status::Code::kInvalidArgument);
}

TEST(PermutedTableIndexTest, BulkBuildEqualsNaiveForEveryDesignAndDataKind) {
  const size_t n = testing::Sanitized() ? 600 : 2500;
  for (const TableDesign& design : testing::TestDesigns()) {
    for (DataKind kind : kAllKinds) {
      const auto codes = testing::MakeCodes(kind, n, 11);
      const auto ids = Ids(n, 12);
      const std::vector<bool> live(n, true);
      const auto queries = testing::MakeQueries(codes, 60, design.max_exact_k(), 13);
      IndexOptions options;
      options.design = design;
      auto index = BuildPermutedTableIndex(ids, codes, options);
      ASSERT_TRUE(index.ok()) << index.status().ToString();
      EXPECT_EQ((*index)->Stats().size, n);
      ExpectExact(**index, ids, codes, live, queries, design.max_exact_k(),
                  design.ToString() + " " + testing::DataKindName(kind));
    }
  }
}

TEST(PermutedTableIndexTest, EmptyAndSingleton) {
  for (const TableDesign& design : {TableDesign::Even(4, 1), TableDesign::Even(6, 3)}) {
    IndexOptions options;
    options.design = design;
    auto empty = BuildPermutedTableIndex({}, {}, options);
    ASSERT_TRUE(empty.ok());
    EXPECT_TRUE((*empty)->Query(0, 3)->empty());
    auto fresh = NewPermutedTableIndex(options);
    ASSERT_TRUE(fresh.ok());
    EXPECT_TRUE((*fresh)->Query(~uint64_t{0}, 3)->empty());
    const std::vector<uint64_t> ids{42}, codes{0xFFFF0000FFFF0000ULL};
    auto one = BuildPermutedTableIndex(ids, codes, options);
    ASSERT_TRUE(one.ok());
    ExpectExact(**one, ids, codes, {true}, {codes[0], codes[0] ^ 7, codes[0] ^ 15, ~codes[0]}, 3,
                design.ToString());
  }
}

TEST(PermutedTableIndexTest, InsertsRemovesAndMergesStayExact) {
  const size_t n = testing::Sanitized() ? 1500 : 6000;
  for (bool background : {false, true}) {
    for (DataKind kind : {DataKind::kUniform, DataKind::kClustered, DataKind::kDuplicates}) {
      const auto codes = testing::MakeCodes(kind, n, 21);
      const auto ids = Ids(n, 22);
      std::vector<bool> live(n, false);
      IndexOptions options;
      options.design = TableDesign::Even(5, 2);
      options.merge_threshold = 97;  // many merges, into the delta and into the main run
      options.background_merge = background;
      auto made = NewPermutedTableIndex(options);
      ASSERT_TRUE(made.ok());
      Index& index = **made;
      std::mt19937_64 rng(23);
      const auto queries = testing::MakeQueries(codes, 40, 3, 24);
      for (size_t i = 0; i < n; ++i) {
        ASSERT_TRUE(index.Insert(ids[i], codes[i]).ok());
        live[i] = true;
        if (rng() % 3 == 0) {  // remove a random live fingerprint
          const size_t victim = rng() % (i + 1);
          if (live[victim]) {
            ASSERT_TRUE(index.Remove(ids[victim]).ok());
            live[victim] = false;
          }
        }
        if (i % (n / 4) == n / 4 - 1) {
          ExpectExact(index, ids, codes, live, queries, 3, "mid-insert " + std::to_string(i));
        }
      }
      ASSERT_TRUE(index.Flush().ok());
      EXPECT_EQ(index.Stats().buffered, 0u);
      EXPECT_GT(index.Stats().merges, 0u);
      ExpectExact(index, ids, codes, live, queries, 3, "after flush");
      EXPECT_EQ(index.Stats().size,
                static_cast<uint64_t>(std::count(live.begin(), live.end(), true)));
    }
  }
}

TEST(PermutedTableIndexTest, ErrorsAreStatuses) {
  IndexOptions options;
  options.design = TableDesign::Even(4, 1);
  auto index = NewPermutedTableIndex(options);
  ASSERT_TRUE(index.ok());
  ASSERT_TRUE((*index)->Insert(1, 0xABCD).ok());
  EXPECT_EQ((*index)->Insert(1, 0x1234).code(), Status::Code::kFailedPrecondition);
  EXPECT_EQ((*index)->Remove(2).code(), Status::Code::kNotFound);
  EXPECT_EQ((*index)->Query(0, 4).status().code(), Status::Code::kInvalidArgument);
  EXPECT_EQ((*index)->Query(0, -1).status().code(), Status::Code::kInvalidArgument);
  EXPECT_EQ((*index)->QueryBatch(std::vector<uint64_t>{1}, 9, 1).status().code(),
            Status::Code::kInvalidArgument);
  ASSERT_TRUE((*index)->Remove(1).ok());
  EXPECT_EQ((*index)->Remove(1).code(), Status::Code::kNotFound);
  ASSERT_TRUE((*index)->Insert(1, 0x1234).ok());  // an id may come back after removal
  EXPECT_EQ((*index)->Query(0x1234, 0)->size(), 1u);
  const std::vector<uint64_t> ids{5, 6, 5}, codes{1, 2, 3};
  auto duplicate = BuildPermutedTableIndex(ids, codes, options);
  EXPECT_EQ(duplicate.status().code(), Status::Code::kInvalidArgument);
  EXPECT_NE(duplicate.status().message().find("5"), std::string::npos);
  EXPECT_EQ(BuildPermutedTableIndex(ids, std::vector<uint64_t>{1}, options).status().code(),
            Status::Code::kInvalidArgument);
}

TEST(PermutedTableIndexTest, EverySimdLevelGivesTheSameResults) {
  const auto codes = testing::MakeCodes(DataKind::kClustered, 3000, 31);
  const auto ids = Ids(codes.size(), 32);
  const auto queries = testing::MakeQueries(codes, 100, 3, 33);
  IndexOptions options;
  options.design = TableDesign::Even(4, 1);
  auto index = BuildPermutedTableIndex(ids, codes, options);
  ASSERT_TRUE(index.ok());
  const std::vector<bool> live(codes.size(), true);
  for (SimdLevel level : testing::SimdLevelsToTest()) {
    SetSimdLevel(level);
    ExpectExact(**index, ids, codes, live, queries, 3, std::string(SimdLevelName(level)));
  }
  SetSimdLevel(DetectedSimdLevel());
}

TEST(PermutedTableIndexTest, ConcurrentQueriesDuringInserts) {
  const size_t n = testing::Sanitized() ? 2000 : 20000;
  const auto codes = testing::MakeCodes(DataKind::kUniform, n, 41);
  IndexOptions options;
  options.design = TableDesign::Even(4, 1);
  options.merge_threshold = 256;
  auto made = NewPermutedTableIndex(options);
  ASSERT_TRUE(made.ok());
  Index& index = **made;
  std::atomic<bool> done{false};
  std::atomic<size_t> inserted{0};
  // A reader checks that every fingerprint inserted before its query starts is found.
  std::thread reader([&] {
    std::mt19937_64 rng(42);
    while (!done.load()) {
      const size_t visible = inserted.load();
      if (visible == 0) continue;
      const size_t i = rng() % visible;
      auto matches = index.Query(codes[i], 0);
      ASSERT_TRUE(matches.ok());
      bool found = false;
      for (const Match& m : *matches) found |= m.id == i;
      ASSERT_TRUE(found) << "inserted id " << i << " not found";
    }
  });
  for (size_t i = 0; i < n; ++i) {
    ASSERT_TRUE(index.Insert(i, codes[i]).ok());
    inserted.store(i + 1);
  }
  done.store(true);
  reader.join();
  ASSERT_TRUE(index.Flush().ok());
  EXPECT_EQ(index.Stats().size, n);
}

// Background merges of a small buffer into tiered delta runs, with major merges of the main run
// running beside them: the answers are exact at every moment (checked while merges are still in
// flight, before any Flush), removes included.
TEST(PermutedTableIndexTest, MinorAndMajorMergesInFlightStayExact) {
  const size_t n = testing::Sanitized() ? 6000 : 40000;
  for (bool background : {false, true})
    for (DataKind kind : {DataKind::kUniform, DataKind::kClustered}) {
      const auto codes = testing::MakeCodes(kind, n, 51);
      const auto ids = Ids(n, 52);
      const auto queries = testing::MakeQueries(codes, 30, 3, 53);
      std::vector<bool> live(n, false);
      IndexOptions options;
      options.design = TableDesign::Even(4, 1);
      options.merge_threshold = 64;  // hundreds of minor merges and dozens of major ones
      options.background_merge = background;
      auto made = NewPermutedTableIndex(options);
      ASSERT_TRUE(made.ok());
      Index& index = **made;
      std::mt19937_64 rng(54);
      for (size_t i = 0; i < n; ++i) {
        ASSERT_TRUE(index.Insert(ids[i], codes[i]).ok());
        live[i] = true;
        if (rng() % 5 == 0) {
          const size_t victim = rng() % (i + 1);
          if (live[victim]) {
            ASSERT_TRUE(index.Remove(ids[victim]).ok());
            live[victim] = false;
          }
        }
        if (i % (n / 5) == n / 5 - 1) {
          ExpectExact(index, ids, codes, live, queries, 1, "in flight " + std::to_string(i));
        }
      }
      ExpectExact(index, ids, codes, live, queries, 3, "after the last insert");
      // Synchronous merges: one minor merge per 64 inserts; background ones batch up the buffer
      // (how much depends on timing).
      EXPECT_GE(index.Stats().merges, background ? 1 : n / 64);
      ASSERT_TRUE(index.Flush().ok());
      ExpectExact(index, ids, codes, live, queries, 3, "after flush");
    }
}

TEST(PermutedTableIndexTest, StatsCountWork) {
  const auto codes = testing::MakeCodes(DataKind::kUniform, 5000, 51);
  std::vector<uint64_t> ids(codes.size());
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = i;
  IndexOptions options;
  options.design = TableDesign::Even(4, 1);
  auto index = BuildPermutedTableIndex(ids, codes, options);
  ASSERT_TRUE(index.ok());
  auto batch = (*index)->QueryBatch(codes, 3, 2);
  ASSERT_TRUE(batch.ok());
  EXPECT_EQ(batch->stats.queries, codes.size());
  EXPECT_EQ(batch->stats.tables_probed, 4 * codes.size());
  EXPECT_GE(batch->stats.matches, codes.size());  // each code finds itself
  EXPECT_GT(batch->stats.candidates_verified, batch->stats.matches);
  const IndexStats stats = (*index)->Stats();
  EXPECT_EQ(stats.queries.queries, codes.size());
  EXPECT_EQ(stats.max_exact_k, 3);
  EXPECT_GT(stats.memory_bytes, codes.size() * 48);
  // Results do not depend on the number of threads.
  for (int threads : {1, 3}) {
    auto other = (*index)->QueryBatch(codes, 3, threads);
    ASSERT_TRUE(other.ok());
    EXPECT_EQ(other->matches, batch->matches);
    EXPECT_EQ(other->offsets, batch->offsets);
  }
}

TEST(BruteForceIndexTest, EqualsNaive) {
  auto index = NewBruteForceIndex();
  const auto codes = testing::MakeCodes(DataKind::kClustered, 1000, 61);
  const auto ids = Ids(codes.size(), 62);
  std::vector<bool> live(codes.size(), true);
  for (size_t i = 0; i < codes.size(); ++i) ASSERT_TRUE(index->Insert(ids[i], codes[i]).ok());
  for (size_t i = 0; i < codes.size(); i += 3) {
    ASSERT_TRUE(index->Remove(ids[i]).ok());
    live[i] = false;
  }
  ExpectExact(*index, ids, codes, live, testing::MakeQueries(codes, 50, 7, 63), 7, "brute force");
  EXPECT_EQ(index->Remove(ids[0]).code(), Status::Code::kNotFound);
  EXPECT_EQ(index->Insert(ids[1], 0).code(), Status::Code::kFailedPrecondition);
}

}  // namespace
}  // namespace neardup
