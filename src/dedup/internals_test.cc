// The dedup job's internal pieces against plain references: bounded-memory grouping by fingerprint
// and the document table's ids.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>

#include "dedup/documents.h"
#include "dedup/fingerprint_groups.h"
#include "dedup/signature_groups.h"
#include "testutil.h"

namespace neardup::dedup_internal {
namespace {

// The reference: a map from fingerprint to group, numbered by first document.
void CheckGroups(const std::vector<uint64_t>& fingerprints, const std::vector<bool>& left_out,
                 int threads) {
  std::vector<uint64_t> fp = fingerprints;
  std::vector<uint32_t> group(fp.size(), 0);
  for (size_t d = 0; d < fp.size(); ++d) {
    if (left_out[d]) group[d] = kNoGroup;
  }
  GroupIdenticalFingerprints(&fp, &group, threads);
  std::map<uint64_t, uint32_t> seen;
  std::vector<uint64_t> distinct;
  for (size_t d = 0; d < fingerprints.size(); ++d) {
    if (left_out[d]) {
      ASSERT_EQ(group[d], kNoGroup) << d;
      continue;
    }
    auto [it, added] = seen.emplace(fingerprints[d], static_cast<uint32_t>(distinct.size()));
    if (added) distinct.push_back(fingerprints[d]);
    ASSERT_EQ(group[d], it->second) << "document " << d << ", threads " << threads;
  }
  EXPECT_EQ(fp, distinct);
}

TEST(FingerprintGroupsTest, EqualsAMapOnRandomAndSkewedFingerprints) {
  std::mt19937_64 rng(4);
  const size_t n = testing::Sanitized() ? 90000 : 300000;  // above 4 x 65536: several key ranges
  for (int shape = 0; shape < 4; ++shape) {
    std::vector<uint64_t> fp(n);
    std::vector<bool> left_out(n, false);
    for (size_t d = 0; d < n; ++d) {
      switch (shape) {
        case 0:
          fp[d] = rng();
          break;  // all distinct
        case 1:
          fp[d] = rng() % 1000 * 0x9E3779B97F4A7C15ULL;
          break;  // many copies
        case 2:
          fp[d] = 0xABCD000000000000ULL | rng() % 50000;
          break;  // one 16-bit bucket over budget
        default:
          fp[d] = d % 3 == 0 ? 0 : rng() >> (rng() % 64);
          break;  // zeros and small values
      }
      left_out[d] = rng() % 17 == 0;
    }
    for (int threads : {1, 2, 3}) CheckGroups(fp, left_out, threads);
  }
  CheckGroups({}, {}, 2);
  CheckGroups({5}, {true}, 2);
  CheckGroups({7, 7, 7}, {false, true, false}, 1);
}

// Ids: documents named by their line until the first id field, then a mix, across many runs of 64.
TEST(DocumentTableTest, IdsOfEveryDocument) {
  for (size_t first_named : {size_t{0}, size_t{1}, size_t{64}, size_t{100}, size_t{1000}}) {
    DocumentTable table;
    table.file_starts = {0};
    table.file_names = {"only.jsonl"};
    std::vector<std::string> want;
    std::mt19937_64 rng(first_named);
    for (size_t d = 0; d < 1500; ++d) {
      ++table.documents;
      table.lines = d + 1;
      if (d < first_named || rng() % 5 == 0) {
        table.AddId(nullptr);
        want.push_back(std::to_string(d + 1));
      } else {
        const std::string id =
            rng() % 7 == 0 ? "" : "id-" + std::string(rng() % 40, 'x') + std::to_string(d);
        table.AddId(&id);
        want.push_back(id);
      }
      if (d == 700) table.ReserveIds(3000);
    }
    for (size_t d = 0; d < want.size(); ++d)
      ASSERT_EQ(table.id(d), want[d]) << d << " " << first_named;
  }
}

}  // namespace
}  // namespace neardup::dedup_internal
