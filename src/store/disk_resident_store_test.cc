// The disk-resident store (StoreOptions::disk_resident): the same answers as a brute force and as
// the store whose index is in memory, across writes, removes, batches and reopens; its options,
// its concurrency and its damaged meta records. The kill -9 test is in store_crash_test.cc.
#include <gtest/gtest.h>
#include <rocksdb/db.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <filesystem>
#include <map>
#include <random>
#include <thread>

#include "neardup/index.h"
#include "neardup/store.h"
#include "store/database.h"
#include "store/record.h"
#include "store/store_testutil.h"
#include "testutil.h"

namespace neardup {
namespace {

using store::testing::Corpus;
using store::testing::FileContents;
using store::testing::MustOpen;

StoreOptions SimhashOptions(int k, std::optional<bool> disk) {
  StoreOptions options;
  MethodOptions method;
  method.method = DedupMethod::kSimhash;
  method.k = k;
  options.method = method;
  options.disk_resident = disk;
  options.fsync = FsyncMode::kNever;  // durability is store_crash_test's
  return options;
}

// id -> signature of the documents a store should hold, and the answer it should give.
class Model {
 public:
  std::vector<OnlineMatch> Query(const Signature& query, int k) const {
    std::vector<OnlineMatch> out;
    if (query.empty) return out;
    for (const auto& [id, signature] : documents_) {
      const int distance = std::popcount(signature.simhash ^ query.simhash);
      if (!signature.empty && distance <= k) out.push_back({id, static_cast<double>(distance)});
    }
    std::sort(out.begin(), out.end(), [](const OnlineMatch& a, const OnlineMatch& b) {
      return a.score != b.score ? a.score < b.score : a.id < b.id;
    });
    return out;
  }
  std::map<std::string, Signature> documents_;
};

std::map<std::string, Signature> Contents(const Store& store) {
  std::map<std::string, Signature> out;
  const Status status = store.ForEach([&](std::string_view id, const Signature& signature) {
    EXPECT_TRUE(out.emplace(std::string(id), signature).second) << id;
  });
  EXPECT_TRUE(status.ok()) << status.ToString();
  return out;
}

class DiskResidentTest : public ::testing::TestWithParam<int> {};

// Random writes of fingerprints a few bits apart (so that distances k and k + 1 both occur),
// documents without features, removes, batches with repeated ids: every answer equals the brute
// force's and the in-memory store's, before and after reopening.
TEST_P(DiskResidentTest, AnswersAsBruteForceAndAsTheStoreInMemory) {
  const int k = GetParam();
  neardup::testing::TempDir temp;
  const std::string disk_dir = temp.Path("disk"), memory_dir = temp.Path("memory");
  auto disk = MustOpen(disk_dir, SimhashOptions(k, true));
  auto memory = MustOpen(memory_dir, SimhashOptions(k, false));
  ASSERT_TRUE(disk->Stats().disk_resident);
  ASSERT_FALSE(memory->Stats().disk_resident);
  Model model;
  std::mt19937_64 rng(1000 + k);
  std::vector<uint64_t> bases(12);
  for (uint64_t& base : bases) base = rng();
  auto random_signature = [&] {
    Signature signature;
    if (rng() % 13 == 0) {
      signature.empty = true;
      return signature;
    }
    signature.simhash = bases[rng() % bases.size()];
    for (int flips = static_cast<int>(rng() % (k + 3)); flips > 0; --flips)
      signature.simhash ^= uint64_t{1} << (rng() % 64);
    return signature;
  };
  std::vector<std::string> ids;
  const int operations = neardup::testing::Sanitized() ? 200 : 500;
  for (int op = 0; op < operations; ++op) {
    const unsigned kind = rng() % 10;
    if (kind < 4) {  // query-and-insert
      const std::string id = "doc" + std::to_string(rng() % 400);
      const Signature signature = random_signature();
      const InsertPolicy policy = rng() % 2 ? InsertPolicy::kAlways : InsertPolicy::kIfNew;
      auto a = disk->QueryAndInsertSigned(id, signature, policy);
      auto b = memory->QueryAndInsertSigned(id, signature, policy);
      ASSERT_EQ(a.ok(), b.ok()) << id;
      if (!a.ok()) {
        EXPECT_EQ(a.status().code(), Status::Code::kFailedPrecondition);
        EXPECT_TRUE(model.documents_.count(id));
        continue;
      }
      const auto expected = model.Query(signature, k);
      EXPECT_EQ(a->matches, expected) << "op " << op;
      EXPECT_EQ(b->matches, expected) << "op " << op;
      EXPECT_EQ(a->inserted, policy == InsertPolicy::kAlways || expected.empty());
      EXPECT_EQ(a->inserted, b->inserted);
      if (a->inserted) model.documents_[id] = signature;
    } else if (kind < 6) {  // remove, often of a stored id
      std::string id = "doc" + std::to_string(rng() % 400);
      if (!model.documents_.empty() && rng() % 4 != 0) {
        auto it = model.documents_.begin();
        std::advance(it, static_cast<long>(rng() % model.documents_.size()));
        id = it->first;
      }
      const Status a = disk->Remove(id), b = memory->Remove(id);
      EXPECT_EQ(a.code(), b.code()) << id;
      EXPECT_EQ(a.ok(), model.documents_.erase(id) == 1) << a.ToString();
    } else if (kind < 7) {  // a batch, ids repeating inside it too
      std::vector<SignedDocument> batch;
      for (int i = static_cast<int>(rng() % 8); i >= 0; --i)
        batch.push_back({"doc" + std::to_string(rng() % 400), random_signature(), {}});
      const InsertPolicy policy = rng() % 2 ? InsertPolicy::kAlways : InsertPolicy::kIfNew;
      auto a = disk->QueryAndInsertBatch(batch, policy);
      auto b = memory->QueryAndInsertBatch(batch, policy);
      ASSERT_TRUE(a.ok() && b.ok());
      for (size_t i = 0; i < batch.size(); ++i) {
        EXPECT_EQ((*a)[i].status.code(), (*b)[i].status.code());
        EXPECT_EQ((*a)[i].inserted, (*b)[i].inserted);
        if (model.documents_.count(batch[i].id)) {
          EXPECT_FALSE((*a)[i].inserted);
          continue;
        }
        const auto expected = model.Query(batch[i].signature, k);
        EXPECT_EQ((*a)[i].matches, expected) << "op " << op << " #" << i;
        EXPECT_EQ((*b)[i].matches, expected);
        if ((*a)[i].inserted) model.documents_[batch[i].id] = batch[i].signature;
      }
    } else if (kind < 9) {  // a query
      const Signature signature = random_signature();
      OnlineQueryStats stats;
      auto a = disk->QuerySigned(signature, &stats);
      ASSERT_TRUE(a.ok()) << a.status().ToString();
      EXPECT_EQ(*a, model.Query(signature, k));
      EXPECT_EQ(*a, *memory->QuerySigned(signature));
      EXPECT_EQ(stats.queries, 1u);
      EXPECT_EQ(stats.matches, a->size());
      if (!signature.empty) {
        EXPECT_EQ(stats.lookups, static_cast<uint64_t>(std::max(k + 1, 2)));
      }
    } else if (rng() % 6 == 0) {  // reopen the disk store (each close flushes: not too often)
      disk.reset();
      disk = MustOpen(disk_dir, StoreOptions());
      ASSERT_TRUE(disk->Stats().disk_resident);
    }
  }
  ASSERT_GT(model.documents_.size(), 50u);
  for (int round = 0; round < 2; ++round) {
    const StoreStats stats = disk->Stats();
    EXPECT_EQ(stats.index.documents, model.documents_.size());
    EXPECT_EQ(stats.index.empty_documents, memory->Stats().index.empty_documents);
    EXPECT_EQ(stats.next_row, memory->Stats().next_row);
    EXPECT_EQ(Contents(*disk), model.documents_);
    for (const auto& [id, signature] : model.documents_) {
      EXPECT_TRUE(disk->Contains(id));
      EXPECT_EQ(*disk->Get(id), signature);
      EXPECT_EQ(*disk->QuerySigned(signature), model.Query(signature, k)) << id;
    }
    EXPECT_FALSE(disk->Contains("never stored"));
    EXPECT_EQ(disk->Get("never stored").status().code(), Status::Code::kNotFound);
    disk.reset();
    // The tables hold exactly one entry per table for every stored document with features.
    {
      store::Database database;
      ASSERT_TRUE(store::OpenDatabase(disk_dir, true, false, &database).ok());
      ASSERT_NE(database.tables, nullptr);
      std::unique_ptr<rocksdb::Iterator> it(
          database.db->NewIterator(rocksdb::ReadOptions(), database.tables));
      size_t entries = 0;
      for (it->SeekToFirst(); it->Valid(); it->Next()) ++entries;
      size_t with_features = 0;
      for (const auto& [id, signature] : model.documents_) with_features += !signature.empty;
      EXPECT_EQ(entries, with_features * static_cast<size_t>(std::max(k + 1, 2)));
    }
    disk = MustOpen(disk_dir, SimhashOptions(k, true));
  }
}

INSTANTIATE_TEST_SUITE_P(K, DiskResidentTest, ::testing::Values(0, 3, 6));

TEST(DiskResidentStoreTest, OptionsAreCheckedAndKept) {
  neardup::testing::TempDir temp;
  StoreOptions accurate;
  accurate.method = MethodOptions();
  accurate.disk_resident = true;
  auto refused = Store::Open(temp.Path("a"), accurate);
  EXPECT_EQ(refused.status().code(), Status::Code::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("simhash method only"), std::string::npos)
      << refused.status().ToString();
  StoreOptions no_method;
  no_method.disk_resident = true;
  EXPECT_EQ(Store::Open(temp.Path("b"), no_method).status().code(), Status::Code::kInvalidArgument);
  EXPECT_FALSE(std::filesystem::exists(temp.Path("a")) || std::filesystem::exists(temp.Path("b")));

  const std::string dir = temp.Path("disk");
  {
    auto store = MustOpen(dir, SimhashOptions(3, true));
    ASSERT_TRUE(store->Insert("x", "a document of the disk-resident store").ok());
    EXPECT_EQ(store->Stats().table_design, TableDesign::Even(4, 1).ToString());
  }
  auto memory = Store::Open(dir, SimhashOptions(3, false));
  EXPECT_EQ(memory.status().code(), Status::Code::kFailedPrecondition);
  EXPECT_NE(memory.status().message().find("the store is disk-resident"), std::string::npos)
      << memory.status().ToString();
  EXPECT_EQ(Store::Open(dir, SimhashOptions(4, true)).status().code(),
            Status::Code::kFailedPrecondition);  // settings differ

  const std::string memory_dir = temp.Path("memory");
  MustOpen(memory_dir, SimhashOptions(3, false));
  auto disk = Store::Open(memory_dir, SimhashOptions(3, true));
  EXPECT_EQ(disk.status().code(), Status::Code::kFailedPrecondition);

  // A checkpoint is a disk-resident store with the same answers.
  auto store = MustOpen(dir, StoreOptions());
  ASSERT_TRUE(store->Checkpoint(temp.Path("copy")).ok());
  auto copy = MustOpen(temp.Path("copy"), StoreOptions());
  EXPECT_TRUE(copy->Stats().disk_resident);
  EXPECT_EQ(*copy->Query("a document of the disk-resident store"),
            *store->Query("a document of the disk-resident store"));
  EXPECT_EQ(copy->Query("a document of the disk-resident store")->size(), 1u);
}

// Bad calls are errors that change nothing: ids empty or too long, signatures of another method's
// shape, an id stored twice, removes of ids never stored; texts of any bytes are signed.
TEST(DiskResidentStoreTest, BadCallsAreErrorsThatChangeNothing) {
  neardup::testing::TempDir temp;
  auto store = MustOpen(temp.Path("store"), SimhashOptions(3, true));
  ASSERT_TRUE(store->Insert("a", "the first document of this store, kept").ok());
  EXPECT_EQ(store->Insert("", "text").code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(store->Insert(std::string(70000, 'x'), "text").code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(store->Insert("a", "other text").code(), Status::Code::kFailedPrecondition);
  EXPECT_EQ(store->QueryAndInsert("a", "other", InsertPolicy::kAlways).status().code(),
            Status::Code::kFailedPrecondition);
  Signature accurate_shaped;
  accurate_shaped.sketch.resize(132);
  accurate_shaped.band_keys.resize(20);
  EXPECT_EQ(store->InsertSigned("b", accurate_shaped).code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(store->QuerySigned(accurate_shaped).status().code(), Status::Code::kInvalidArgument);
  const std::vector<SignedDocument> batch = {{"", Signature(), {}},
                                             {"c", accurate_shaped, {}},
                                             {"d", *store->signer().Sign("a good one"), {}}};
  auto results = store->QueryAndInsertBatch(batch, InsertPolicy::kAlways);
  ASSERT_TRUE(results.ok()) << results.status().ToString();
  EXPECT_EQ((*results)[0].status.code(), Status::Code::kInvalidArgument);
  EXPECT_EQ((*results)[1].status.code(), Status::Code::kInvalidArgument);
  EXPECT_TRUE((*results)[2].inserted);
  EXPECT_EQ(store->Remove("never").code(), Status::Code::kNotFound);
  // Invalid UTF-8 and control bytes: replaced when signed (the default), ids are bytes.
  EXPECT_TRUE(store->Insert(std::string("\x01\xff", 2), "bad \xc3 utf8 \xff text").ok());
  EXPECT_TRUE(store->Contains(std::string("\x01\xff", 2)));
  EXPECT_TRUE(store->Insert("blank", "").ok());
  EXPECT_TRUE(store->Query("")->empty());
  store.reset();
  store = MustOpen(temp.Path("store"), StoreOptions());
  const StoreStats stats = store->Stats();
  EXPECT_EQ(stats.index.documents, 4u);
  EXPECT_EQ(stats.index.empty_documents, 1u);
  EXPECT_EQ(stats.next_row, 4u);
  EXPECT_EQ(store->Query("the first document of this store, kept")->size(), 1u);
}

// Two writers insert the same corpus with kIfNew: one of each near-duplicate pair is kept, and the
// counts survive a reopen.
TEST(DiskResidentStoreTest, ConcurrentQueryAndInsertKeepsOneOfEachPair) {
  neardup::testing::TempDir temp;
  auto store = MustOpen(temp.Path("store"), SimhashOptions(3, true));
  const Corpus corpus(neardup::testing::Sanitized() ? 40 : 120, 17);
  const int inserted = store::testing::InsertTwoCopiesConcurrently(store.get(), corpus);
  const uint64_t documents = store->Stats().index.documents;
  EXPECT_EQ(documents, static_cast<uint64_t>(inserted));
  EXPECT_LE(static_cast<size_t>(inserted), corpus.size());
  // Of each text's two copies exactly one is stored.
  for (size_t i = 0; i < corpus.size(); ++i) {
    EXPECT_LE(store->Contains(corpus.id(i) + "-0") + store->Contains(corpus.id(i) + "-1"), 1)
        << corpus.id(i);
  }
  store.reset();
  store = MustOpen(temp.Path("store"), StoreOptions());
  EXPECT_EQ(store->Stats().index.documents, documents);
  EXPECT_EQ(Contents(*store).size(), documents);
}

// Damaged meta records of a disk-resident store are refused, naming the directory, and nothing
// changes.
TEST(DiskResidentStoreTest, DamagedMetaIsRefusedUnchanged) {
  neardup::testing::TempDir temp;
  const std::string dir = temp.Path("store");
  MustOpen(dir, SimhashOptions(3, true))->Insert("x", "some words to store").ok();
  const std::pair<std::string_view, std::string> damages[] = {
      {store::kIndexKey, "elsewhere"},
      {store::kDesignKey, "16,16,16/9"},
      {store::kDesignKey, "32,32/1"},  // answers k <= 1 only
      {store::kDocumentsKey, "123"},
  };
  for (const auto& [key, value] : damages) {
    std::string original;
    {
      store::Database database;
      ASSERT_TRUE(store::OpenDatabase(dir, false, false, &database).ok());
      ASSERT_TRUE(database.db->Get(rocksdb::ReadOptions(), database.meta, key, &original).ok());
      ASSERT_TRUE(database.db->Put(rocksdb::WriteOptions(), database.meta, key, value).ok());
    }
    const auto before = FileContents(dir);
    auto store = Store::Open(dir, StoreOptions());
    ASSERT_FALSE(store.ok()) << key << "=" << value;
    EXPECT_EQ(store.status().code(), Status::Code::kCorruption) << store.status().ToString();
    EXPECT_NE(store.status().message().find(dir), std::string::npos) << store.status().ToString();
    EXPECT_EQ(FileContents(dir), before);
    {
      store::Database database;
      ASSERT_TRUE(store::OpenDatabase(dir, false, false, &database).ok());
      ASSERT_TRUE(database.db->Put(rocksdb::WriteOptions(), database.meta, key, original).ok());
    }
    EXPECT_TRUE(Store::Open(dir, StoreOptions()).ok());
  }
}

}  // namespace
}  // namespace neardup
