// The Redis backend against the in-memory online index (the reference), on a real local Redis
// Cluster: the same matches, scores and order for both methods, on generated and real text;
// check-and-insert agreeing across concurrent workers; and the errors of opening one.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <barrier>
#include <fstream>
#include <random>
#include <set>
#include <thread>

#include "neardup/index_store.h"
#include "online/online_testutil.h"
#include "store/redis_layout.h"
#include "store/redis_testutil.h"
#include "testutil.h"

namespace neardup {
namespace {

using testing::LocalRedisCluster;
using testing::NumberedId;

LocalRedisCluster* cluster = nullptr;
std::string cluster_error;

class RedisIndexTest : public ::testing::TestWithParam<DedupMethod> {
 public:
  static void SetUpTestSuite() {
    const int port = neardup::testing::Sanitized() ? 7450 : 7400;
    cluster = LocalRedisCluster::Start(port, &cluster_error).release();
  }
  static void TearDownTestSuite() {
    delete cluster;
    cluster = nullptr;
  }

 protected:
  void SetUp() override {
    if (cluster == nullptr) GTEST_SKIP() << cluster_error;
  }

  // A fresh prefix per test.
  std::string Location() const {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    // Test names are longer than a prefix may be: their hash names them.
    const std::string name = std::string(info->test_suite_name()) + "." + info->name();
    return cluster->Location("t" + std::to_string(std::hash<std::string>()(name) % 100000000));
  }

  IndexStoreOptions Options(DedupMethod method) const {
    IndexStoreOptions options;
    options.store.method = neardup::testing::Method(method);
    options.store.expected_documents = 20000;
    options.redis.timeout_seconds = 5;
    return options;
  }
};

// Paragraphs of the English LibreOffice help, and generated related texts with blank and
// symbol-only lines.
std::vector<std::string> Corpus(size_t real) {
  std::vector<std::string> texts = neardup::testing::MakeCorpus(40, 8, 7);
  const neardup::testing::TempDir dir;
  const std::string path = dir.Path("help.txt");
  const std::string command =
      "/usr/bin/python3 " + std::string(NEARDUP_SOURCE_DIR) + "/bench/corpus/help_text.py en-US " +
      path + " --per paragraph --limit " + std::to_string(real) + " >/dev/null 2>&1";
  if (std::system(command.c_str()) == 0) {
    std::ifstream in(path);
    std::string line;
    size_t n = 0;
    while (std::getline(in, line) && n < real) {
      texts.push_back(line);
      // Lightly edited copies of some, so that real text has near-duplicates too.
      if (n % 5 == 0 && line.size() > 40) texts.push_back(line.substr(0, line.size() - 6));
      ++n;
    }
  }
  return texts;
}

// The texts signed by the reference index and inserted in it, as documents named prefix + number:
// the documents for a bulk insert, and their signatures.
struct SignedCorpus {
  std::vector<SignedDocument> documents;
  std::vector<Signature> signatures;
};
SignedCorpus SignIntoReference(OnlineIndex* reference, const std::vector<std::string>& texts,
                               const std::string& prefix) {
  SignedCorpus corpus;
  for (size_t i = 0; i < texts.size(); ++i) {
    auto signature = reference->signer().Sign(texts[i]);
    EXPECT_TRUE(signature.ok()) << signature.status().ToString();
    if (!signature.ok()) continue;
    corpus.signatures.push_back(*signature);
    corpus.documents.push_back({NumberedId(prefix, i), *signature, ""});
    EXPECT_TRUE(reference->InsertSigned(corpus.documents.back().id, *signature).ok());
  }
  return corpus;
}

TEST_P(RedisIndexTest, SameAnswersAsTheOnlineIndex) {
  const DedupMethod method = GetParam();
  auto reference = OnlineIndex::Create(neardup::testing::Options({method}));
  ASSERT_TRUE(reference.ok()) << reference.status().ToString();
  auto store = IndexStore::Open(Location(), Options(method));
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  const std::vector<std::string> texts = Corpus(neardup::testing::Sanitized() ? 200 : 800);
  std::vector<Signature> signatures;
  for (size_t i = 0; i < texts.size(); ++i) {
    auto signature = (*reference)->signer().Sign(texts[i]);
    ASSERT_TRUE(signature.ok());
    signatures.push_back(*signature);
    const std::string id = NumberedId("d", i);
    auto expected = (*reference)->QueryAndInsertSigned(id, *signature, InsertPolicy::kIfNew);
    auto got = (*store)->QueryAndInsertSigned(id, *signature, InsertPolicy::kIfNew);
    ASSERT_TRUE(expected.ok() && got.ok()) << got.status().ToString();
    ASSERT_EQ(got->inserted, expected->inserted) << "document " << i << ": " << texts[i];
    ASSERT_EQ(got->matches, expected->matches) << "document " << i;
  }
  // Every text queried again, in one pipelined batch.
  auto batch = (*store)->QueryBatch(signatures);
  ASSERT_TRUE(batch.ok()) << batch.status().ToString();
  size_t with_matches = 0;
  for (size_t i = 0; i < signatures.size(); ++i) {
    auto expected = (*reference)->QuerySigned(signatures[i]);
    ASSERT_TRUE(expected.ok());
    ASSERT_EQ((*batch)[i], *expected) << "document " << i;
    with_matches += !expected->empty();
  }
  EXPECT_GT(with_matches, signatures.size() / 2);
  // Removes, then the same answers again; Get and Contains agree.
  for (size_t i = 0; i < signatures.size(); i += 3) {
    const std::string id = NumberedId("d", i);
    const Status expected = (*reference)->Remove(id);
    const Status got = (*store)->Remove(id);
    ASSERT_EQ(got.code(), expected.code()) << id << ": " << got.ToString();
  }
  for (size_t i = 0; i < signatures.size(); i += 2) {
    const std::string id = NumberedId("d", i);
    auto expected = (*reference)->QuerySigned(signatures[i]);
    auto got = (*store)->QuerySigned(signatures[i]);
    ASSERT_TRUE(got.ok());
    ASSERT_EQ(*got, *expected) << "document " << i << " after the removes";
    auto contains = (*store)->Contains(id);
    ASSERT_TRUE(contains.ok());
    EXPECT_EQ(*contains, (*reference)->Contains(id)) << id;
    auto stored = (*store)->Get(id);
    if (!(*reference)->Contains(id)) {
      EXPECT_EQ(stored.status().code(), Status::Code::kNotFound) << id;
      continue;
    }
    ASSERT_TRUE(stored.ok()) << stored.status().ToString();
    auto reference_stored = (*reference)->Get(id);
    EXPECT_EQ(stored->simhash, reference_stored->simhash);
    EXPECT_EQ(stored->empty, reference_stored->empty);
    EXPECT_EQ(stored->sketch,
              method == DedupMethod::kAccurate ? reference_stored->sketch : std::vector<uint8_t>());
  }
  const StoreStats stats = (*store)->Stats();
  EXPECT_EQ(stats.index.documents, (*reference)->Stats().documents);
  EXPECT_GT(stats.remote_memory_bytes, 0u);
  EXPECT_EQ(stats.backend, "redis-cluster");
}

TEST_P(RedisIndexTest, BatchesAnswerAsOneDocumentAtATime) {
  const DedupMethod method = GetParam();
  auto reference = OnlineIndex::Create(neardup::testing::Options({method}));
  ASSERT_TRUE(reference.ok());
  auto store = IndexStore::Open(Location(), Options(method));
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  const std::vector<std::string> texts = neardup::testing::MakeCorpus(30, 10, 11);
  for (InsertPolicy policy : {InsertPolicy::kIfNew, InsertPolicy::kAlways}) {
    std::vector<SignedDocument> batch;
    for (size_t i = 0; i < texts.size(); ++i) {
      auto signature = (*reference)->signer().Sign(texts[i]);
      ASSERT_TRUE(signature.ok());
      const std::string id = NumberedId(policy == InsertPolicy::kIfNew ? "n" : "a", i);
      batch.push_back({id, *signature, NumberedId("attachment of ", i)});
      if (batch.size() < 64 && i + 1 < texts.size()) continue;
      auto got = (*store)->QueryAndInsertBatch(batch, policy);
      ASSERT_TRUE(got.ok()) << got.status().ToString();
      for (size_t j = 0; j < batch.size(); ++j) {
        auto expected = (*reference)->QueryAndInsertSigned(batch[j].id, batch[j].signature, policy);
        ASSERT_TRUE(expected.ok());
        ASSERT_TRUE((*got)[j].status.ok()) << (*got)[j].status.ToString();
        ASSERT_EQ((*got)[j].inserted, expected->inserted) << batch[j].id;
        ASSERT_EQ((*got)[j].matches, expected->matches) << batch[j].id;
        if ((*got)[j].inserted) {
          auto attachment = (*store)->GetAttachment(batch[j].id);
          ASSERT_TRUE(attachment.ok());
          EXPECT_EQ(*attachment, batch[j].attachment);
        }
      }
      batch.clear();
    }
  }
  // An id already stored, and a bad id, fail alone.
  auto signature = (*reference)->signer().Sign("a text of its own");
  std::vector<SignedDocument> bad = {
      {"a0", *signature, ""}, {"", *signature, ""}, {"fresh", *signature, ""}};
  auto got = (*store)->QueryAndInsertBatch(bad, InsertPolicy::kAlways);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ((*got)[0].status.code(), Status::Code::kFailedPrecondition);
  EXPECT_EQ((*got)[1].status.code(), Status::Code::kInvalidArgument);
  EXPECT_TRUE((*got)[2].status.ok() && (*got)[2].inserted);
}

TEST_P(RedisIndexTest, BulkInsertThenQueries) {
  const DedupMethod method = GetParam();
  auto reference = OnlineIndex::Create(neardup::testing::Options({method}));
  auto store = IndexStore::Open(Location(), Options(method));
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  const std::vector<std::string> texts = neardup::testing::MakeCorpus(100, 10, 5);
  auto [documents, signatures] = SignIntoReference(reference->get(), texts, "b");
  ASSERT_EQ(documents.size(), texts.size());
  auto inserted = (*store)->InsertBatch(documents);
  ASSERT_TRUE(inserted.ok()) << inserted.status().ToString();
  for (const StoreInsertResult& r : *inserted) ASSERT_TRUE(r.status.ok() && r.inserted);
  auto batch = (*store)->QueryBatch(signatures);
  ASSERT_TRUE(batch.ok());
  for (size_t i = 0; i < signatures.size(); ++i) {
    ASSERT_EQ((*batch)[i], *(*reference)->QuerySigned(signatures[i])) << i;
  }
}

// Queries down to an estimate below the threshold (what a sharded job's shards ask): every stored
// document sharing a band key whose estimate reaches the bound, by brute force; at the threshold
// the same answers as QueryBatch. Refused for SimHash below its rule, and by the embedded store.
TEST_P(RedisIndexTest, QueriesBelowTheThreshold) {
  const DedupMethod method = GetParam();
  auto reference = OnlineIndex::Create(neardup::testing::Options({method}));
  auto store = IndexStore::Open(Location(), Options(method));
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  const std::vector<std::string> texts = neardup::testing::MakeCorpus(100, 10, 5);
  auto [documents, signatures] = SignIntoReference(reference->get(), texts, "q");
  ASSERT_TRUE((*store)->InsertBatch(documents).ok());
  const double threshold = (*store)->signer().options().threshold;
  auto same = (*store)->QueryBatchAtLeast(signatures, threshold);
  ASSERT_TRUE(same.ok()) << same.status().ToString();
  EXPECT_EQ(*same, *(*store)->QueryBatch(signatures));
  if (method == DedupMethod::kSimhash) {
    EXPECT_EQ((*store)->QueryBatchAtLeast(signatures, threshold - 0.1).status().code(),
              Status::Code::kInvalidArgument);
    return;
  }
  EXPECT_EQ((*store)->QueryBatchAtLeast(signatures, threshold + 0.1).status().code(),
            Status::Code::kInvalidArgument);
  const double lowest = 0.5;
  auto below = (*store)->QueryBatchAtLeast(signatures, lowest);
  ASSERT_TRUE(below.ok()) << below.status().ToString();
  const Sketcher& sketcher = *(*store)->signer().sketcher();
  size_t more = 0;
  for (size_t i = 0; i < signatures.size(); ++i) {
    std::vector<OnlineMatch> want;
    for (size_t j = 0; j < signatures.size(); ++j) {
      const auto& a = signatures[i].band_keys;
      const auto& b = signatures[j].band_keys;
      bool shared = false;
      for (size_t k = 0; k < a.size() && !shared; ++k) shared = a[k] == b[k];
      if (!shared || signatures[j].empty) continue;
      const double estimate = *sketcher.EstimateJaccard(signatures[i].sketch, signatures[j].sketch);
      if (estimate >= lowest) want.push_back({documents[j].id, estimate});
    }
    std::sort(want.begin(), want.end(), [](const OnlineMatch& x, const OnlineMatch& y) {
      return x.score != y.score ? x.score > y.score : x.id < y.id;
    });
    ASSERT_EQ((*below)[i], want) << i;
    more += want.size() - (*same)[i].size();
  }
  EXPECT_GT(more, 0u) << "the corpus must have pairs between the bound and the threshold";
  const neardup::testing::TempDir temp;  // removed after the store below is closed
  auto embedded = IndexStore::Open(temp.Path("embedded"), Options(method));
  ASSERT_TRUE(embedded.ok()) << embedded.status().ToString();
  EXPECT_EQ((*embedded)->QueryBatchAtLeast(signatures, lowest).status().code(),
            Status::Code::kNotSupported);
}

// Compaction drops the entries of removed and rejected documents and changes no answer, before or
// after more inserts.
TEST_P(RedisIndexTest, CompactKeepsTheAnswers) {
  const DedupMethod method = GetParam();
  auto reference = OnlineIndex::Create(neardup::testing::Options({method}));
  auto store = IndexStore::Open(Location(), Options(method));
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  const std::vector<std::string> texts = neardup::testing::MakeCorpus(60, 10, 23);
  std::vector<Signature> signatures;
  for (size_t i = 0; i < texts.size(); ++i) {
    signatures.push_back(*(*reference)->signer().Sign(texts[i]));
    const std::string id = NumberedId("k", i);
    auto expected = (*reference)->QueryAndInsertSigned(id, signatures[i], InsertPolicy::kIfNew);
    auto got = (*store)->QueryAndInsertSigned(id, signatures[i], InsertPolicy::kIfNew);
    ASSERT_TRUE(got.ok() && expected.ok());
    ASSERT_EQ(got->inserted, expected->inserted);
    if (i % 3 == 0 && got->inserted) {
      ASSERT_TRUE((*reference)->Remove(id).ok());
      ASSERT_TRUE((*store)->Remove(id).ok());
    }
  }
  auto check = [&](const char* when) {
    auto batch = (*store)->QueryBatch(signatures);
    ASSERT_TRUE(batch.ok()) << batch.status().ToString();
    for (size_t i = 0; i < signatures.size(); ++i) {
      ASSERT_EQ((*batch)[i], *(*reference)->QuerySigned(signatures[i])) << i << " " << when;
    }
  };
  check("before compaction");
  auto compacted = (*store)->Compact();
  ASSERT_TRUE(compacted.ok()) << compacted.status().ToString();
  EXPECT_GT(compacted->buckets, 0u);
  EXPECT_EQ(compacted->rewritten, compacted->buckets);
  EXPECT_LT(compacted->entries_after, compacted->entries_before);
  EXPECT_GT(compacted->entries_after, 0u);
  check("after compaction");
  // Again: nothing left to drop.
  auto again = (*store)->Compact();
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->entries_after, again->entries_before);
  EXPECT_EQ(again->entries_after, compacted->entries_after);
  // More documents after it.
  for (size_t i = 0; i < texts.size(); i += 2) {
    const std::string id = NumberedId("m", i);
    auto expected = (*reference)->QueryAndInsertSigned(id, signatures[i], InsertPolicy::kAlways);
    auto got = (*store)->QueryAndInsertSigned(id, signatures[i], InsertPolicy::kAlways);
    ASSERT_TRUE(got.ok());
    ASSERT_EQ(got->matches, expected->matches) << id;
  }
  check("after more inserts");
  // Removals from packed buckets: the next compaction drops their entries.
  for (size_t i = 0; i < texts.size(); i += 4) {
    const std::string id = NumberedId("m", i);
    ASSERT_TRUE((*reference)->Remove(id).ok());
    ASSERT_TRUE((*store)->Remove(id).ok());
  }
  auto third = (*store)->Compact();
  ASSERT_TRUE(third.ok()) << third.status().ToString();
  EXPECT_LT(third->entries_after, third->entries_before);
  check("after removing and compacting again");
  // The embedded store has nothing to compact.
  const neardup::testing::TempDir temp;  // removed after the store below is closed
  IndexStoreOptions embedded = Options(method);
  auto local = IndexStore::Open(temp.Path("embedded"), embedded);
  ASSERT_TRUE(local.ok()) << local.status().ToString();
  EXPECT_EQ((*local)->Compact().status().code(), Status::Code::kNotSupported);
}

// Compaction while another connection bulk-inserts: a bucket appended to between compaction's
// read and its rewrite is left for the next run, so no entry is lost and the answers stay the
// embedded index's.
TEST_P(RedisIndexTest, CompactWhileInserting) {
  const DedupMethod method = GetParam();
  auto reference = OnlineIndex::Create(neardup::testing::Options({method}));
  auto writer = IndexStore::Open(Location(), Options(method));
  ASSERT_TRUE(writer.ok()) << writer.status().ToString();
  auto compactor = IndexStore::Open(Location(), Options(method));
  ASSERT_TRUE(compactor.ok()) << compactor.status().ToString();
  const std::vector<std::string> texts = neardup::testing::MakeCorpus(80, 6, 41);
  auto [documents, signatures] = SignIntoReference(reference->get(), texts, "w");
  ASSERT_EQ(documents.size(), texts.size());
  std::atomic<bool> done{false};
  std::atomic<int> compactions{0};
  std::string compact_error;
  std::thread compacting([&] {
    while (!done.load() || compactions.load() < 2) {
      auto c = (*compactor)->Compact();
      if (!c.ok()) {
        compact_error = c.status().ToString();
        return;
      }
      ++compactions;
    }
  });
  for (size_t i = 0; i < documents.size(); i += 7) {
    const size_t end = std::min(documents.size(), i + 7);
    auto inserted = (*writer)->InsertBatch(std::span(documents).subspan(i, end - i));
    ASSERT_TRUE(inserted.ok()) << inserted.status().ToString();
  }
  done = true;
  compacting.join();
  ASSERT_EQ(compact_error, "");
  auto last = (*compactor)->Compact();
  ASSERT_TRUE(last.ok());
  EXPECT_EQ(last->rewritten, last->buckets);
  auto batch = (*writer)->QueryBatch(signatures);
  ASSERT_TRUE(batch.ok()) << batch.status().ToString();
  for (size_t i = 0; i < signatures.size(); ++i) {
    ASSERT_EQ((*batch)[i], *(*reference)->QuerySigned(signatures[i])) << i;
  }
}

// A packed bucket damaged in Redis fails the queries that read it, and compaction, with
// Corruption naming its key; other queries still answer, and the index opens as before.
TEST_P(RedisIndexTest, DamagedPackedBucketIsNamed) {
  const DedupMethod method = GetParam();
  auto store = IndexStore::Open(Location(), Options(method));
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  const std::vector<std::string> texts = neardup::testing::MakeCorpus(20, 4, 31);
  std::vector<Signature> signatures;
  for (size_t i = 0; i < texts.size(); ++i) {
    signatures.push_back(*(*store)->signer().Sign(texts[i]));
    ASSERT_TRUE((*store)
                    ->QueryAndInsertSigned(NumberedId("d", i), signatures[i], InsertPolicy::kAlways)
                    .ok());
  }
  ASSERT_TRUE((*store)->Compact().ok());
  const std::string location = Location();
  const std::string prefix = location.substr(location.rfind('/') + 1);
  const auto layout = store_internal::RedisLayout::ForNewIndex(
      prefix, (*store)->signer(), Options(method).store.expected_documents);
  const Signature& damaged = signatures[0];
  const uint64_t value = method == DedupMethod::kAccurate ? damaged.band_keys[0] : damaged.simhash;
  const std::string key = layout.PackedKeyOfId(layout.BucketId(0, value));
  ASSERT_TRUE(testing::RunShell("redis-cli -c -p " + std::to_string(cluster->base_port()) +
                                " SET '" + key + "' '\x05\x01\x03garbage' >/dev/null"));
  auto query = (*store)->QuerySigned(damaged);
  ASSERT_EQ(query.status().code(), Status::Code::kCorruption) << query.status().ToString();
  EXPECT_NE(query.status().message().find(key), std::string::npos) << query.status().ToString();
  auto compacted = (*store)->Compact();
  ASSERT_EQ(compacted.status().code(), Status::Code::kCorruption);
  EXPECT_NE(compacted.status().message().find(key), std::string::npos);
  // A signature reading none of that bucket's table-0 key still answers.
  for (size_t i = 1; i < signatures.size(); ++i) {
    const uint64_t v =
        method == DedupMethod::kAccurate ? signatures[i].band_keys[0] : signatures[i].simhash;
    if (layout.BucketId(0, v) == layout.BucketId(0, value)) continue;
    bool touches = false;
    for (int t = 0; t < layout.tables; ++t) {
      const uint64_t vt =
          method == DedupMethod::kAccurate ? signatures[i].band_keys[t] : signatures[i].simhash;
      touches = touches || layout.PackedKeyOfId(layout.BucketId(t, vt)) == key;
    }
    if (touches) continue;
    EXPECT_TRUE((*store)->QuerySigned(signatures[i]).ok()) << i;
    break;
  }
}

// An index of another layout version is refused, naming both versions.
TEST_F(RedisIndexTest, OtherLayoutVersionIsRefused) {
  IndexStoreOptions options = Options(DedupMethod::kAccurate);
  ASSERT_TRUE(IndexStore::Open(Location(), options).ok());
  const std::string location = Location();
  const std::string prefix = location.substr(location.rfind('/') + 1);
  ASSERT_TRUE(testing::RunShell("redis-cli -c -p " + std::to_string(cluster->base_port()) +
                                " HSET '" + prefix + ":{meta}' version 1 >/dev/null"));
  auto old = IndexStore::Open(Location(), options);
  ASSERT_EQ(old.status().code(), Status::Code::kFailedPrecondition) << old.status().ToString();
  EXPECT_NE(old.status().message().find("version 1"), std::string::npos);
  EXPECT_NE(old.status().message().find("version 2"), std::string::npos);
}

// Workers with their own connections insert the same near-duplicate groups at once with kIfNew:
// no two stored documents are near-duplicates, and every document not stored was told of a
// stored near-duplicate.
TEST_P(RedisIndexTest, ConcurrentWorkersAgree) {
  const DedupMethod method = GetParam();
  const std::string location = Location();
  std::vector<std::unique_ptr<IndexStore>> workers;
  for (int w = 0; w < 4; ++w) {
    auto store = IndexStore::Open(location, Options(method));
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    workers.push_back(std::move(*store));
  }
  const std::vector<std::string> texts = neardup::testing::MakeCorpus(12, 16, 3);
  std::vector<Signature> signatures;
  for (const std::string& t : texts) signatures.push_back(*workers[0]->signer().Sign(t));
  std::vector<QueryAndInsertResult> results(texts.size());
  std::atomic<bool> failed{false};
  std::vector<std::thread> threads;
  for (int w = 0; w < 4; ++w) {
    threads.emplace_back([&, w] {
      // Each worker takes every 4th document, in an order of its own.
      std::vector<size_t> mine;
      for (size_t i = static_cast<size_t>(w); i < texts.size(); i += 4) mine.push_back(i);
      std::mt19937 rng(static_cast<uint32_t>(w));
      std::shuffle(mine.begin(), mine.end(), rng);
      for (size_t i : mine) {
        auto r = workers[static_cast<size_t>(w)]->QueryAndInsertSigned(
            NumberedId("c", i), signatures[i], InsertPolicy::kIfNew);
        if (!r.ok()) {
          ADD_FAILURE() << r.status().ToString();
          failed = true;
          return;
        }
        results[i] = std::move(*r);
      }
    });
  }
  for (auto& t : threads) t.join();
  ASSERT_FALSE(failed);
  // The reference rule, by brute force over the stored documents.
  auto reference = OnlineIndex::Create(neardup::testing::Options({method}));
  std::set<std::string> stored;
  for (size_t i = 0; i < texts.size(); ++i) {
    if (!results[i].inserted) continue;
    const std::string id = NumberedId("c", i);
    stored.insert(id);
    auto matches = (*reference)->QuerySigned(signatures[i]);
    ASSERT_TRUE(matches.ok());
    ASSERT_TRUE(matches->empty()) << id << " and " << (*matches)[0].id
                                  << " are near-duplicates and both were stored";
    ASSERT_TRUE((*reference)->InsertSigned(id, signatures[i]).ok());
  }
  size_t rejected = 0;
  for (size_t i = 0; i < texts.size(); ++i) {
    if (results[i].inserted) continue;
    ++rejected;
    ASSERT_FALSE(results[i].matches.empty()) << i;
    for (const OnlineMatch& m : results[i].matches) {
      EXPECT_EQ(stored.count(m.id), 1u)
          << "c" << i << " was told of " << m.id << ", which is not stored";
    }
  }
  EXPECT_GT(rejected, method == DedupMethod::kAccurate ? texts.size() / 3 : 10);
  auto count = workers[0]->Stats().index.documents;
  EXPECT_EQ(count, stored.size());
}

// Four workers insert the same text under four ids at the same moment, 40 times: exactly one of
// each four is stored, and the other three name it.
TEST_P(RedisIndexTest, SimultaneousCopiesStoreOne) {
  const DedupMethod method = GetParam();
  const std::string location = Location();
  constexpr int kWorkers = 4;
  std::vector<std::unique_ptr<IndexStore>> workers;
  for (int w = 0; w < kWorkers; ++w) {
    auto store = IndexStore::Open(location, Options(method));
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    workers.push_back(std::move(*store));
  }
  // Texts that are not near-duplicates of each other.
  std::vector<std::string> texts;
  auto distinct = OnlineIndex::Create(neardup::testing::Options({method}));
  for (const std::string& t : neardup::testing::MakeCorpus(60, 1, 17)) {
    auto r = (*distinct)->QueryAndInsert(NumberedId("x", texts.size()), t, InsertPolicy::kIfNew);
    if (r.ok() && r->inserted && !(*distinct)->signer().Sign(t)->empty) texts.push_back(t);
  }
  ASSERT_GT(texts.size(), 20u);
  std::vector<std::array<QueryAndInsertResult, kWorkers>> results(texts.size());
  std::barrier sync(kWorkers);
  std::atomic<bool> failed{false};
  std::vector<std::thread> threads;
  for (int w = 0; w < kWorkers; ++w) {
    threads.emplace_back([&, w] {
      for (size_t g = 0; g < texts.size(); ++g) {
        sync.arrive_and_wait();
        auto signature = workers[0]->signer().Sign(texts[g]);
        auto r = workers[static_cast<size_t>(w)]->QueryAndInsertSigned(
            NumberedId(NumberedId("g", g) + ".", static_cast<size_t>(w)), *signature,
            InsertPolicy::kIfNew);
        if (!r.ok()) {
          failed = true;
          ADD_FAILURE() << r.status().ToString();
        } else {
          results[g][static_cast<size_t>(w)] = std::move(*r);
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  ASSERT_FALSE(failed);
  for (size_t g = 0; g < texts.size(); ++g) {
    int stored = -1, count = 0;
    for (int w = 0; w < kWorkers; ++w) {
      if (results[g][static_cast<size_t>(w)].inserted) {
        stored = w;
        ++count;
      }
    }
    ASSERT_EQ(count, 1) << "group " << g;
    const std::string winner = NumberedId(NumberedId("g", g) + ".", static_cast<size_t>(stored));
    for (int w = 0; w < kWorkers; ++w) {
      if (w == stored) continue;
      const auto& matches = results[g][static_cast<size_t>(w)].matches;
      ASSERT_EQ(matches.size(), 1u) << "group " << g;
      EXPECT_EQ(matches[0].id, winner);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Methods, RedisIndexTest,
                         ::testing::Values(DedupMethod::kAccurate, DedupMethod::kSimhash),
                         [](const auto& p) { return std::string(DedupMethodName(p.param)); });

TEST(RedisLocationTest, BadLocationsAreNamed) {
  for (const char* bad :
       {"rediss://h:1", "redis://", "redis://host", "redis://host:0", "redis://host:65536",
        "redis://:80", "redis://h:1,h:2", "redis-cluster://h:1,", "redis://h:1/",
        "redis://h:1/a{b}", "redis://h:x", "redis://[::1]/p", "redis://[::1:6379/p",
        "redis://[::1]x:6379/p", "redis://user:pw@h:1/p", "redis:// h:1/p", "redis://h h:1/p",
        "redis://h/x:1"}) {
    auto parsed = ParseStoreLocation(bad);
    EXPECT_EQ(parsed.status().code(), Status::Code::kInvalidArgument) << bad;
    EXPECT_NE(parsed.status().message().find(bad), std::string::npos) << parsed.status().ToString();
  }
  auto good = ParseStoreLocation("redis-cluster://10.0.0.1:7000,node-b:7001/crawl.v2");
  ASSERT_TRUE(good.ok());
  EXPECT_EQ(good->kind, StoreLocation::Kind::kRedisCluster);
  ASSERT_EQ(good->endpoints.size(), 2u);
  EXPECT_EQ(good->endpoints[1].first, "node-b");
  EXPECT_EQ(good->endpoints[1].second, 7001);
  EXPECT_EQ(good->prefix, "crawl.v2");
  // IPv6 addresses, bracketed or not (the port after the last colon).
  for (const char* v6 : {"redis://[::1]:6379/p", "redis://::1:6379/p"}) {
    auto parsed = ParseStoreLocation(v6);
    ASSERT_TRUE(parsed.ok()) << v6 << ": " << parsed.status().ToString();
    EXPECT_EQ(parsed->endpoints[0].first, "::1") << v6;
    EXPECT_EQ(parsed->endpoints[0].second, 6379) << v6;
  }
  auto dir = ParseStoreLocation("some/dir");
  ASSERT_TRUE(dir.ok());
  EXPECT_EQ(dir->kind, StoreLocation::Kind::kEmbedded);
}

TEST(RedisLocationTest, NothingListeningFailsQuickly) {
  IndexStoreOptions options;
  options.redis.timeout_seconds = 0.5;
  options.redis.retry_seconds = 1;
  const auto start = std::chrono::steady_clock::now();
  auto store = IndexStore::Open("redis://127.0.0.1:1/x", options);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(store.status().code(), Status::Code::kUnavailable) << store.status().ToString();
  EXPECT_NE(store.status().message().find("127.0.0.1:1"), std::string::npos);
  EXPECT_LT(seconds, 10);
}

TEST_F(RedisIndexTest, OpenErrors) {
  IndexStoreOptions options = Options(DedupMethod::kAccurate);
  // A missing index, not created.
  options.store.create_if_missing = false;
  EXPECT_EQ(IndexStore::Open(Location(), options).status().code(), Status::Code::kNotFound);
  options.store.create_if_missing = true;
  ASSERT_TRUE(IndexStore::Open(Location(), options).ok());
  // Other settings.
  options.store.method->threshold = 0.7;
  auto other = IndexStore::Open(Location(), options);
  EXPECT_EQ(other.status().code(), Status::Code::kFailedPrecondition);
  EXPECT_NE(other.status().message().find("threshold"), std::string::npos)
      << other.status().ToString();
  // No method given: the index's own.
  options.store.method.reset();
  auto own = IndexStore::Open(Location(), options);
  ASSERT_TRUE(own.ok());
  EXPECT_EQ((*own)->signer().options().threshold, 0.8);
  // redis:// against a cluster node.
  const std::string seeds = cluster->seeds();
  auto single = IndexStore::Open("redis://" + seeds.substr(0, seeds.find(',')) + "/x", options);
  EXPECT_EQ(single.status().code(), Status::Code::kInvalidArgument) << single.status().ToString();
}

// Packed buckets (what compaction writes) against the appended form they replace: the same
// entries back, and the same matches for any query, for both methods and the extreme widths.
std::vector<store_internal::RedisLayout> PackingLayouts() {
  std::vector<store_internal::RedisLayout> layouts;
  for (int bits : {8, 12, 24}) {
    store_internal::RedisLayout layout;
    layout.accurate = true;
    layout.tables = 20;
    layout.bucket_bits = bits;
    layouts.push_back(layout);
  }
  store_internal::RedisLayout simhash;
  simhash.accurate = false;
  simhash.k = 3;
  simhash.tables = 4;
  simhash.bucket_bits = 12;
  layouts.push_back(simhash);
  return layouts;
}

// Entries of one bucket: distinct ascending document numbers with gaps of the given scale (and
// now and then a jump), values within the layout's width; kSimhash values near `near`.
std::vector<store_internal::BucketEntry> RandomEntries(const store_internal::RedisLayout& layout,
                                                       size_t n, uint32_t gap_scale, uint64_t near,
                                                       std::mt19937_64& random) {
  std::vector<store_internal::BucketEntry> entries;
  const int width = layout.value_bits();
  const uint64_t mask = width == 64 ? ~uint64_t{0} : (uint64_t{1} << width) - 1;
  uint64_t docnum = random() % (gap_scale + 1);
  for (size_t i = 0; i < n && docnum <= UINT32_MAX; ++i) {
    store_internal::BucketEntry e;
    e.docnum = static_cast<uint32_t>(docnum);
    e.value = random() & mask;
    if (random() % 3 == 0) e.value = near & mask;  // matches
    if (!layout.accurate && random() % 2 == 0) {
      e.value = near ^ (uint64_t{1} << (random() % 64)) ^ (uint64_t{1} << (random() % 64));
    }
    entries.push_back(e);
    docnum += 1 + random() % gap_scale;
    if (random() % 50 == 0) docnum += random() % (uint64_t{1} << 31);
  }
  return entries;
}

TEST(RedisLayoutTest, PackedBucketsAnswerAsAppendedOnes) {
  std::mt19937_64 random(11);
  for (const store_internal::RedisLayout& layout : PackingLayouts()) {
    for (uint32_t gap_scale : {1u, 7u, 4096u, 1u << 30}) {
      for (size_t n : {size_t{1}, size_t{2}, size_t{255}, size_t{1000}}) {
        const uint64_t query = random();
        const int table = static_cast<int>(random() % layout.tables);
        auto entries = RandomEntries(layout, n, gap_scale, query, random);
        SCOPED_TRACE(std::to_string(layout.bucket_bits) +
                     (layout.accurate ? " accurate" : " simhash") + " gaps " +
                     std::to_string(gap_scale) + " n " + std::to_string(entries.size()));
        const std::string packed = layout.Pack(entries);
        std::vector<store_internal::BucketEntry> back;
        ASSERT_TRUE(layout.Unpack(packed, &back).ok());
        ASSERT_EQ(back, entries);
        // The appended form of the same entries: band keys in the query's bucket (their top
        // bucket_bits bits are the query's).
        std::string appended;
        for (const auto& e : entries) {
          const uint64_t value =
              layout.accurate ? (query >> layout.value_bits() << layout.value_bits()) | e.value
                              : e.value;
          layout.AppendEntry(table, value, e.docnum, &appended);
        }
        std::vector<store_internal::BucketEntry> unpacked;
        layout.UnpackAppended(appended, &unpacked);
        ASSERT_EQ(unpacked, entries);
        std::vector<std::pair<uint32_t, int>> from_appended;
        std::vector<std::pair<uint32_t, int>> from_packed;
        layout.ForEachMatch(table, query, appended, [&](uint32_t d, int distance) {
          from_appended.push_back({d, distance});
        });
        ASSERT_TRUE(layout
                        .ForEachPackedMatch(table, query, packed,
                                            [&](uint32_t d, int distance) {
                                              from_packed.push_back({d, distance});
                                            })
                        .ok());
        EXPECT_EQ(from_packed, from_appended);
        if (n >= 255) {
          EXPECT_FALSE(from_packed.empty());
        }
      }
    }
  }
  // The largest document number, and a single entry.
  const store_internal::RedisLayout layout = PackingLayouts()[1];
  std::vector<store_internal::BucketEntry> last = {{5, 0}, {(uint64_t{1} << 20) - 1, UINT32_MAX}};
  std::vector<store_internal::BucketEntry> back;
  ASSERT_TRUE(layout.Unpack(layout.Pack(last), &back).ok());
  EXPECT_EQ(back, last);
  EXPECT_EQ(layout.Pack({}), "");
}

// At the default layout's fill (256 entries a bucket of a 1M-document index) an entry takes
// about 4.2 bytes packed, against 7 appended.
TEST(RedisLayoutTest, PackedEntriesAreSmall) {
  std::mt19937_64 random(5);
  const store_internal::RedisLayout layout = PackingLayouts()[1];
  std::vector<store_internal::BucketEntry> entries;
  uint64_t docnum = 0;
  for (int i = 0; i < 256; ++i) {
    docnum += 1 + random() % 7800;  // 1M documents over 4096 buckets
    entries.push_back({random() & 0xFFFFF, static_cast<uint32_t>(docnum)});
  }
  const double bytes = static_cast<double>(layout.Pack(entries).size()) / entries.size();
  EXPECT_LT(bytes, 4.4);
  EXPECT_GT(bytes, 3.5);
}

// A damaged packed bucket is Corruption (naming the bucket's size), never a crash or a partial
// answer: every cut, extra bytes, every single byte changed, and absurd headers.
TEST(RedisLayoutTest, DamagedPackedBucketsAreCorruption) {
  std::mt19937_64 random(3);
  for (const store_internal::RedisLayout& layout : PackingLayouts()) {
    const auto entries = RandomEntries(layout, 40, 300, random(), random);
    const std::string packed = layout.Pack(entries);
    std::vector<store_internal::BucketEntry> out = {{1, 2}};
    for (size_t cut = 0; cut < packed.size(); ++cut) {
      const Status s = layout.Unpack(packed.substr(0, cut), &out);
      ASSERT_EQ(s.code(), Status::Code::kCorruption) << cut;
      EXPECT_NE(s.message().find("packed bucket"), std::string::npos) << s.ToString();
      ASSERT_EQ(out.size(), 1u);  // left as it was
    }
    EXPECT_EQ(layout.Unpack(packed + '\0', &out).code(), Status::Code::kCorruption);
    for (size_t at = 0; at < packed.size(); ++at) {
      std::string damaged = packed;
      damaged[at] = static_cast<char>(damaged[at] ^ (1 + random() % 255));
      std::vector<store_internal::BucketEntry> got;
      const Status s = layout.Unpack(damaged, &got);
      if (!s.ok()) {
        EXPECT_EQ(s.code(), Status::Code::kCorruption);
        EXPECT_TRUE(got.empty());
      }
      int calls = 0;
      const Status m = layout.ForEachPackedMatch(0, 0, damaged, [&](uint32_t, int) { ++calls; });
      EXPECT_EQ(m.ok(), s.ok());
      if (!m.ok()) {
        EXPECT_EQ(calls, 0);
      }
    }
  }
  const store_internal::RedisLayout layout = PackingLayouts()[1];
  std::vector<store_internal::BucketEntry> out;
  // Count 2^63, first document 2^40, a gap parameter of 200, no entries.
  EXPECT_EQ(
      layout.Unpack(std::string("\xff\xff\xff\xff\xff\xff\xff\xff\x7f\x00\x00", 11), &out).code(),
      Status::Code::kCorruption);
  EXPECT_EQ(
      layout.Unpack(std::string("\x01\x80\x80\x80\x80\x80\x20\x00\x00\x00\x00", 11), &out).code(),
      Status::Code::kCorruption);
  EXPECT_EQ(layout.Unpack(std::string("\x01\x00\xc8\x00\x00\x00", 6), &out).code(),
            Status::Code::kCorruption);
  EXPECT_EQ(layout.Unpack(std::string("\x00\x00\x00", 3), &out).code(), Status::Code::kCorruption);
  EXPECT_TRUE(out.empty());
}

// Bucket keys back to their buckets; other keys are not buckets of this index.
TEST(RedisLayoutTest, BucketKeysName) {
  store_internal::RedisLayout layout;
  layout.prefix = "ix";
  const uint64_t id = (uint64_t{19} << 32) | 4095;
  uint64_t got = 0;
  ASSERT_TRUE(layout.BucketIdOfKey(layout.BucketKeyOfId(id), &got));
  EXPECT_EQ(got, id);
  got = 0;
  ASSERT_TRUE(layout.BucketIdOfKey(layout.PackedKeyOfId(id), &got));
  EXPECT_EQ(got, id);
  for (const char* other : {"ixx:b:{b1.2}", "ix:r:{r1}", "ix:b:{b1}", "ix:b:{b1.}", "ix:b:{b1.2x}",
                            "ix:c:{b.2}", "ix:b:{b1.2", "ix:b:{b99999999999.2}", "i", ""}) {
    EXPECT_FALSE(layout.BucketIdOfKey(other, &got)) << other;
  }
}

}  // namespace
}  // namespace neardup
