// The dedup job's internal pieces against plain references: bounded-memory grouping by fingerprint
// and the document table's ids.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>

#include "dedup/decisions.h"
#include "dedup/documents.h"
#include "dedup/fingerprint_groups.h"
#include "dedup/signature_groups.h"
#include "dedup/spill.h"
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
  for (size_t first_named :
       {size_t{0}, size_t{1}, size_t{64}, size_t{100}, size_t{1000}, size_t{1500}}) {
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

// Spilled signatures are grouped by their hash, then each later member is compared with its group's
// first (fingerprint and sketch): one that differs (a hash collision) is a group of its own. Equal
// hashes are forced here on documents with different sketches and fingerprints; the groups are
// those of the definition at every thread count, through more than one block of comparisons and
// more first members than the cache of their sketches holds.
TEST(SpilledSignatureGroupsTest, CollidingHashesAreSplitByFingerprintAndSketch) {
  DedupOptions options;
  auto signer = DocumentSigner::Create(options.similarity);
  ASSERT_TRUE(signer.ok()) << signer.status().ToString();
  const size_t bytes = (*signer)->sketch_bytes(), bands = (*signer)->bands();
  constexpr uint32_t kDocuments = 30000, kHashes = 2000;
  std::vector<uint64_t> hashes(kDocuments), fingerprints(kDocuments);
  std::vector<std::vector<uint8_t>> sketches(kDocuments, std::vector<uint8_t>(bytes));
  for (uint32_t d = 0; d < kDocuments; ++d) {
    const uint32_t h = d % kHashes;
    hashes[d] = 0x9E3779B97F4A7C15ull * (h + 1);
    fingerprints[d] = d % 11 == 5 ? d : h;
    const uint32_t content = d % 7 == 3 ? h + kHashes : h;
    for (size_t i = 0; i < bytes; ++i) sketches[d][i] = static_cast<uint8_t>(content * 31 + i);
  }
  // The definition: a document joins its hash's first document when both fingerprint and sketch
  // are equal; groups numbered by first document.
  std::vector<uint32_t> want(kDocuments);
  {
    std::map<uint64_t, uint32_t> first_of_hash;
    std::map<uint32_t, uint32_t> number;  // first document -> group
    for (uint32_t d = 0; d < kDocuments; ++d) {
      const uint32_t f = first_of_hash.emplace(hashes[d], d).first->second;
      const bool joins = fingerprints[d] == fingerprints[f] && sketches[d] == sketches[f];
      const uint32_t leader = joins ? f : d;
      want[d] = number.emplace(leader, static_cast<uint32_t>(number.size())).first->second;
    }
  }
  for (int threads : {1, 3}) {
    SCOPED_TRACE(threads);
    testing::TempDir dir;
    auto writer = SpillWriter::Create(dir.path(), bytes, bands);
    ASSERT_TRUE(writer.ok()) << writer.status().ToString();
    const std::vector<uint32_t> keys(bands, 7);
    for (uint32_t d = 0; d < kDocuments; ++d) {
      ASSERT_TRUE((*writer)->Append(sketches[d].data(), keys.data()).ok());
    }
    ASSERT_TRUE((*writer)->Finish().ok());
    auto file = SketchFile::Open(dir.path(), bytes, kDocuments);
    ASSERT_TRUE(file.ok()) << file.status().ToString();
    Signatures signatures;
    signatures.fingerprints = fingerprints;
    signatures.signature_hashes = hashes;
    signatures.spill = writer->get();
    signatures.sketch_file = file->get();
    DocumentTable table;
    table.documents = kDocuments;
    const JobSettings settings{options, (*signer)->options(), **signer, threads};
    // A job cancelled (Ctrl-C) by then stops at the checks of members, with Cancelled.
    std::atomic<bool> cancel{true};
    DedupOptions cancelled_options = options;
    cancelled_options.cancel = &cancel;
    const JobSettings cancelled{cancelled_options, (*signer)->options(), **signer, threads};
    Signatures copy = signatures;
    const auto stopped = GroupDocuments(std::move(copy), {}, table, cancelled);
    EXPECT_EQ(stopped.status().code(), Status::Code::kCancelled) << stopped.status().ToString();
    const auto grouped = GroupDocuments(std::move(signatures), {}, table, settings);
    ASSERT_TRUE(grouped.ok()) << grouped.status().ToString();
    const Grouping& grouping = *grouped;
    EXPECT_EQ(grouping.group_of, want);
    ASSERT_EQ(grouping.first_member.size(), grouping.size());
    for (uint32_t g = 0; g < grouping.size(); ++g) {
      EXPECT_EQ(want[grouping.first_member[g]], g);
    }
  }
}

}  // namespace
}  // namespace neardup::dedup_internal
