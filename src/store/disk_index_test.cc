// The disk-resident SimHash index against the brute-force index: bulk-loaded and inserted
// fingerprints, removes, reopening, and the folders it refuses.
#include "neardup/disk_index.h"

#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <vector>

#include "testutil.h"

namespace neardup {
namespace {

std::vector<uint64_t> Codes(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<uint64_t> codes;
  for (size_t i = 0; i < n; ++i) {
    if (i > 0 && rng() % 3 == 0) {
      uint64_t c = codes[rng() % codes.size()];
      for (int f = static_cast<int>(rng() % 5); f > 0; --f) c ^= uint64_t{1} << (rng() % 64);
      codes.push_back(c);
    } else {
      codes.push_back(rng());
    }
  }
  return codes;
}

void ExpectSameAsBruteForce(const DiskSimhashIndex& disk, const Index& brute,
                            const std::vector<uint64_t>& queries, uint64_t tables = 4) {
  for (int k = 0; k <= 3; ++k) {
    DiskQueryStats stats;
    for (uint64_t q : queries) {
      auto got = disk.Query(q, k, &stats);
      ASSERT_TRUE(got.ok()) << got.status().ToString();
      auto want = brute.Query(q, k);
      ASSERT_TRUE(want.ok());
      EXPECT_EQ(*got, *want) << "k=" << k;
    }
    EXPECT_EQ(stats.queries, queries.size());
    EXPECT_EQ(stats.seeks, tables * queries.size());
    EXPECT_GE(stats.entries_read, stats.matches);
  }
}

TEST(DiskSimhashIndex, AnswersAsBruteForceAcrossBulkLoadInsertsRemovesAndReopen) {
  testing::TempDir dir;
  const std::string path = dir.Path("index");
  const auto codes = Codes(6000, 1);
  auto brute = NewBruteForceIndex();
  std::vector<uint64_t> ids;
  for (size_t i = 0; i < codes.size(); ++i) ids.push_back(i * 7 + 3);
  {
    auto disk = DiskSimhashIndex::Open(path);
    ASSERT_TRUE(disk.ok()) << disk.status().ToString();
    // Design 4 x 16 keyed on 1 block: the key bits are short, so buckets are shared a lot.
    ASSERT_TRUE((*disk)->BulkLoad(std::span(ids).first(4000), std::span(codes).first(4000)).ok());
    for (size_t i = 0; i < 4000; ++i) ASSERT_TRUE(brute->Insert(ids[i], codes[i]).ok());
    for (size_t i = 4000; i < codes.size(); ++i) {
      ASSERT_TRUE((*disk)->Insert(ids[i], codes[i]).ok());
      ASSERT_TRUE(brute->Insert(ids[i], codes[i]).ok());
    }
    EXPECT_EQ((*disk)->Insert(ids[5], 1).code(), Status::Code::kFailedPrecondition);
    EXPECT_EQ((*disk)->BulkLoad(ids, codes).code(), Status::Code::kFailedPrecondition);
    for (size_t i = 0; i < codes.size(); i += 9) {
      ASSERT_TRUE((*disk)->Remove(ids[i]).ok());
      ASSERT_TRUE(brute->Remove(ids[i]).ok());
    }
    EXPECT_EQ((*disk)->Remove(ids[0]).code(), Status::Code::kNotFound);
    EXPECT_EQ(*(*disk)->Get(ids[1]), codes[1]);
    const auto queries = Codes(300, 2);
    std::vector<uint64_t> mixed(codes.begin(), codes.begin() + 200);
    mixed.insert(mixed.end(), queries.begin(), queries.end());
    ExpectSameAsBruteForce(**disk, *brute, mixed);
    EXPECT_EQ((*disk)->Stats().size, brute->Stats().size);
    EXPECT_EQ((*disk)->Query(1, 4).status().code(), Status::Code::kInvalidArgument);
    // One process at a time: a second open of the folder is refused while this one holds it.
    auto second = DiskSimhashIndex::Open(path);
    ASSERT_FALSE(second.ok());
    EXPECT_NE(second.status().message().find("in use"), std::string::npos)
        << second.status().ToString();
  }
  DiskIndexOptions other;
  other.design = TableDesign::Even(5, 2);  // ignored: the index keeps its own design
  auto reopened = DiskSimhashIndex::Open(path, other);
  ASSERT_TRUE(reopened.ok()) << reopened.status().ToString();
  EXPECT_EQ((*reopened)->Stats().size, brute->Stats().size);
  EXPECT_EQ((*reopened)->Stats().design, TableDesign::Even(4, 1).ToString());
  ExpectSameAsBruteForce(**reopened, *brute,
                         std::vector<uint64_t>(codes.begin() + 100, codes.begin() + 400));
}

TEST(DiskSimhashIndex, OtherDesignsAreExactToo) {
  testing::TempDir dir;
  DiskIndexOptions options;
  options.design = TableDesign::Even(5, 2);
  auto disk = DiskSimhashIndex::Open(dir.Path("five"), options);
  ASSERT_TRUE(disk.ok());
  const auto codes = Codes(3000, 3);
  auto brute = NewBruteForceIndex();
  for (size_t i = 0; i < codes.size(); ++i) {
    ASSERT_TRUE((*disk)->Insert(i, codes[i]).ok());
    ASSERT_TRUE(brute->Insert(i, codes[i]).ok());
  }
  ExpectSameAsBruteForce(**disk, *brute, std::vector<uint64_t>(codes.begin(), codes.begin() + 300),
                         10);
}

TEST(DiskSimhashIndex, RefusesWhatIsNotAnIndex) {
  testing::TempDir dir;
  dir.File("other/notes.txt", "");
  std::filesystem::create_directories(dir.Path("other"));
  std::ofstream(dir.Path("other/notes.txt")) << "my notes";
  auto other = DiskSimhashIndex::Open(dir.Path("other"));
  ASSERT_FALSE(other.ok());
  EXPECT_NE(other.status().message().find("not a disk index"), std::string::npos);
  std::ifstream kept(dir.Path("other/notes.txt"));
  std::string text;
  std::getline(kept, text);
  EXPECT_EQ(text, "my notes");
  DiskIndexOptions no_create;
  no_create.create_if_missing = false;
  EXPECT_EQ(DiskSimhashIndex::Open(dir.Path("missing"), no_create).status().code(),
            Status::Code::kNotFound);
  // A damaged CURRENT file: an error naming the folder, nothing rewritten.
  {
    auto disk = DiskSimhashIndex::Open(dir.Path("damaged"));
    ASSERT_TRUE(disk.ok());
    ASSERT_TRUE((*disk)->Insert(1, 42).ok());
  }
  std::ofstream(dir.Path("damaged/CURRENT"), std::ios::trunc) << "MANIFEST-999999\n";
  auto damaged = DiskSimhashIndex::Open(dir.Path("damaged"));
  ASSERT_FALSE(damaged.ok());
  EXPECT_NE(damaged.status().message().find(dir.Path("damaged")), std::string::npos)
      << damaged.status().ToString();
  std::ifstream current(dir.Path("damaged/CURRENT"));
  std::getline(current, text);
  EXPECT_EQ(text, "MANIFEST-999999");
}

}  // namespace
}  // namespace neardup
