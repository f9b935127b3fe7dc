// The Redis backend against the in-memory online index (the reference), on a real local Redis
// Cluster: the same matches, scores and order for both methods, on generated and real text;
// check-and-insert agreeing across concurrent workers; and the errors of opening one.
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <barrier>
#include <fstream>
#include <random>
#include <set>
#include <thread>

#include "neardup/index_store.h"
#include "online/online_testutil.h"
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
  const std::string path = ::testing::TempDir() + "/redis-help.txt";
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
  std::vector<SignedDocument> documents;
  std::vector<Signature> signatures;
  for (size_t i = 0; i < texts.size(); ++i) {
    auto signature = (*reference)->signer().Sign(texts[i]);
    documents.push_back({NumberedId("b", i), *signature, ""});
    signatures.push_back(*signature);
    ASSERT_TRUE((*reference)->InsertSigned(documents.back().id, *signature).ok());
  }
  auto inserted = (*store)->InsertBatch(documents);
  ASSERT_TRUE(inserted.ok()) << inserted.status().ToString();
  for (const StoreInsertResult& r : *inserted) ASSERT_TRUE(r.status.ok() && r.inserted);
  auto batch = (*store)->QueryBatch(signatures);
  ASSERT_TRUE(batch.ok());
  for (size_t i = 0; i < signatures.size(); ++i) {
    ASSERT_EQ((*batch)[i], *(*reference)->QuerySigned(signatures[i])) << i;
  }
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
  // The embedded store has nothing to compact.
  const std::string dir = ::testing::TempDir() + "/compact-embedded-" +
                          std::string(DedupMethodName(method)) + "-" + std::to_string(getpid());
  IndexStoreOptions embedded = Options(method);
  auto local = IndexStore::Open(dir, embedded);
  ASSERT_TRUE(local.ok()) << local.status().ToString();
  EXPECT_EQ((*local)->Compact().status().code(), Status::Code::kNotSupported);
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
        "redis://h:1/a{b}", "redis://h:x"}) {
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

}  // namespace
}  // namespace neardup
