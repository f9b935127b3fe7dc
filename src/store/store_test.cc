// The durable store: records, reopening, settings, locking, damaged stores, checkpoints, group
// commit. The kill -9 tests are in store_crash_test.cc.
#include "neardup/store.h"

#include <gtest/gtest.h>
#include <rocksdb/db.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <thread>

#include "store/database.h"
#include "store/record.h"
#include "store/store_testutil.h"
#include "testutil.h"

namespace neardup {
namespace {

namespace fs = std::filesystem;
using store::testing::Corpus;
using store::testing::FileContents;
using store::testing::MustOpen;

TEST(StoreRecordTest, RoundTripAndDamage) {
  Signature signature;
  signature.simhash = 0x0123456789abcdefULL;
  signature.empty = true;
  signature.sketch = {1, 2, 3};
  signature.band_keys = {7, 0xffffffffu};
  const std::string record = store::EncodeDocument("doc-1", signature, 42);
  store::DecodedDocument decoded;
  ASSERT_TRUE(store::DecodeDocument(record, 42, 3, 2, &decoded).ok());
  EXPECT_EQ(decoded.id, "doc-1");
  EXPECT_EQ(decoded.signature, signature);
  EXPECT_EQ(store::DecodeDocument(record, 43, 3, 2, &decoded).code(), Status::Code::kCorruption);
  EXPECT_EQ(store::DecodeDocument(record, 42, 4, 2, &decoded).code(), Status::Code::kCorruption);
  for (size_t cut = 0; cut < record.size(); ++cut) {
    EXPECT_EQ(store::DecodeDocument(record.substr(0, cut), 42, 3, 2, &decoded).code(),
              Status::Code::kCorruption)
        << cut;
  }
  EXPECT_EQ(store::DecodeDocument(record + "x", 42, 3, 2, &decoded).code(),
            Status::Code::kCorruption);
  std::string bad_version = record;
  bad_version[0] = 9;
  EXPECT_EQ(store::DecodeDocument(bad_version, 42, 3, 2, &decoded).code(),
            Status::Code::kCorruption);
  // Row keys sort as rows.
  EXPECT_LT(store::RowKey(255), store::RowKey(256));
  EXPECT_EQ(store::ParseRowKey(store::RowKey(0x0102030405060708ULL)), 0x0102030405060708ULL);
  EXPECT_EQ(store::EncodeFixed32(1), std::string("\x01\x00\x00\x00", 4));
}

class StoreMethodTest : public ::testing::TestWithParam<DedupMethod> {
 protected:
  StoreOptions Options() const {
    StoreOptions options;
    MethodOptions method;
    method.method = GetParam();
    options.method = method;
    return options;
  }
  neardup::testing::TempDir temp_;
};

// Query results, stored signatures and counts are the same after a reopen, and a reopened store
// keeps taking writes.
TEST_P(StoreMethodTest, ReopenGivesTheSameIndex) {
  const std::string dir = temp_.Path("store");
  const Corpus corpus(300, 11);
  std::vector<std::vector<OnlineMatch>> before;
  {
    auto store = MustOpen(dir, Options());
    for (size_t i = 0; i < corpus.size(); ++i) {
      auto result = store->QueryAndInsert(corpus.id(i), corpus.text(i),
                                          i % 3 ? InsertPolicy::kIfNew : InsertPolicy::kAlways);
      ASSERT_TRUE(result.ok()) << result.status().ToString();
    }
    for (size_t i = 0; i < corpus.size(); i += 7) {
      if (store->Contains(corpus.id(i))) {
        ASSERT_TRUE(store->Remove(corpus.id(i)).ok());
      }
    }
    EXPECT_EQ(store->Remove("no such id").code(), Status::Code::kNotFound);
    for (size_t i = 0; i < corpus.size(); ++i) before.push_back(*store->Query(corpus.text(i)));
    ASSERT_GT(store->Stats().index.documents, 60u);
  }
  // The second reopen keeps the sketches in a scratch file (accurate): the same answers.
  for (int round = 0; round < 2; ++round) {
    StoreOptions reopen;  // the stored settings
    reopen.sketches_on_disk = round == 1;
    auto store = MustOpen(dir, reopen);
    EXPECT_EQ(store->signer().method(), GetParam());
    size_t matched = 0;
    for (size_t i = 0; i < corpus.size(); ++i) {
      auto after = store->Query(corpus.text(i));
      ASSERT_TRUE(after.ok());
      EXPECT_EQ(*after, before[i]) << corpus.id(i);
      matched += !after->empty();
    }
    EXPECT_GT(matched, corpus.size() / 2);
  }
  // The scratch file leaves nothing behind.
  for (const auto& entry : fs::directory_iterator(dir))
    EXPECT_EQ(entry.path().filename().string().find("sketch"), std::string::npos) << entry.path();
  auto store = MustOpen(dir, Options());
  ASSERT_TRUE(store->Insert("late", "a late document that nobody has seen before today").ok());
  EXPECT_EQ(store->Insert("late", "again").code(), Status::Code::kFailedPrecondition);
  store.reset();
  store = MustOpen(dir, StoreOptions());
  EXPECT_TRUE(store->Contains("late"));
  EXPECT_EQ(*store->Get("late"),
            *store->signer().Sign("a late document that nobody has seen before today"));
}

std::string MethodName(const ::testing::TestParamInfo<DedupMethod>& param) {
  return std::string(DedupMethodName(param.param));
}

INSTANTIATE_TEST_SUITE_P(Methods, StoreMethodTest,
                         ::testing::Values(DedupMethod::kAccurate, DedupMethod::kSimhash),
                         MethodName);

TEST(StoreTest, SettingsThatDifferAreRefused) {
  neardup::testing::TempDir temp;
  const std::string dir = temp.Path("store");
  MustOpen(dir, StoreOptions());
  StoreOptions other;
  other.method = MethodOptions();
  other.method->threshold = 0.7;
  auto refused = Store::Open(dir, other);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), Status::Code::kFailedPrecondition);
  EXPECT_NE(refused.status().message().find(dir), std::string::npos) << refused.status().message();
  EXPECT_NE(refused.status().message().find("threshold 0.7 given, 0.8 in the store"),
            std::string::npos)
      << refused.status().message();
  other.method->method = DedupMethod::kSimhash;
  EXPECT_EQ(Store::Open(dir, other).status().code(), Status::Code::kFailedPrecondition);
  StoreOptions same;
  same.method = MethodOptions();
  EXPECT_TRUE(Store::Open(dir, same).ok());
}

TEST(StoreTest, MissingStoreWithoutCreateAndPlacesThatAreNotStores) {
  neardup::testing::TempDir temp;
  StoreOptions options;
  options.create_if_missing = false;
  EXPECT_EQ(Store::Open(temp.Path("none"), options).status().code(), Status::Code::kNotFound);
  EXPECT_FALSE(fs::exists(temp.Path("none")));
  const std::string file = temp.File("file", "text");
  EXPECT_EQ(Store::Open(file, StoreOptions()).status().code(), Status::Code::kFailedPrecondition);
  fs::create_directory(temp.Path("other"));
  temp.File("other/notes.txt", "my notes");
  const auto before = FileContents(temp.Path("other"));
  auto refused = Store::Open(temp.Path("other"), StoreOptions());
  EXPECT_EQ(refused.status().code(), Status::Code::kCorruption);
  EXPECT_NE(refused.status().message().find("is not a neardup store"), std::string::npos);
  EXPECT_EQ(FileContents(temp.Path("other")), before);
  // An empty directory becomes a store, named with a trailing slash too.
  fs::create_directory(temp.Path("empty"));
  EXPECT_TRUE(Store::Open(temp.Path("empty") + "/", StoreOptions()).ok());
  EXPECT_TRUE(Store::Open(temp.Path("empty"), options).ok());
}

TEST(StoreTest, SecondOpenInTheSameProcessIsRefused) {
  neardup::testing::TempDir temp;
  const std::string dir = temp.Path("store");
  auto first = MustOpen(dir, StoreOptions());
  auto second = Store::Open(dir, StoreOptions());
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), Status::Code::kFailedPrecondition);
  EXPECT_NE(second.status().message().find(dir + " is in use by another process"),
            std::string::npos)
      << second.status().message();
  first.reset();
  EXPECT_TRUE(Store::Open(dir, StoreOptions()).ok());
}

// The child of SecondOpenInAnotherProcessIsRefused (run only when the variable names a store).
TEST(StoreChildTest, OpenAndReport) {
  const char* dir = std::getenv("NEARDUP_STORE_TEST_OPEN");
  if (dir == nullptr) GTEST_SKIP() << "run by SecondOpenInAnotherProcessIsRefused";
  auto store = Store::Open(dir, StoreOptions());
  std::printf("%s\n", store.ok() ? "opened" : store.status().message().c_str());
}

TEST(StoreTest, SecondOpenInAnotherProcessIsRefused) {
  neardup::testing::TempDir temp;
  const std::string dir = temp.Path("store");
  auto first = MustOpen(dir, StoreOptions());
  const std::string output =
      store::testing::RunSelf("StoreChildTest.OpenAndReport", "NEARDUP_STORE_TEST_OPEN", dir);
  EXPECT_NE(output.find(dir + " is in use by another process"), std::string::npos) << output;
  first.reset();
  EXPECT_NE(store::testing::RunSelf("StoreChildTest.OpenAndReport", "NEARDUP_STORE_TEST_OPEN", dir)
                .find("opened"),
            std::string::npos);
}

// Attachments are written with their document, read back after a reopen, and go with a remove.
TEST(StoreTest, AttachmentsAreKeptWithTheirDocument) {
  neardup::testing::TempDir temp;
  const std::string dir = temp.Path("store");
  const std::string binary("text\0with a zero byte", 21);
  {
    auto store = MustOpen(dir, StoreOptions());
    const Signature a = *store->signer().Sign("the first document of the attachment test");
    ASSERT_TRUE(store->QueryAndInsertSigned("a", a, InsertPolicy::kIfNew, "{\"text\":1}").ok());
    // A near-duplicate that is not stored keeps no attachment.
    auto skipped = store->QueryAndInsertSigned("a2", a, InsertPolicy::kIfNew, "lost");
    ASSERT_TRUE(skipped.ok());
    EXPECT_FALSE(skipped->inserted);
    std::vector<SignedDocument> batch = {
        {"b", *store->signer().Sign("a second document, quite another text"), binary},
        {"c", *store->signer().Sign("and a third one without anything beside it"), {}}};
    ASSERT_TRUE(store->InsertBatch(batch).ok());
    EXPECT_EQ(*store->GetAttachment("a"), "{\"text\":1}");
    EXPECT_EQ(store->GetAttachment("a2").status().code(), Status::Code::kNotFound);
  }
  auto store = MustOpen(dir, StoreOptions());
  EXPECT_EQ(*store->GetAttachment("a"), "{\"text\":1}");
  EXPECT_EQ(*store->GetAttachment("b"), binary);
  EXPECT_EQ(*store->GetAttachment("c"), "");
  ASSERT_TRUE(store->Remove("b").ok());
  EXPECT_EQ(store->GetAttachment("b").status().code(), Status::Code::kNotFound);
  // The id comes back without the old attachment.
  ASSERT_TRUE(store->InsertSigned("b", *store->signer().Sign("b again, another text")).ok());
  EXPECT_EQ(*store->GetAttachment("b"), "");
}

// The log's last record cut at every byte (as a crash in the middle of its write leaves it): the
// store opens, holds every document before that record whole, and the last one only when the cut is
// at its end. The copies are taken while the store is open, as a crash would leave its files.
TEST(StoreTest, LogTailCutAtEveryByteOfTheLastRecord) {
  neardup::testing::TempDir temp;
  const std::string dir = temp.Path("store");
  const Corpus corpus(30, 3);
  StoreOptions options;
  options.fsync = FsyncMode::kAlways;
  auto store = MustOpen(dir, options);
  for (size_t i = 0; i + 1 < corpus.size(); ++i)
    ASSERT_TRUE(store->Insert(corpus.id(i), corpus.text(i)).ok());
  auto copy = [&](const std::string& to) {
    fs::copy(dir, to, fs::copy_options::recursive);
    std::vector<std::string> logs;
    for (const auto& entry : fs::directory_iterator(to)) {
      if (entry.path().extension() == ".log") logs.push_back(entry.path().string());
    }
    EXPECT_EQ(logs.size(), 1u);
    return logs.empty() ? std::string() : logs[0];
  };
  const std::string before_log = copy(temp.Path("before"));
  const std::string last = corpus.id(corpus.size() - 1);
  ASSERT_TRUE(store->Insert(last, corpus.text(corpus.size() - 1)).ok());
  const std::string after_log = copy(temp.Path("after"));
  const uint64_t start = fs::file_size(before_log), end = fs::file_size(after_log);
  ASSERT_GT(end, start + 100);  // the record: the id, the signature, the row counter
  const auto after = FileContents(temp.Path("after"));
  // Every byte in a release build; every 7th under the sanitizers (each open takes longer there).
  const uint64_t step = std::getenv("NEARDUP_SANITIZED") != nullptr ? 7 : 1;
  std::vector<uint64_t> cuts;
  for (uint64_t cut = start; cut < end; cut += step) cuts.push_back(cut);
  cuts.push_back(end);
  for (const uint64_t cut : cuts) {
    const std::string at = temp.Path("cut" + std::to_string(cut));
    fs::copy(temp.Path("after"), at, fs::copy_options::recursive);
    fs::resize_file(at + "/" + fs::path(after_log).filename().string(), cut);
    auto reopened = Store::Open(at, StoreOptions());
    ASSERT_TRUE(reopened.ok()) << "cut at " << cut << ": " << reopened.status().ToString();
    const auto stats = (*reopened)->Stats();
    ASSERT_EQ(stats.index.documents, cut == end ? corpus.size() : corpus.size() - 1) << cut;
    for (size_t i = 0; i + 1 < corpus.size(); i += 5)
      ASSERT_TRUE((*reopened)->Contains(corpus.id(i)));
    ASSERT_EQ((*reopened)->Contains(last), cut == end) << cut;
    reopened->reset();
    fs::remove_all(at);
  }
  EXPECT_EQ(FileContents(temp.Path("after")), after);
}

// A damaged store: Open fails with an error naming the directory, and every file is left as it was.
class DamagedStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = temp_.Path("store");
    const Corpus corpus(200, 5);
    // Twice reopened: the first reopen flushes the log into table files.
    for (int round = 0; round < 2; ++round) {
      auto store = MustOpen(dir_, StoreOptions());
      for (size_t i = round; i < corpus.size(); i += 2)
        ASSERT_TRUE(store->Insert(corpus.id(i), corpus.text(i)).ok());
    }
    MustOpen(dir_, StoreOptions());
  }

  std::vector<std::string> FilesStartingWith(const std::string& prefix) const {
    std::vector<std::string> found;
    for (const auto& entry : fs::directory_iterator(dir_)) {
      if (entry.path().filename().string().starts_with(prefix))
        found.push_back(entry.path().string());
    }
    return found;
  }

  std::vector<std::string> FilesEndingWith(const std::string& suffix) const {
    std::vector<std::string> found;
    for (const auto& entry : fs::directory_iterator(dir_)) {
      if (entry.path().string().ends_with(suffix)) found.push_back(entry.path().string());
    }
    return found;
  }

  // Open is refused, naming the directory, and changes no file; twice, so that a first refusal
  // that changed something would show.
  void ExpectRefusedUnchanged(const std::string& why) {
    const auto before = FileContents(dir_);
    for (int attempt = 0; attempt < 2; ++attempt) {
      auto store = Store::Open(dir_, StoreOptions());
      ASSERT_FALSE(store.ok()) << why;
      const Status& status = store.status();
      EXPECT_TRUE(status.code() == Status::Code::kCorruption ||
                  status.code() == Status::Code::kIOError)
          << why << ": " << status.ToString();
      EXPECT_NE(status.message().find(dir_), std::string::npos) << why << ": " << status.ToString();
      EXPECT_EQ(FileContents(dir_), before) << why;
    }
  }

  neardup::testing::TempDir temp_;
  std::string dir_;
};

TEST_F(DamagedStoreTest, TruncatedManifest) {
  const auto manifests = FilesStartingWith("MANIFEST-");
  ASSERT_EQ(manifests.size(), 1u);
  fs::resize_file(manifests[0], fs::file_size(manifests[0]) / 2);
  ExpectRefusedUnchanged("truncated MANIFEST");
}

TEST_F(DamagedStoreTest, CorruptCurrent) {
  std::ofstream(dir_ + "/CURRENT", std::ios::trunc) << "MANIFEST-9999\n";
  ExpectRefusedUnchanged("CURRENT naming a missing MANIFEST");
  std::ofstream(dir_ + "/CURRENT", std::ios::trunc) << "\x01\x02garbage";
  ExpectRefusedUnchanged("garbage in CURRENT");
}

TEST_F(DamagedStoreTest, RandomBytesInTableFiles) {
  const auto tables = FilesEndingWith(".sst");
  ASSERT_FALSE(tables.empty());
  std::mt19937_64 rng(7);
  for (const std::string& table : tables) {
    std::fstream file(table, std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(20);
    for (int i = 0; i < 64; ++i) file.put(static_cast<char>(rng()));
  }
  ExpectRefusedUnchanged("random bytes in the table files");
}

TEST_F(DamagedStoreTest, MetaRecordDeletedOrFromTheFuture) {
  {
    store::Database database;
    ASSERT_TRUE(store::OpenDatabase(dir_, false, false, &database).ok());
    ASSERT_TRUE(database.db
                    ->Put(rocksdb::WriteOptions(), database.meta, store::kFormatVersionKey,
                          store::EncodeFixed32(2))
                    .ok());
  }
  ExpectRefusedUnchanged("format version 2");
  auto store = Store::Open(dir_, StoreOptions());
  EXPECT_NE(store.status().message().find("format version 2 is not supported"), std::string::npos)
      << store.status().ToString();
  {
    store::Database database;
    ASSERT_TRUE(store::OpenDatabase(dir_, false, false, &database).ok());
    ASSERT_TRUE(
        database.db->Delete(rocksdb::WriteOptions(), database.meta, store::kFormatVersionKey).ok());
  }
  ExpectRefusedUnchanged("no meta record");
}

TEST(StoreTest, CheckpointOpensAsTheSameStore) {
  neardup::testing::TempDir temp;
  const Corpus corpus(100, 3);
  auto store = MustOpen(temp.Path("store"), StoreOptions());
  for (size_t i = 0; i < corpus.size(); ++i)
    ASSERT_TRUE(store->Insert(corpus.id(i), corpus.text(i)).ok());
  ASSERT_TRUE(store->Checkpoint(temp.Path("copy")).ok());
  ASSERT_TRUE(store->Insert("after", "written after the checkpoint was taken").ok());
  auto copy = MustOpen(temp.Path("copy"), StoreOptions());
  EXPECT_EQ(copy->Stats().index.documents, corpus.size());
  EXPECT_FALSE(copy->Contains("after"));
  for (size_t i = 0; i < corpus.size(); i += 9)
    EXPECT_EQ(*copy->Query(corpus.text(i)), *store->Query(corpus.text(i)));
  EXPECT_FALSE(store->Checkpoint(temp.Path("copy")).ok());  // exists
}

// Writers on several threads: every near-duplicate pair inserted with kIfNew keeps exactly one, in
// every fsync mode, and the batches survive a reopen.
TEST(StoreTest, ConcurrentQueryAndInsertKeepsOneOfEachPair) {
  for (FsyncMode mode : {FsyncMode::kBatch, FsyncMode::kAlways, FsyncMode::kNever}) {
    neardup::testing::TempDir temp;
    StoreOptions options;
    options.fsync = mode;
    auto store = MustOpen(temp.Path("store"), options);
    const Corpus corpus(neardup::testing::Sanitized() ? 40 : 120, 17);
    int inserted = 0;
    std::thread writers(
        [&] { inserted = store::testing::InsertTwoCopiesConcurrently(store.get(), corpus); });
    // A batch of its own at the same time: documents that match nothing of the corpus.
    std::vector<SignedDocument> batch;
    for (int i = 0; i < 50; ++i) {
      const std::string text =
          "batch document number " + std::to_string(i) + " zz" + std::to_string(i * 7919) + " qq";
      batch.push_back({"batch-" + std::to_string(i), *store->signer().Sign(text), {}});
    }
    auto results = store->InsertBatch(batch);
    writers.join();
    ASSERT_TRUE(results.ok());
    for (const auto& result : *results) EXPECT_TRUE(result.inserted);
    const uint64_t documents = store->Stats().index.documents;
    EXPECT_EQ(documents, static_cast<uint64_t>(inserted) + 50);
    EXPECT_LE(static_cast<size_t>(inserted), corpus.size());
    store.reset();
    store = MustOpen(temp.Path("store"), StoreOptions());
    EXPECT_EQ(store->Stats().index.documents, documents) << FsyncModeName(mode);
  }
}

// Inserts and removes from two threads (removes of ids whose insert may still be in flight): the
// index in memory and the store reopened hold the same documents.
TEST(StoreTest, ConcurrentInsertsAndRemovesAgreeAfterReopen) {
  neardup::testing::TempDir temp;
  auto store = MustOpen(temp.Path("store"), StoreOptions());
  const Corpus corpus(150, 23);
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&, t] {
      for (size_t i = 0; i < corpus.size(); ++i) {
        const std::string id = std::to_string(t) + "-" + corpus.id(i);
        ASSERT_TRUE(store->Insert(id, corpus.text(i)).ok());
        if (i % 3 == 2) {
          ASSERT_TRUE(store->Remove(std::to_string(t) + "-" + corpus.id(i - 1)).ok());
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();
  std::map<std::string, Signature> before, after;
  ASSERT_TRUE(store
                  ->ForEach([&](std::string_view id, const Signature& signature) {
                    before[std::string(id)] = signature;
                  })
                  .ok());
  EXPECT_EQ(before.size(), 200u);
  store.reset();
  store = MustOpen(temp.Path("store"), StoreOptions());
  ASSERT_TRUE(store
                  ->ForEach([&](std::string_view id, const Signature& signature) {
                    after[std::string(id)] = signature;
                  })
                  .ok());
  EXPECT_EQ(after, before);
  EXPECT_EQ(store->Stats().next_row, 300u);
}

TEST(StoreTest, BatchQueriesSeeEarlierDocumentsOfTheBatch) {
  neardup::testing::TempDir temp;
  auto store = MustOpen(temp.Path("store"), StoreOptions());
  const std::string text = "the same text twice in one batch of documents, word for word the same";
  const Signature signature = *store->signer().Sign(text);
  std::vector<SignedDocument> batch = {
      {"a", signature, {}}, {"b", signature, {}}, {"a", signature, {}}};
  auto results = store->QueryAndInsertBatch(batch, InsertPolicy::kAlways);
  ASSERT_TRUE(results.ok());
  EXPECT_TRUE((*results)[0].inserted);
  EXPECT_TRUE((*results)[0].matches.empty());
  EXPECT_TRUE((*results)[1].inserted);
  ASSERT_EQ((*results)[1].matches.size(), 1u);
  EXPECT_EQ((*results)[1].matches[0].id, "a");
  EXPECT_EQ((*results)[2].status.code(), Status::Code::kFailedPrecondition);
  store.reset();
  store = MustOpen(temp.Path("store"), StoreOptions());
  EXPECT_EQ(store->Stats().index.documents, 2u);
  EXPECT_EQ(store->Stats().next_row, 2u);
}

TEST(StoreTest, FsyncModeNames) {
  for (FsyncMode mode : {FsyncMode::kAlways, FsyncMode::kBatch, FsyncMode::kNever}) {
    EXPECT_EQ(*ParseFsyncMode(FsyncModeName(mode)), mode);
  }
  EXPECT_EQ(ParseFsyncMode("sometimes").status().code(), Status::Code::kInvalidArgument);
}

}  // namespace
}  // namespace neardup
