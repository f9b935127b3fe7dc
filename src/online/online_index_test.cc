// The online index against brute force (DocumentSigner::Compare over every pair) and against the
// batch job (`RunDedup` with pairs_path): the same pairs, one document at a time, on 1-3 threads.
#include "neardup/online_index.h"

#include <gtest/gtest.h>
#include <sys/resource.h>

#include <algorithm>
#include <csignal>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "neardup/dedup.h"
#include "online/online_testutil.h"
#include "testutil.h"

namespace neardup {
namespace {

using testing::MakeCorpus;
using testing::Method;
using testing::Options;
using testing::Variant;

using PairKey = std::pair<std::string, std::string>;  // ordered by (a < b as ids of rows)

PairKey Key(const std::string& a, const std::string& b) {
  return a < b ? PairKey{a, b} : PairKey{b, a};
}

// Every pair by brute force.
std::map<PairKey, double> BruteForcePairs(const DocumentSigner& signer,
                                          const std::vector<Signature>& signatures) {
  std::map<PairKey, double> pairs;
  for (size_t i = 0; i < signatures.size(); ++i) {
    for (size_t j = i + 1; j < signatures.size(); ++j) {
      if (auto score = signer.Compare(signatures[i], signatures[j])) {
        pairs[Key(std::to_string(i + 1), std::to_string(j + 1))] = *score;
      }
    }
  }
  return pairs;
}

class OnlineIndexTest : public ::testing::TestWithParam<Variant> {};

TEST_P(OnlineIndexTest, QueryBeforeInsertFindsEveryBruteForcePair) {
  const auto texts = MakeCorpus(60, 10, 7);
  auto index = std::move(OnlineIndex::Create(Options(GetParam()))).value();
  std::vector<Signature> signatures;
  for (const auto& t : texts) signatures.push_back(*index->signer().Sign(t));
  std::map<PairKey, double> found;
  for (size_t i = 0; i < texts.size(); ++i) {
    auto result = index->QueryAndInsert(std::to_string(i + 1), texts[i], InsertPolicy::kAlways);
    ASSERT_TRUE(result.ok()) << result.status().ToString();
    EXPECT_TRUE(result->inserted);
    for (const auto& m : result->matches) found[Key(m.id, std::to_string(i + 1))] = m.score;
  }
  const auto want = BruteForcePairs(index->signer(), signatures);
  ASSERT_GT(want.size(), 100u);
  EXPECT_EQ(found, want);
  // Each document's final query: every stored near-duplicate but itself... and itself.
  for (size_t i = 0; i < texts.size(); i += 37) {
    auto matches = index->Query(texts[i]);
    ASSERT_TRUE(matches.ok());
    std::set<std::string> got;
    for (const auto& m : *matches) got.insert(m.id);
    std::set<std::string> expect;
    for (size_t j = 0; j < texts.size(); ++j) {
      if (index->signer().Compare(signatures[i], signatures[j]))
        expect.insert(std::to_string(j + 1));
    }
    EXPECT_EQ(got, expect) << i;
  }
  const OnlineIndexStats stats = index->Stats();
  EXPECT_EQ(stats.documents, texts.size());
  EXPECT_EQ(stats.queries.queries, texts.size() + (texts.size() + 36) / 37);
  EXPECT_GE(stats.queries.candidates, stats.queries.matches);
  EXPECT_GT(stats.memory_bytes, 0u);
}

TEST_P(OnlineIndexTest, FindsExactlyTheBatchJobsPairs) {
  const auto texts = MakeCorpus(80, 8, 11);
  testing::TempDir dir;
  std::string corpus;
  for (const auto& t : texts) corpus += t + "\n";
  DedupOptions options;
  options.similarity = Method(GetParam().method);
  options.inputs = {dir.File("corpus.txt", corpus)};
  options.pairs_path = dir.Path("pairs.tsv");
  options.threads = 2;
  options.boundary_sigmas = 0;  // the online index decides every pair by its sketch
  ASSERT_TRUE(RunDedup(options).ok());
  std::map<PairKey, double> batch;
  std::ifstream in(options.pairs_path);
  std::string a, b;
  double score;
  while (in >> a >> b >> score) batch[Key(a, b)] = score;
  ASSERT_GT(batch.size(), 100u);

  for (int threads = 1; threads <= 3; ++threads) {
    auto index = std::move(OnlineIndex::Create(Options(GetParam()))).value();
    std::vector<std::map<PairKey, double>> found(static_cast<size_t>(threads));
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t) {
      workers.emplace_back([&, t] {
        for (size_t i = static_cast<size_t>(t); i < texts.size();
             i += static_cast<size_t>(threads)) {
          auto result =
              index->QueryAndInsert(std::to_string(i + 1), texts[i], InsertPolicy::kAlways);
          if (!result.ok()) continue;
          for (const auto& m : result->matches)
            found[static_cast<size_t>(t)][Key(m.id, std::to_string(i + 1))] = m.score;
        }
      });
    }
    for (auto& w : workers) w.join();
    std::map<PairKey, double> all;
    for (const auto& f : found) all.insert(f.begin(), f.end());
    ASSERT_EQ(all.size(), batch.size()) << threads << " threads";
    for (const auto& [pair, s] : batch) {
      auto it = all.find(pair);
      ASSERT_NE(it, all.end()) << pair.first << " " << pair.second;
      EXPECT_NEAR(it->second, s, 5e-5) << pair.first << " " << pair.second;
    }
  }
}

TEST_P(OnlineIndexTest, CheckAndInsertNeverStoresTwoNearDuplicates) {
  const auto texts = MakeCorpus(40, 12, 3);
  for (int threads = 1; threads <= 3; ++threads) {
    auto index = std::move(OnlineIndex::Create(Options(GetParam()))).value();
    std::vector<std::thread> workers;
    std::atomic<size_t> inserted{0};
    for (int t = 0; t < threads; ++t) {
      workers.emplace_back([&, t] {
        for (size_t i = static_cast<size_t>(t); i < texts.size();
             i += static_cast<size_t>(threads)) {
          auto result =
              index->QueryAndInsert(std::to_string(i + 1), texts[i], InsertPolicy::kIfNew);
          ASSERT_TRUE(result.ok());
          EXPECT_EQ(result->inserted, result->matches.empty());
          inserted += result->inserted;
        }
      });
    }
    for (auto& w : workers) w.join();
    std::vector<Signature> stored;
    ASSERT_TRUE(
        index->ForEach([&](std::string_view, const Signature& s) { stored.push_back(s); }).ok());
    EXPECT_EQ(stored.size(), inserted.load());
    EXPECT_LT(stored.size(), texts.size());
    for (size_t i = 0; i < stored.size(); ++i) {
      for (size_t j = i + 1; j < stored.size(); ++j) {
        EXPECT_FALSE(index->signer().Compare(stored[i], stored[j]).has_value())
            << threads << ": " << i << " " << j;
      }
    }
  }
}

TEST_P(OnlineIndexTest, RemovedDocumentsAreNeverFoundAndIdsCanComeBack) {
  const auto texts = MakeCorpus(20, 6, 5);
  auto index = std::move(OnlineIndex::Create(Options(GetParam()))).value();
  for (size_t i = 0; i < texts.size(); ++i)
    ASSERT_TRUE(index->Insert(std::to_string(i), texts[i]).ok());
  std::set<std::string> removed;
  for (size_t i = 0; i < texts.size(); i += 3) {
    ASSERT_TRUE(index->Remove(std::to_string(i)).ok());
    removed.insert(std::to_string(i));
  }
  EXPECT_EQ(index->Remove("0").code(), Status::Code::kNotFound);
  EXPECT_FALSE(index->Contains("0"));
  EXPECT_TRUE(index->Contains("1"));
  for (const auto& t : texts) {
    auto matches = index->Query(t);
    ASSERT_TRUE(matches.ok());
    for (const auto& m : *matches) EXPECT_EQ(removed.count(m.id), 0u) << m.id;
  }
  ASSERT_TRUE(index->Insert("0", texts[0]).ok());
  auto again = index->Query(texts[0]);
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(
      std::any_of(again->begin(), again->end(), [](const OnlineMatch& m) { return m.id == "0"; }) ||
      index->Get("0")->empty);
  EXPECT_EQ(index->Stats().documents, texts.size() - removed.size() + 1);
  // Get gives back the signature that was stored.
  for (size_t i = 1; i < texts.size(); i += 7) {
    if (removed.count(std::to_string(i))) continue;
    EXPECT_EQ(*index->Get(std::to_string(i)), *index->signer().Sign(texts[i])) << i;
  }
}

TEST_P(OnlineIndexTest, BadCallsAreErrors) {
  auto index = std::move(OnlineIndex::Create(Options(GetParam()))).value();
  EXPECT_EQ(index->Insert("", "text").code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(index->Insert(std::string(70000, 'x'), "text").code(), Status::Code::kInvalidArgument);
  ASSERT_TRUE(index->Insert("a", "some text here").ok());
  EXPECT_EQ(index->Insert("a", "other text").code(), Status::Code::kFailedPrecondition);
  EXPECT_EQ(index->QueryAndInsert("a", "other", InsertPolicy::kAlways).status().code(),
            Status::Code::kFailedPrecondition);
  Signature wrong;
  wrong.sketch.resize(3);
  EXPECT_EQ(index->InsertSigned("b", wrong).code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(index->QuerySigned(wrong).status().code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(index->Get("zz").status().code(), Status::Code::kNotFound);
  // Ids are bytes: control characters and invalid UTF-8 are fine.
  EXPECT_TRUE(index->Insert(std::string("\x01\xff", 2), "more text").ok());
  EXPECT_TRUE(index->Contains(std::string("\x01\xff", 2)));
  // Empty documents are stored and never match.
  ASSERT_TRUE(index->Insert("blank", "").ok());
  EXPECT_TRUE(index->Query("")->empty());
  EXPECT_EQ(index->Stats().empty_documents, 1u);

  MethodOptions reject = Method(GetParam().method);
  reject.features = DefaultFeatures(GetParam().method);
  reject.features->invalid_utf8 = InvalidUtf8::kReject;
  auto strict = std::move(OnlineIndex::Create(Options(GetParam(), reject))).value();
  EXPECT_EQ(strict->Insert("x", "bad \xc3 utf8").code(), Status::Code::kInvalidArgument);
  EXPECT_FALSE(strict->Contains("x"));
  MethodOptions bad = Method(GetParam().method);
  bad.k = 12;
  bad.threshold = 2;
  EXPECT_EQ(OnlineIndex::Create(Options(GetParam(), bad)).status().code(),
            Status::Code::kInvalidArgument);
}

// InsertAll (a load) gives the same index as InsertSigned one document at a time: the same answers,
// signatures and counts, before more inserts and removes and after them; an error stops it with the
// documents before it stored.
TEST_P(OnlineIndexTest, InsertAllEqualsInsertingOneByOne) {
  const auto texts = MakeCorpus(30, 8, 6);
  auto one = std::move(OnlineIndex::Create(Options(GetParam()))).value();
  auto all = std::move(OnlineIndex::Create(Options(GetParam()))).value();
  std::vector<Signature> signatures;
  for (const auto& t : texts) signatures.push_back(*one->signer().Sign(t));
  // Some documents first, so that the load lands on tables that hold rows already.
  const size_t before = texts.size() / 5;
  for (size_t i = 0; i < before; ++i) {
    ASSERT_TRUE(one->InsertSigned(std::to_string(i), signatures[i]).ok());
    ASSERT_TRUE(all->InsertSigned(std::to_string(i), signatures[i]).ok());
  }
  for (size_t i = before; i < texts.size(); ++i)
    ASSERT_TRUE(one->InsertSigned(std::to_string(i), signatures[i]).ok());
  size_t next = before;
  ASSERT_TRUE(all->InsertAll(
                     [&](std::string* id, Signature* signature) -> Result<bool> {
                       if (next == texts.size()) return false;
                       *id = std::to_string(next);
                       *signature = signatures[next++];
                       return true;
                     },
                     texts.size())
                  .ok());
  auto same = [&](const std::string& context) {
    EXPECT_EQ(all->Stats().documents, one->Stats().documents) << context;
    EXPECT_EQ(all->Stats().empty_documents, one->Stats().empty_documents) << context;
    for (size_t i = 0; i < texts.size(); ++i) {
      EXPECT_EQ(*all->QuerySigned(signatures[i]), *one->QuerySigned(signatures[i]))
          << context << ": " << i;
      const std::string id = std::to_string(i);
      EXPECT_EQ(all->Contains(id), one->Contains(id));
      if (one->Contains(id)) {
        EXPECT_EQ(*all->Get(id), *one->Get(id)) << context << ": " << id;
      }
    }
  };
  same("after the load");
  size_t matched = 0;
  for (size_t i = 0; i < texts.size(); ++i) matched += all->QuerySigned(signatures[i])->size() > 1;
  EXPECT_GT(matched, texts.size() / 10);  // the answers compared are not all empty
  for (size_t i = 0; i < texts.size(); i += 4) {
    ASSERT_TRUE(one->Remove(std::to_string(i)).ok());
    ASSERT_TRUE(all->Remove(std::to_string(i)).ok());
  }
  for (size_t i = 0; i < texts.size(); i += 3) {
    const std::string id = "again-" + std::to_string(i);
    ASSERT_TRUE(one->InsertSigned(id, signatures[i]).ok());
    ASSERT_TRUE(all->InsertSigned(id, signatures[i]).ok());
  }
  same("after removes and inserts");

  // A repeated id stops the load at its document; those before it are stored.
  auto partial = std::move(OnlineIndex::Create(Options(GetParam()))).value();
  const std::vector<std::string> ids = {"p", "q", "p", "r"};
  size_t at = 0;
  const Status stopped =
      partial->InsertAll([&](std::string* id, Signature* signature) -> Result<bool> {
        if (at == ids.size()) return false;
        *id = ids[at];
        *signature = signatures[at++];
        return true;
      });
  EXPECT_EQ(stopped.code(), Status::Code::kFailedPrecondition);
  EXPECT_NE(stopped.message().find("document 3 of the load"), std::string::npos)
      << stopped.ToString();
  EXPECT_TRUE(partial->Contains("q"));
  EXPECT_FALSE(partial->Contains("r"));
  EXPECT_EQ(partial->Stats().documents, 2u);
  if (!signatures[1].empty) {
    const auto found = *partial->QuerySigned(signatures[1]);
    EXPECT_TRUE(
        std::any_of(found.begin(), found.end(), [](const OnlineMatch& m) { return m.id == "q"; }));
  }
}

INSTANTIATE_TEST_SUITE_P(Methods, OnlineIndexTest,
                         ::testing::Values(Variant{DedupMethod::kAccurate},
                                           Variant{DedupMethod::kAccurate, true},
                                           Variant{DedupMethod::kSimhash}),
                         [](const ::testing::TestParamInfo<Variant>& param) {
                           return std::string(DedupMethodName(param.param.method)) +
                                  (param.param.sketch_file ? "SketchFile" : "");
                         });

// Enough signatures to merge the band tables' buffer into the main tables (65,536 rows) several
// times, with removes in between: sampled queries against a linear scan.
class OnlineIndexMerge : public ::testing::TestWithParam<bool> {};

TEST_P(OnlineIndexMerge, QueriesStayExactAcrossMerges) {
  auto index =
      std::move(OnlineIndex::Create(Options({DedupMethod::kAccurate, GetParam()}))).value();
  const DocumentSigner& signer = index->signer();
  std::mt19937_64 rng(99);
  std::vector<Signature> all;
  const size_t n = 100000;
  Signature s;
  s.sketch.resize(signer.sketch_bytes());
  s.band_keys.resize(signer.bands());
  for (size_t i = 0; i < n; ++i) {
    if (i % 50 != 0 && i > 0) {
      // A variant of an earlier document: a few sketch bits flipped, some band keys kept.
      s = all[rng() % all.size()];
      for (int f = 0; f < 6; ++f)
        s.sketch[4 + rng() % (s.sketch.size() - 4)] ^= static_cast<uint8_t>(1u << (rng() % 8));
      for (auto& k : s.band_keys) {
        if (rng() % 3 == 0) k = static_cast<uint32_t>(rng());
      }
      if (rng() % 4 == 0) {
        for (auto& byte : s.sketch) byte = static_cast<uint8_t>(rng());
        s.sketch[0] = 200;
        s.sketch[1] = s.sketch[2] = s.sketch[3] = 0;
      }
    } else {
      for (auto& byte : s.sketch) byte = static_cast<uint8_t>(rng());
      s.sketch[0] = 200;  // count of features: 200 (not exact form)
      s.sketch[1] = s.sketch[2] = s.sketch[3] = 0;
      for (auto& k : s.band_keys) k = static_cast<uint32_t>(rng() % 5000);  // shared by chance too
    }
    all.push_back(s);
  }
  std::vector<bool> removed(n, false);
  for (size_t i = 0; i < n; ++i) {
    ASSERT_TRUE(index->InsertSigned(std::to_string(i), all[i]).ok());
    if (i % 11 == 5) {
      const size_t victim = rng() % (i + 1);
      if (!removed[victim]) {
        ASSERT_TRUE(index->Remove(std::to_string(victim)).ok());
        removed[victim] = true;
      }
    }
  }
  size_t matched = 0;
  for (int q = 0; q < 120; ++q) {
    const size_t i = rng() % n;
    auto got = index->QuerySigned(all[i]);
    ASSERT_TRUE(got.ok());
    std::set<std::string> got_ids;
    for (const auto& m : *got) got_ids.insert(m.id);
    std::set<std::string> want;
    for (size_t j = 0; j < n; ++j) {
      if (!removed[j] && signer.Compare(all[i], all[j])) want.insert(std::to_string(j));
    }
    EXPECT_EQ(got_ids, want) << i;
    matched += want.size();
  }
  EXPECT_GT(matched, 120u);
  // Every stored signature comes back whole.
  size_t seen = 0;
  ASSERT_TRUE(index
                  ->ForEach([&](std::string_view id, const Signature& sig) {
                    EXPECT_EQ(sig, all[std::stoul(std::string(id))]);
                    ++seen;
                  })
                  .ok());
  EXPECT_EQ(seen, static_cast<size_t>(std::count(removed.begin(), removed.end(), false)));
  const size_t live =
      static_cast<size_t>(std::find(removed.begin(), removed.end(), false) - removed.begin());
  EXPECT_EQ(*index->Get(std::to_string(live)), all[live]);
  const size_t gone =
      static_cast<size_t>(std::find(removed.begin(), removed.end(), true) - removed.begin());
  EXPECT_EQ(index->Get(std::to_string(gone)).status().code(), Status::Code::kNotFound);
}

INSTANTIATE_TEST_SUITE_P(Sketches, OnlineIndexMerge, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& param) {
                           return std::string(param.param ? "InFile" : "InMemory");
                         });

// Sketches kept in a file: a directory that cannot hold it is refused at Create, and a write that
// fails (here the file size limit, as a full disk would) refuses the insert and loses nothing: the
// documents before it are all found, and inserts go on once the file can grow again.
TEST(OnlineIndexSketchFile, WriteFailuresRefuseTheInsertAndLoseNothing) {
  OnlineIndexOptions missing;
  missing.sketch_directory = ::testing::TempDir() + "/no/such/directory";
  const auto refused = OnlineIndex::Create(missing);
  ASSERT_EQ(refused.status().code(), Status::Code::kIOError);
  EXPECT_NE(refused.status().message().find("no/such/directory"), std::string::npos);

  auto index = std::move(OnlineIndex::Create(Options({DedupMethod::kAccurate, true}))).value();
  const DocumentSigner& signer = index->signer();
  std::mt19937_64 rng(5);
  auto random_signature = [&] {
    Signature s;
    s.sketch.resize(signer.sketch_bytes());
    s.band_keys.resize(signer.bands());
    for (auto& byte : s.sketch) byte = static_cast<uint8_t>(rng());
    s.sketch[0] = 200;
    s.sketch[1] = s.sketch[2] = s.sketch[3] = 0;
    for (auto& k : s.band_keys) k = static_cast<uint32_t>(rng());
    return s;
  };
  // The file may grow to 64 KiB: about 500 sketches.
  std::signal(SIGXFSZ, SIG_IGN);
  rlimit saved{};
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &saved), 0);
  rlimit limited = saved;
  limited.rlim_cur = 64 << 10;
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &limited), 0);
  std::vector<Signature> stored;
  Status failed;
  for (int i = 0; i < 20000 && failed.ok(); ++i) {
    Signature s = random_signature();
    failed = index->InsertSigned("d" + std::to_string(i), s);
    if (failed.ok()) stored.push_back(std::move(s));
  }
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &saved), 0);
  ASSERT_EQ(failed.code(), Status::Code::kIOError) << failed.ToString();
  EXPECT_NE(failed.message().find("sketch file"), std::string::npos) << failed.message();
  const std::string refused_id = "d" + std::to_string(stored.size());
  EXPECT_FALSE(index->Contains(refused_id));
  EXPECT_EQ(index->Stats().documents, stored.size());
  for (size_t i = 0; i < stored.size(); ++i) {
    auto found = index->QuerySigned(stored[i]);
    ASSERT_TRUE(found.ok()) << found.status().ToString();
    ASSERT_EQ(found->size(), 1u);
    EXPECT_EQ((*found)[0].id, "d" + std::to_string(i));
  }
  // The file can grow again: the refused document goes in, and everything is still found.
  ASSERT_TRUE(index->InsertSigned(refused_id, random_signature()).ok());
  for (int i = 0; i < 9000; ++i)
    ASSERT_TRUE(index->InsertSigned("e" + std::to_string(i), random_signature()).ok());
  for (size_t i = 0; i < stored.size(); i += 7) {
    auto found = index->QuerySigned(stored[i]);
    ASSERT_TRUE(found.ok());
    ASSERT_EQ(found->size(), 1u);
  }
  EXPECT_EQ(*index->Get("d0"), stored[0]);
}

}  // namespace
}  // namespace neardup
