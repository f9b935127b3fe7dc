// Save and load: exact results after a round trip, and Corruption (never a crash) for every damaged
// or truncated file.
#include "neardup/index_file.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <iterator>
#include <random>
#include <sstream>

#include "index/index_testutil.h"
#include "neardup/index.h"
#include "neardup/method.h"
#include "neardup/output.h"

namespace neardup {
namespace {

std::string TempPath(const std::string& name) {
  return ::testing::TempDir() + "/neardup_" + std::to_string(::getpid()) + "_" + name;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::vector<uint64_t> Sequence(size_t n) {
  std::vector<uint64_t> ids(n);
  for (size_t i = 0; i < n; ++i) ids[i] = 1000 + 7 * i;
  return ids;
}

void ExpectSameAsNaive(const Index& index, const std::vector<uint64_t>& ids,
                       const std::vector<uint64_t>& codes, const std::vector<bool>& live,
                       int max_k) {
  const auto queries = testing::MakeQueries(codes, 80, max_k, 5);
  for (int k = 0; k <= max_k; ++k) {
    for (uint64_t q : queries) {
      auto got = index.Query(q, k);
      ASSERT_TRUE(got.ok()) << got.status().ToString();
      ASSERT_EQ(*got, testing::NaiveQuery(ids, codes, live, q, k)) << "k=" << k;
    }
  }
}

TEST(IndexFileTest, RoundTripIsExactForEveryDesignAndMode) {
  for (const TableDesign& design : {TableDesign::Even(4, 1), TableDesign::Even(5, 2),
                                    TableDesign::Even(6, 3), TableDesign::Even(8, 1)}) {
    const auto codes = testing::MakeCodes(testing::DataKind::kClustered, 3000, 1);
    const auto ids = Sequence(codes.size());
    IndexOptions options;
    options.design = design;
    options.merge_threshold = 100;
    auto index = NewPermutedTableIndex(options);
    ASSERT_TRUE(index.ok());
    std::vector<bool> live(codes.size(), true);
    for (size_t i = 0; i < codes.size(); ++i) ASSERT_TRUE((*index)->Insert(ids[i], codes[i]).ok());
    for (size_t i = 0; i < codes.size(); i += 5) {  // removed ones must not come back
      ASSERT_TRUE((*index)->Remove(ids[i]).ok());
      live[i] = false;
    }
    const std::string path = TempPath("roundtrip.ndx");
    ASSERT_TRUE(SaveIndex(**index, path).ok());
    for (bool map : {true, false}) {
      for (bool verify : {true, false}) {
        LoadOptions load;
        load.map_file = map;
        load.verify_checksums = verify;
        auto loaded = LoadIndex(path, load);
        ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
        EXPECT_EQ((*loaded)->Stats().size, (*index)->Stats().size);
        EXPECT_EQ((*loaded)->Stats().design, design.ToString());
        ExpectSameAsNaive(**loaded, ids, codes, live, design.max_exact_k());
      }
    }
    // A loaded index stays mutable: remove and insert, then compare again.
    auto loaded = LoadIndex(path);
    ASSERT_TRUE(loaded.ok());
    auto more_ids = ids;
    auto more_codes = codes;
    ASSERT_TRUE((*loaded)->Remove(ids[1]).ok());
    live[1] = false;
    for (size_t i = 0; i < 300; ++i) {
      more_ids.push_back(1 + 7 * i);
      more_codes.push_back(codes[i] ^ (uint64_t{1} << (i % 64)));
      live.push_back(true);
      ASSERT_TRUE((*loaded)->Insert(more_ids.back(), more_codes.back()).ok());
    }
    ExpectSameAsNaive(**loaded, more_ids, more_codes, live, design.max_exact_k());
    std::remove(path.c_str());
  }
}

TEST(IndexFileTest, EmptyIndexRoundTrips) {
  IndexOptions options;
  options.design = TableDesign::Even(4, 1);
  auto index = NewPermutedTableIndex(options);
  ASSERT_TRUE(index.ok());
  const std::string path = TempPath("empty.ndx");
  ASSERT_TRUE(SaveIndex(**index, path).ok());
  auto loaded = LoadIndex(path);
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  EXPECT_EQ((*loaded)->Stats().size, 0u);
  EXPECT_TRUE((*loaded)->Query(0, 3)->empty());
  std::remove(path.c_str());
}

TEST(IndexFileTest, DamagedFilesGiveCorruption) {
  const auto codes = testing::MakeCodes(testing::DataKind::kUniform, 700, 2);
  IndexOptions options;
  options.design = TableDesign::Even(5, 2);
  auto index = BuildPermutedTableIndex(Sequence(codes.size()), codes, options);
  ASSERT_TRUE(index.ok());
  const std::string path = TempPath("good.ndx");
  ASSERT_TRUE(SaveIndex(**index, path).ok());
  const std::string good = ReadFile(path);
  const std::string bad = TempPath("bad.ndx");
  auto expect_corruption = [&](const std::string& bytes, const std::string& what) {
    WriteFile(bad, bytes);
    for (bool map : {true, false}) {
      LoadOptions load;
      load.map_file = map;
      auto loaded = LoadIndex(bad, load);
      ASSERT_FALSE(loaded.ok()) << what;
      EXPECT_EQ(loaded.status().code(), Status::Code::kCorruption)
          << what << ": " << loaded.status().ToString();
      EXPECT_NE(loaded.status().message().find(bad), std::string::npos) << what;
    }
  };
  // Every truncation length on a coarse grid, and every prefix of the header.
  for (size_t length = 0; length < good.size(); length += length < 512 ? 1 : 997) {
    expect_corruption(good.substr(0, length), "truncated to " + std::to_string(length));
  }
  // A flipped bit anywhere: header fields, section table, each section.
  for (size_t offset = 0; offset < good.size(); offset += offset < 512 ? 3 : 389) {
    std::string flipped = good;
    flipped[offset] = static_cast<char>(flipped[offset] ^ 0x10);
    expect_corruption(flipped, "bit flipped at " + std::to_string(offset));
  }
  std::string version = good;
  version[8] = 3;
  expect_corruption(version, "future version");
  expect_corruption(std::string("not an index at all, just text\n"), "text");
  expect_corruption(good + "trailing", "trailing bytes");
  std::remove(path.c_str());
  std::remove(bad.c_str());
}

TEST(IndexFileTest, MissingFileAndWrongIndexKind) {
  auto missing = LoadIndex(TempPath("does_not_exist.ndx"));
  EXPECT_EQ(missing.status().code(), Status::Code::kNotFound);
  auto brute = NewBruteForceIndex();
  EXPECT_EQ(SaveIndex(*brute, TempPath("brute.ndx")).code(), Status::Code::kInvalidArgument);
  IndexOptions options;
  options.design = TableDesign::Even(4, 1);
  auto index = NewPermutedTableIndex(options);
  EXPECT_EQ(SaveIndex(**index, "/nonexistent_dir/x.ndx").code(), Status::Code::kIOError);
}

TEST(IndexFileTest, FingerprintFilesRecordTheirSettings) {
  const auto codes = testing::MakeCodes(testing::DataKind::kClustered, 500, 3);
  auto index = BuildPermutedTableIndex(Sequence(codes.size()), codes, {});
  ASSERT_TRUE(index.ok());
  MethodOptions simhash;
  simhash.method = DedupMethod::kSimhash;
  const std::string settings = SettingsLine(*ResolveMethodOptions(simhash));
  const std::string path = TempPath("settings.ndx");
  ASSERT_TRUE(SaveIndex(**index, path, settings).ok());
  auto info = ReadIndexFileInfo(path);
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(info->version, 2u);
  EXPECT_EQ(info->kind, IndexFileKind::kFingerprints);
  EXPECT_EQ(info->settings, settings);
  EXPECT_EQ(info->documents, codes.size());
  auto loaded = LoadIndex(path);
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  ExpectSameAsNaive(**loaded, Sequence(codes.size()), codes, std::vector<bool>(codes.size(), true),
                    3);
  EXPECT_EQ(LoadSignatureIndex(path).status().code(), Status::Code::kInvalidArgument);
  // Without settings (fingerprints from elsewhere): recorded as unknown.
  ASSERT_TRUE(SaveIndex(**index, path).ok());
  EXPECT_EQ(ReadIndexFileInfo(path)->settings, "");
  std::remove(path.c_str());
}

// What an index built from fingerprints records: how its ids name documents and the k queries
// default to. Files saved without them (and of earlier builds) record neither.
TEST(IndexFileTest, FingerprintFilesRecordIdNamesAndQueryK) {
  const auto codes = testing::MakeCodes(testing::DataKind::kClustered, 500, 3);
  auto index = BuildPermutedTableIndex(Sequence(codes.size()), codes, {});
  ASSERT_TRUE(index.ok());
  const std::string path = TempPath("recorded.ndx");
  for (const IndexIdNames names : {IndexIdNames::kInIndex, IndexIdNames::kIdTable}) {
    for (int k = 0; k <= 3; ++k) {
      IndexFileOptions options;
      options.id_names = names;
      options.query_k = k;
      OutputFile out;
      ASSERT_TRUE(out.Open(path).ok());
      ASSERT_TRUE(SaveIndex(**index, &out, options).ok());
      ASSERT_TRUE(out.Commit().ok());
      auto info = ReadIndexFileInfo(path);
      ASSERT_TRUE(info.ok()) << info.status().ToString();
      EXPECT_EQ(info->id_names, names);
      EXPECT_EQ(info->query_k, k);
      auto loaded = LoadIndex(path);
      ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
      ExpectSameAsNaive(**loaded, Sequence(codes.size()), codes,
                        std::vector<bool>(codes.size(), true), 3);
    }
  }
  ASSERT_TRUE(SaveIndex(**index, path).ok());
  EXPECT_EQ(ReadIndexFileInfo(path)->id_names, IndexIdNames::kUnrecorded);
  EXPECT_EQ(ReadIndexFileInfo(path)->query_k, -1);
  // A k the design does not answer exactly is refused.
  IndexFileOptions too_large;
  too_large.query_k = 4;
  OutputFile out;
  ASSERT_TRUE(out.Open(path).ok());
  EXPECT_EQ(SaveIndex(**index, &out, too_large).code(), Status::Code::kInvalidArgument);
  std::remove(path.c_str());
}

// A file written by the version-1 writer (tests/data/index_v1/README.md) is still read: no
// settings, the same fingerprints.
TEST(IndexFileTest, VersionOneFilesAreRead) {
  const std::string dir = std::string(NEARDUP_SOURCE_DIR) + "/tests/data/index_v1/";
  auto info = ReadIndexFileInfo(dir + "simhash.idx");
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(info->version, 1u);
  EXPECT_EQ(info->kind, IndexFileKind::kFingerprints);
  EXPECT_EQ(info->settings, "");
  EXPECT_EQ(info->documents, 10u);
  EXPECT_EQ(info->id_names, IndexIdNames::kUnrecorded);
  EXPECT_EQ(info->query_k, -1);
  auto index = LoadIndex(dir + "simhash.idx");
  ASSERT_TRUE(index.ok()) << index.status().ToString();
  MethodOptions simhash;
  simhash.method = DedupMethod::kSimhash;
  auto signer = std::move(DocumentSigner::Create(simhash)).value();
  std::ifstream corpus(dir + "corpus.txt");
  std::string line;
  uint64_t id = 0;
  while (std::getline(corpus, line)) {
    auto matches = (*index)->Query(signer->Sign(line)->simhash, 0);
    ASSERT_TRUE(matches.ok());
    ASSERT_FALSE(matches->empty()) << line;
    EXPECT_EQ((*matches)[0].id, id++) << line;
  }
  EXPECT_EQ(id, 10u);
}

// Texts, some of them near copies of others, one without features.
std::vector<std::string> Texts(size_t n) {
  std::mt19937_64 rng(5);
  std::vector<std::string> texts;
  for (size_t i = 0; i < n; ++i) {
    std::string text;
    if (i > 0 && i % 3 == 0) {
      text = texts[rng() % texts.size()];
      text.append(" and one more");
    } else {
      for (int w = 0; w < 40; ++w) {
        text.push_back('w');
        text.append(std::to_string(rng() % 500));
        text.push_back(' ');
      }
    }
    texts.push_back(i == 7 ? "!!! ???" : text);
  }
  return texts;
}

SignatureSet SignTexts(const DocumentSigner& signer, const std::vector<std::string>& texts) {
  SignatureSet set;
  set.settings = signer.settings();
  set.sketch_bytes = signer.sketch_bytes();
  set.bands = signer.bands();
  for (size_t i = 0; i < texts.size(); ++i) {
    const Signature s = *signer.Sign(texts[i]);
    set.ids.push_back(100 + 3 * i);
    set.simhashes.push_back(s.simhash);
    set.sketches.insert(set.sketches.end(), s.sketch.begin(), s.sketch.end());
    set.band_keys.insert(set.band_keys.end(), s.band_keys.begin(), s.band_keys.end());
  }
  return set;
}

TEST(IndexFileTest, SignatureFilesRoundTrip) {
  MethodOptions accurate;
  accurate.threshold = 0.7;
  auto signer = std::move(DocumentSigner::Create(accurate)).value();
  const std::vector<std::string> texts = Texts(60);
  const SignatureSet set = SignTexts(*signer, texts);
  const std::string path = TempPath("signatures.ndx");
  ASSERT_TRUE(SaveSignatureIndex(set, path).ok());
  auto info = ReadIndexFileInfo(path);
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(info->version, 2u);
  EXPECT_EQ(info->kind, IndexFileKind::kSignatures);
  EXPECT_EQ(info->settings, signer->settings());
  EXPECT_EQ(info->documents, texts.size());
  for (bool verify : {true, false}) {
    auto loaded = LoadSignatureIndex(path, verify);
    ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
    EXPECT_EQ(loaded->settings, set.settings);
    EXPECT_EQ(loaded->ids, set.ids);
    EXPECT_EQ(loaded->simhashes, set.simhashes);
    EXPECT_EQ(loaded->sketches, set.sketches);
    EXPECT_EQ(loaded->band_keys, set.band_keys);
    for (size_t i = 0; i < texts.size(); ++i)
      EXPECT_EQ(loaded->Get(i), *signer->Sign(texts[i])) << i;
    EXPECT_TRUE(loaded->Get(7).empty);
  }
  EXPECT_EQ(LoadIndex(path).status().code(), Status::Code::kInvalidArgument);
  // An empty set round-trips too.
  SignatureSet none = SignTexts(*signer, {});
  ASSERT_TRUE(SaveSignatureIndex(none, path).ok());
  auto empty = LoadSignatureIndex(path);
  ASSERT_TRUE(empty.ok()) << empty.status().ToString();
  EXPECT_EQ(empty->size(), 0u);
  // Sets that do not hold together are refused.
  SignatureSet bad = set;
  bad.band_keys.pop_back();
  EXPECT_EQ(SaveSignatureIndex(bad, path).code(), Status::Code::kInvalidArgument);
  bad = set;
  MethodOptions simhash;
  simhash.method = DedupMethod::kSimhash;
  bad.settings = SettingsLine(*ResolveMethodOptions(simhash));
  EXPECT_EQ(SaveSignatureIndex(bad, path).code(), Status::Code::kInvalidArgument);
  std::remove(path.c_str());
}

TEST(IndexFileTest, DamagedSignatureFilesGiveCorruption) {
  auto signer = std::move(DocumentSigner::Create({})).value();
  const std::string path = TempPath("good_signatures.ndx");
  ASSERT_TRUE(SaveSignatureIndex(SignTexts(*signer, Texts(12)), path).ok());
  const std::string good = ReadFile(path);
  const std::string bad = TempPath("bad_signatures.ndx");
  auto expect_corruption = [&](const std::string& bytes, const std::string& what) {
    WriteFile(bad, bytes);
    auto loaded = LoadSignatureIndex(bad);
    ASSERT_FALSE(loaded.ok()) << what;
    EXPECT_EQ(loaded.status().code(), Status::Code::kCorruption)
        << what << ": " << loaded.status().ToString();
    EXPECT_NE(loaded.status().message().find(bad), std::string::npos) << what;
  };
  for (size_t length = 0; length < good.size(); length += length < 700 ? 1 : 97) {
    expect_corruption(good.substr(0, length), "truncated to " + std::to_string(length));
  }
  for (size_t offset = 0; offset < good.size(); offset += offset < 700 ? 3 : 41) {
    std::string flipped = good;
    flipped[offset] = static_cast<char>(flipped[offset] ^ 0x10);
    expect_corruption(flipped, "bit flipped at " + std::to_string(offset));
  }
  expect_corruption(good + "trailing", "trailing bytes");
  // A version this build does not read is refused, saying so.
  std::string future = good;
  future[8] = 3;
  WriteFile(bad, future);
  for (const auto& status : {LoadSignatureIndex(bad).status(), ReadIndexFileInfo(bad).status(),
                             LoadIndex(bad).status()}) {
    EXPECT_EQ(status.code(), Status::Code::kCorruption);
    EXPECT_NE(status.message().find("version 3; this build reads versions 1 to 2"),
              std::string::npos)
        << status.ToString();
  }
  std::remove(path.c_str());
  std::remove(bad.c_str());
}

}  // namespace
}  // namespace neardup
