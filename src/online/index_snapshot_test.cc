// OnlineIndex::Save and Load: a loaded index answers exactly as the saved one, for both methods and
// with sketches in memory or in a file, and then takes the same inserts, removes and loads with the
// same results; files of other settings or kinds are refused, and damaged files give Corruption
// (or, damaged with their checksums made right again, a loaded index that still works).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>
#include <xxhash.h>

#include <atomic>
#include <cstring>
#include <fstream>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "neardup/index.h"
#include "neardup/index_file.h"
#include "neardup/online_index.h"
#include "neardup/output.h"
#include "online/online_testutil.h"
#include "testutil.h"

namespace neardup {
namespace {

using testing::MakeCorpus;
using testing::Method;
using testing::Options;
using testing::Variant;

std::string VariantName(const ::testing::TestParamInfo<Variant>& param) {
  return std::string(DedupMethodName(param.param.method)) +
         (param.param.sketch_file ? "SketchFile" : "");
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

// In place, then cut to size: rewriting a file of the same size, or shrinking it, spares the file
// system freeing and allocating its blocks at every write (slow where it discards them).
void WriteFile(const std::string& path, const std::string& bytes) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  ASSERT_GE(fd, 0) << path;
  ASSERT_EQ(::pwrite(fd, bytes.data(), bytes.size(), 0), static_cast<ssize_t>(bytes.size()));
  ASSERT_EQ(::ftruncate(fd, static_cast<off_t>(bytes.size())), 0);
  ::close(fd);
}

Status SaveTo(const OnlineIndex& index, const std::string& path) {
  OutputFile out;
  NEARDUP_RETURN_IF_ERROR(out.Open(path));
  NEARDUP_RETURN_IF_ERROR(index.Save(&out));
  return out.Commit();
}

// Every stored document, in row order.
std::vector<std::pair<std::string, Signature>> Contents(const OnlineIndex& index) {
  std::vector<std::pair<std::string, Signature>> out;
  const Status status = index.ForEach([&](std::string_view id, const Signature& signature) {
    out.emplace_back(std::string(id), signature);
  });
  EXPECT_TRUE(status.ok()) << status.ToString();
  return out;
}

// The same counts and documents, and the same answer to every query. same_work: the counters of
// the queries' work agree too (not for kSimhash, whose tables a load builds again).
void ExpectSame(const OnlineIndex& a, const OnlineIndex& b, const std::vector<Signature>& queries,
                bool same_work, const std::string& context) {
  const OnlineIndexStats x = a.Stats(), y = b.Stats();
  EXPECT_EQ(x.documents, y.documents) << context;
  EXPECT_EQ(x.empty_documents, y.empty_documents) << context;
  EXPECT_EQ(x.inserts, y.inserts) << context;
  EXPECT_EQ(x.removes, y.removes) << context;
  EXPECT_EQ(x.settings, y.settings) << context;
  EXPECT_EQ(x.queries.queries, y.queries.queries) << context;
  EXPECT_EQ(x.queries.matches, y.queries.matches) << context;
  if (same_work) {
    EXPECT_EQ(x.queries.lookups, y.queries.lookups) << context;
    EXPECT_EQ(x.queries.candidates, y.queries.candidates) << context;
  }
  EXPECT_EQ(Contents(a), Contents(b)) << context;
  for (size_t i = 0; i < queries.size(); ++i) {
    auto found_a = a.QuerySigned(queries[i]);
    auto found_b = b.QuerySigned(queries[i]);
    ASSERT_TRUE(found_a.ok() && found_b.ok()) << context << ": " << found_b.status().ToString();
    ASSERT_EQ(*found_a, *found_b) << context << ": query " << i;
  }
}

// A stream of signatures[first .. end) under their numbers as ids, for InsertAll.
std::function<Result<bool>(std::string*, Signature*)> Stream(
    const std::vector<Signature>& signatures, size_t first, size_t end,
    const std::string& prefix = "") {
  auto next = std::make_shared<size_t>(first);
  return [&signatures, next, end, prefix](std::string* id, Signature* signature) -> Result<bool> {
    if (*next == end) return false;
    *id = prefix + std::to_string(*next);
    *signature = signatures[(*next)++];
    return true;
  };
}

class SaveAndLoadTest : public ::testing::TestWithParam<Variant> {};

TEST_P(SaveAndLoadTest, LoadedIndexAnswersAndGoesOnAsTheSavedOne) {
  const Variant variant = GetParam();
  const bool same_work = variant.method == DedupMethod::kAccurate;
  const auto texts = MakeCorpus(250, 20, 17);
  auto saved = std::move(OnlineIndex::Create(Options(variant))).value();
  std::vector<Signature> signatures;
  for (const auto& t : texts) signatures.push_back(*saved->signer().Sign(t));
  // The first 2,000 in one load (the band tables' sorted runs), the next 2,000 one at a time (their
  // buffer; for sketches in a file, past its write buffer), some checked first; removes of both.
  ASSERT_TRUE(saved->InsertAll(Stream(signatures, 0, 2000), 2000).ok());
  std::mt19937 rng(3);
  for (size_t i = 2000; i < 4000; ++i) {
    const std::string id = std::to_string(i);
    if (i % 3 == 0) {
      ASSERT_TRUE(saved->QueryAndInsert(id, texts[i], InsertPolicy::kIfNew).ok());
    } else {
      ASSERT_TRUE(saved->InsertSigned(id, signatures[i]).ok());
    }
    if (i % 7 == 0) (void)saved->Remove(std::to_string(rng() % i));
  }
  ASSERT_GT(saved->Stats().removes, 200u);
  ASSERT_GT(saved->Stats().empty_documents, 20u);
  ::neardup::testing::TempDir dir;
  const std::string path = dir.Path("index.ndx");
  ASSERT_TRUE(SaveTo(*saved, path).ok());
  auto loaded_or = OnlineIndex::Load(path, Options(variant));
  ASSERT_TRUE(loaded_or.ok()) << loaded_or.status().ToString();
  auto loaded = std::move(*loaded_or);
  // Its state is the saved one's, byte for byte.
  const std::string again = dir.Path("again.ndx");
  ASSERT_TRUE(SaveTo(*loaded, again).ok());
  EXPECT_TRUE(ReadFile(path) == ReadFile(again));
  auto info = ReadIndexFileInfo(path);
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->kind, IndexFileKind::kOnlineIndex);
  EXPECT_EQ(info->documents, saved->Stats().inserts);

  ExpectSame(*saved, *loaded, signatures, same_work, "after the load");
  size_t matched = 0;
  for (const auto& s : signatures) {
    matched += loaded->QuerySigned(s)->size() > 1;
    (void)saved->QuerySigned(s);  // the same queries, for the counters
  }
  EXPECT_GT(matched, signatures.size() / 10);  // the answers compared are not all empty

  // Both go on alike: inserts, removes, checks, ids stored again, then a load of more documents.
  for (size_t i = 4000; i < 4600; ++i) {
    const std::string id = std::to_string(i);
    if (i % 4 == 0) {
      auto a = saved->QueryAndInsert(id, texts[i], InsertPolicy::kIfNew);
      auto b = loaded->QueryAndInsert(id, texts[i], InsertPolicy::kIfNew);
      ASSERT_TRUE(a.ok() && b.ok());
      EXPECT_EQ(a->matches, b->matches) << i;
      EXPECT_EQ(a->inserted, b->inserted) << i;
    } else {
      ASSERT_TRUE(saved->InsertSigned(id, signatures[i]).ok());
      ASSERT_TRUE(loaded->InsertSigned(id, signatures[i]).ok());
    }
    if (i % 5 == 0) {
      const std::string victim = std::to_string(rng() % i);
      EXPECT_EQ(saved->Remove(victim).code(), loaded->Remove(victim).code()) << victim;
      EXPECT_EQ(saved->InsertSigned(victim, signatures[i]).code(),
                loaded->InsertSigned(victim, signatures[i]).code());
    }
  }
  ExpectSame(*saved, *loaded, signatures, same_work, "after inserts and removes");
  ASSERT_TRUE(saved->InsertAll(Stream(signatures, 4600, 5000, "more-"), 400).ok());
  ASSERT_TRUE(loaded->InsertAll(Stream(signatures, 4600, 5000, "more-"), 400).ok());
  ExpectSame(*saved, *loaded, signatures, same_work, "after a load of more documents");
}

// Enough documents for the band tables' buffer to be merged (65,536 rows) and purged of removed
// rows before the save, and merged again after the load (by InsertAll).
TEST_P(SaveAndLoadTest, LoadedIndexGoesOnAcrossMerges) {
  const Variant variant = GetParam();
  if (variant.method != DedupMethod::kAccurate) GTEST_SKIP() << "band tables only";
  auto saved = std::move(OnlineIndex::Create(Options(variant))).value();
  const DocumentSigner& signer = saved->signer();
  std::mt19937_64 rng(99);
  std::vector<Signature> all;
  Signature s;
  s.sketch.resize(signer.sketch_bytes());
  s.band_keys.resize(signer.bands());
  for (size_t i = 0; i < 78000; ++i) {
    if (i % 50 != 0 && i > 0) {  // a variant of an earlier document
      s = all[rng() % all.size()];
      for (int f = 0; f < 6; ++f)
        s.sketch[4 + rng() % (s.sketch.size() - 4)] ^= static_cast<uint8_t>(1u << (rng() % 8));
      for (auto& k : s.band_keys) {
        if (rng() % 3 == 0) k = static_cast<uint32_t>(rng());
      }
    } else {
      for (auto& byte : s.sketch) byte = static_cast<uint8_t>(rng());
      s.sketch[0] = 200;
      s.sketch[1] = s.sketch[2] = s.sketch[3] = 0;
      for (auto& k : s.band_keys) k = static_cast<uint32_t>(rng() % 5000);
    }
    all.push_back(s);
  }
  ASSERT_TRUE(saved->InsertAll(Stream(all, 0, 2000)).ok());
  for (size_t i = 2000; i < 70000; ++i) {  // merged (and purged) at 67,536
    ASSERT_TRUE(saved->InsertSigned(std::to_string(i), all[i]).ok());
    if (i % 11 == 5) (void)saved->Remove(std::to_string(rng() % i));
  }
  ::neardup::testing::TempDir dir;
  const std::string path = dir.Path("index.ndx");
  ASSERT_TRUE(SaveTo(*saved, path).ok());
  auto loaded = std::move(OnlineIndex::Load(path, Options(variant))).value();
  std::vector<Signature> sample;
  for (int q = 0; q < 300; ++q) sample.push_back(all[rng() % all.size()]);
  ExpectSame(*saved, *loaded, sample, true, "after the load");
  for (size_t i = 70000; i < 73000; ++i) {
    ASSERT_TRUE(saved->InsertSigned(std::to_string(i), all[i]).ok());
    ASSERT_TRUE(loaded->InsertSigned(std::to_string(i), all[i]).ok());
    if (i % 11 == 5) {
      const std::string victim = std::to_string(rng() % i);
      EXPECT_EQ(saved->Remove(victim).code(), loaded->Remove(victim).code());
    }
  }
  ASSERT_TRUE(saved->InsertAll(Stream(all, 73000, 78000)).ok());
  ASSERT_TRUE(loaded->InsertAll(Stream(all, 73000, 78000)).ok());
  ExpectSame(*saved, *loaded, sample, true, "after inserts, removes and a load");
}

TEST_P(SaveAndLoadTest, EmptyIndexRoundTrips) {
  auto empty = std::move(OnlineIndex::Create(Options(GetParam()))).value();
  ::neardup::testing::TempDir dir;
  ASSERT_TRUE(SaveTo(*empty, dir.Path("empty.ndx")).ok());
  auto loaded_or = OnlineIndex::Load(dir.Path("empty.ndx"), Options(GetParam()));
  ASSERT_TRUE(loaded_or.ok()) << loaded_or.status().ToString();
  OnlineIndex& loaded = **loaded_or;
  EXPECT_EQ(loaded.Stats().documents, 0u);
  ASSERT_TRUE(loaded.Insert("a", "some words of a text").ok());
  ASSERT_TRUE(loaded.Insert("b", "some words of a text").ok());
  EXPECT_EQ(loaded.Query("some words of a text")->size(), 2u);
}

INSTANTIATE_TEST_SUITE_P(Methods, SaveAndLoadTest,
                         ::testing::Values(Variant{DedupMethod::kAccurate},
                                           Variant{DedupMethod::kAccurate, true},
                                           Variant{DedupMethod::kSimhash}),
                         VariantName);

// Save under the shared lock while another thread inserts and a third queries: each file is a cut
// of the inserts, the documents of some first n of them.
TEST(SaveAndLoad, SaveWhileInsertingGivesACut) {
  const auto texts = MakeCorpus(100, 30, 9);
  auto index = std::move(OnlineIndex::Create(Options({DedupMethod::kAccurate}))).value();
  std::vector<Signature> signatures;
  for (const auto& t : texts) signatures.push_back(*index->signer().Sign(t));
  std::atomic<bool> done{false};
  std::thread inserter([&] {
    for (size_t i = 0; i < signatures.size(); ++i)
      EXPECT_TRUE(index->InsertSigned(std::to_string(i), signatures[i]).ok());
    done = true;
  });
  std::thread querier([&] {
    for (size_t i = 0; !done; i = (i + 1) % signatures.size())
      EXPECT_TRUE(index->QuerySigned(signatures[i]).ok());
  });
  ::neardup::testing::TempDir dir;
  std::vector<std::string> paths;
  for (int save = 0; save < 4; ++save) {
    paths.push_back(dir.Path("cut" + std::to_string(save) + ".ndx"));
    ASSERT_TRUE(SaveTo(*index, paths.back()).ok());
  }
  inserter.join();
  querier.join();
  for (const std::string& path : paths) {
    auto loaded = std::move(OnlineIndex::Load(path, Options({DedupMethod::kAccurate}))).value();
    const auto contents = Contents(*loaded);
    ASSERT_LE(contents.size(), signatures.size());
    for (size_t i = 0; i < contents.size(); ++i) {
      ASSERT_EQ(contents[i].first, std::to_string(i)) << path;
      ASSERT_EQ(contents[i].second, signatures[i]) << path;
    }
  }
}

TEST(SaveAndLoad, OtherSettingsAndOtherFilesAreRefused) {
  ::neardup::testing::TempDir dir;
  const auto texts = MakeCorpus(5, 4, 1);
  for (DedupMethod method : {DedupMethod::kAccurate, DedupMethod::kSimhash}) {
    auto index = std::move(OnlineIndex::Create(Options({method}))).value();
    for (size_t i = 0; i < texts.size(); ++i)
      ASSERT_TRUE(index->Insert(std::to_string(i), texts[i]).ok());
    const std::string path = dir.Path("index.ndx");
    ASSERT_TRUE(SaveTo(*index, path).ok());
    MethodOptions other = Method(method);
    if (method == DedupMethod::kAccurate) {
      other.threshold = 0.7;
    } else {
      other.k = 2;
    }
    const MethodOptions other_method =
        Method(method == DedupMethod::kAccurate ? DedupMethod::kSimhash : DedupMethod::kAccurate);
    for (const MethodOptions& options : {other, other_method}) {
      OnlineIndexOptions load;
      load.method = options;
      const Status refused = OnlineIndex::Load(path, load).status();
      EXPECT_EQ(refused.code(), Status::Code::kFailedPrecondition) << refused.ToString();
      EXPECT_NE(refused.message().find(path), std::string::npos) << refused.ToString();
      EXPECT_NE(refused.message().find(index->signer().settings()), std::string::npos)
          << refused.ToString();
    }
    EXPECT_EQ(LoadIndex(path).status().code(), Status::Code::kInvalidArgument);
    EXPECT_EQ(LoadSignatureIndex(path).status().code(), Status::Code::kInvalidArgument);
  }
  // Index files of the other kinds.
  auto fingerprints = std::move(NewPermutedTableIndex({})).value();
  ASSERT_TRUE(fingerprints->Insert(1, 42).ok());
  ASSERT_TRUE(SaveIndex(*fingerprints, dir.Path("fingerprints.ndx")).ok());
  EXPECT_EQ(OnlineIndex::Load(dir.Path("fingerprints.ndx"), Options({DedupMethod::kSimhash}))
                .status()
                .code(),
            Status::Code::kInvalidArgument);
  const Status missing = OnlineIndex::Load(dir.Path("missing.ndx"), {}).status();
  EXPECT_EQ(missing.code(), Status::Code::kNotFound);
  EXPECT_NE(missing.message().find("missing.ndx"), std::string::npos);
}

// The section table of a file (doc/index_format.md).
struct Section {
  uint32_t kind = 0;
  uint32_t table = 0;
  uint64_t offset = 0;
  uint64_t size = 0;
};

template <typename T>
T Get(const std::string& bytes, size_t at) {
  T value;
  std::memcpy(&value, bytes.data() + at, sizeof value);
  return value;
}

template <typename T>
void Put(std::string* bytes, size_t at, T value) {
  std::memcpy(bytes->data() + at, &value, sizeof value);
}

std::vector<Section> Sections(const std::string& file) {
  std::vector<Section> sections(Get<uint32_t>(file, 48));
  for (size_t s = 0; s < sections.size(); ++s) {
    const size_t at = 128 + 32 * s;
    sections[s] = {Get<uint32_t>(file, at), Get<uint32_t>(file, at + 4),
                   Get<uint64_t>(file, at + 8), Get<uint64_t>(file, at + 16)};
  }
  return sections;
}

// Sets every checksum right again, as for a file written so.
void Reseal(std::string* file) {
  const std::vector<Section> sections = Sections(*file);
  for (size_t s = 0; s < sections.size(); ++s) {
    Put<uint64_t>(file, 128 + 32 * s + 24,
                  XXH3_64bits(file->data() + sections[s].offset, sections[s].size));
  }
  const auto header_size = Get<uint32_t>(*file, 12);
  Put<uint64_t>(
      file, 120,
      XXH3_64bits(file->data(), 120) ^ XXH3_64bits(file->data() + 128, header_size - 128));
}

// A small index of both states (sorted runs and buffer), with removed and empty documents.
std::unique_ptr<OnlineIndex> SmallIndex(const Variant& variant,
                                        std::vector<Signature>* signatures) {
  const auto texts = MakeCorpus(10, 6, 21);
  auto index = std::move(OnlineIndex::Create(Options(variant))).value();
  for (const auto& t : texts) signatures->push_back(*index->signer().Sign(t));
  EXPECT_TRUE(index->InsertAll(Stream(*signatures, 0, 40)).ok());
  for (size_t i = 40; i < texts.size(); ++i)
    EXPECT_TRUE(index->InsertSigned(std::to_string(i), (*signatures)[i]).ok());
  for (size_t i = 1; i < texts.size(); i += 9) EXPECT_TRUE(index->Remove(std::to_string(i)).ok());
  return index;
}

// Uses every call of an index loaded from a damaged file: nothing may crash or hang.
void Exercise(OnlineIndex* index, const std::vector<Signature>& signatures,
              const std::string& scratch) {
  for (const auto& s : signatures) (void)index->QuerySigned(s);
  (void)Contents(*index);
  for (size_t i = 0; i < signatures.size(); i += 5) {
    (void)index->Remove(std::to_string(i));
    (void)index->InsertSigned("new-" + std::to_string(i), signatures[i]);
    (void)index->QueryAndInsertSigned("check-" + std::to_string(i), signatures[i],
                                      InsertPolicy::kAlways);
  }
  (void)index->InsertAll(Stream(signatures, 0, signatures.size(), "load-"));
  for (const auto& s : signatures) (void)index->QuerySigned(s);
  (void)SaveTo(*index, scratch);
}

class DamagedFileTest : public ::testing::TestWithParam<Variant> {};

TEST_P(DamagedFileTest, TruncatedOrFlippedFilesGiveCorruption) {
  std::vector<Signature> signatures;
  auto index = SmallIndex(GetParam(), &signatures);
  ::neardup::testing::TempDir dir;
  const std::string path = dir.Path("good.ndx");
  ASSERT_TRUE(SaveTo(*index, path).ok());
  const std::string good = ReadFile(path);
  const std::string bad = dir.Path("bad.ndx");
  auto expect_corruption = [&](const std::string& bytes, const std::string& what) {
    WriteFile(bad, bytes);
    auto loaded = OnlineIndex::Load(bad, Options(GetParam()));
    ASSERT_FALSE(loaded.ok()) << what;
    EXPECT_EQ(loaded.status().code(), Status::Code::kCorruption)
        << what << ": " << loaded.status().ToString();
    EXPECT_NE(loaded.status().message().find(bad), std::string::npos) << what;
  };
  // Through the header, section table and settings line closely, then a sample. (Shorter and
  // shorter: see WriteFile.)
  const size_t header = 128 + 32 * Sections(good).size() + 300;
  std::vector<size_t> lengths;
  for (size_t length = 0; length < good.size(); length += length < header ? 3 : 997)
    lengths.push_back(length);
  for (auto length = lengths.rbegin(); length != lengths.rend(); ++length)
    expect_corruption(good.substr(0, *length), "truncated to " + std::to_string(*length));
  for (size_t offset = 0; offset < good.size(); offset += offset < header ? 5 : 499) {
    std::string flipped = good;
    flipped[offset] = static_cast<char>(flipped[offset] ^ 0x10);
    expect_corruption(flipped, "bit flipped at " + std::to_string(offset));
  }
  expect_corruption(good + "trailing", "trailing bytes");
}

// Damage that the checksums do not catch (made right again): bytes changed in every section give
// Corruption or an index that still works (a sketch or a fingerprint changed is a valid index).
TEST_P(DamagedFileTest, ResealedDamageGivesCorruptionOrAWorkingIndex) {
  std::vector<Signature> signatures;
  auto index = SmallIndex(GetParam(), &signatures);
  ::neardup::testing::TempDir dir;
  ASSERT_TRUE(SaveTo(*index, dir.Path("good.ndx")).ok());
  const std::string good = ReadFile(dir.Path("good.ndx"));
  const std::vector<Section> sections = Sections(good);
  std::mt19937 rng(5);
  size_t refused = 0, tried = 0;
  for (size_t s = 0; s < sections.size(); ++s) {
    if (sections[s].size == 0) continue;
    for (int trial = 0; trial < 4; ++trial) {
      std::string damaged = good;
      const uint64_t at = sections[s].offset + (trial == 0 ? 0 : rng() % sections[s].size);
      damaged[at] = static_cast<char>(damaged[at] ^ (1 << (rng() % 8)));
      Reseal(&damaged);
      WriteFile(dir.Path("bad.ndx"), damaged);
      auto loaded = OnlineIndex::Load(dir.Path("bad.ndx"), Options(GetParam()));
      ++tried;
      if (!loaded.ok()) {
        EXPECT_EQ(loaded.status().code(), Status::Code::kCorruption)
            << "section " << s << " byte " << at << ": " << loaded.status().ToString();
        ++refused;
        continue;
      }
      Exercise(loaded->get(), signatures, dir.Path("scratch.ndx"));
    }
  }
  EXPECT_GT(refused, tried / 3);

  // Values that index into arrays, each changed alone: always refused.
  auto first_of = [&](uint32_t kind) -> const Section& {
    for (const Section& section : sections) {
      if (section.kind == kind) return section;
    }
    ADD_FAILURE() << "no section of kind " << kind;
    return sections[0];
  };
  const uint64_t rows = Get<uint64_t>(good, 40);
  auto expect_refused = [&](const std::function<void(std::string*)>& damage,
                            const std::string& what) {
    std::string damaged = good;
    damage(&damaged);
    Reseal(&damaged);
    WriteFile(dir.Path("bad.ndx"), damaged);
    const Status status = OnlineIndex::Load(dir.Path("bad.ndx"), Options(GetParam())).status();
    EXPECT_EQ(status.code(), Status::Code::kCorruption) << what << ": " << status.ToString();
  };
  expect_refused([&](std::string* f) { Put<uint64_t>(f, first_of(10).offset + 8, 0); },
                 "an id offset going down");
  expect_refused([&](std::string* f) { Put<uint64_t>(f, first_of(10).offset + 8, 1u << 20); },
                 "an id offset past the bytes");
  expect_refused(
      [&](std::string* f) {
        const Section& slots = first_of(11);
        for (uint64_t at = slots.offset; at < slots.offset + slots.size; at += 8) {
          if (Get<uint32_t>(*f, at) != 0xFFFFFFFFu) {
            Put<uint32_t>(f, at, static_cast<uint32_t>(rows) + 3);
            return;
          }
        }
      },
      "an id slot of a row past the rows");
  expect_refused([&](std::string* f) { Put<uint64_t>(f, first_of(8).offset, rows + 1); },
                 "more documents than rows");
  expect_refused(
      [&](std::string* f) {
        const Section& removed = first_of(12);
        Put<uint64_t>(f, removed.offset + removed.size - 8,
                      Get<uint64_t>(*f, removed.offset + removed.size - 8) | uint64_t{1} << 63);
      },
      "a removed row past the rows");
  if (GetParam().method != DedupMethod::kAccurate) return;
  expect_refused(
      [&](std::string* f) {
        const Section& entries = first_of(17);
        std::memset(f->data() + entries.offset, 0xFF, 5);
      },
      "a band entry of a row past the rows");
  expect_refused(
      [&](std::string* f) {
        const Section& directory = first_of(3);
        Put<uint32_t>(f, directory.offset + 4, 1000);
      },
      "a directory past the entries");
  expect_refused(
      [&](std::string* f) {
        // The buffer's first row always has its keys.
        const Section& keys = first_of(15);
        Put<uint32_t>(f, keys.offset, Get<uint32_t>(*f, keys.offset) ^ 1);
      },
      "a buffer key that its slot does not hold");
  expect_refused(
      [&](std::string* f) {
        const Section& chains = first_of(16);
        Put<uint32_t>(f, chains.offset, static_cast<uint32_t>(rows) - 1);
      },
      "a chain to a later row");
}

INSTANTIATE_TEST_SUITE_P(Methods, DamagedFileTest,
                         ::testing::Values(Variant{DedupMethod::kAccurate},
                                           Variant{DedupMethod::kAccurate, true},
                                           Variant{DedupMethod::kSimhash}),
                         VariantName);

}  // namespace
}  // namespace neardup
