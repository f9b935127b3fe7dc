// The Redis index through the failures of a real local Redis Cluster: a master killed (-9) under a
// bulk insert with wait_replicas=1 (every acknowledged document survives, through the same store
// and through fresh connections); slots moved between masters under continuous queries (every
// answer stays the reference's); and the errors of opening with a wrong or missing password or
// against nothing, in bounded time.
//
// Each test starts a cluster of its own (scripts/redis-cluster.sh), on ports 7700.. in the Release
// build and 7750.. under the sanitizers, and stops it when it ends.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <mutex>
#include <random>
#include <span>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "neardup/index_store.h"
#include "online/online_testutil.h"
#include "store/redis_testutil.h"
#include "testutil.h"

namespace neardup {
namespace {

using Clock = std::chrono::steady_clock;
using testing::LocalRedisCluster;
using testing::NumberedId;
using testing::RedisInstalled;
using testing::RunShell;
using testing::SecondsSince;
using testing::WaitFor;

// The base port of test `n` (0, 1, 2): each cluster takes 6 ports and their bus ports (+10000).
int BasePort(int n) { return (neardup::testing::Sanitized() ? 7750 : 7700) + 10 * n; }

constexpr char kNotInstalled[] =
    "redis-server or redis-cli is not installed (scripts/install-deps.sh installs them)";

// redis-cli against one node; its output ("" when the node does not answer).
std::string Cli(int port, const std::string& arguments) {
  std::string output;
  RunShell("timeout 5 redis-cli -h 127.0.0.1 -p " + std::to_string(port) + " " + arguments +
               " 2>/dev/null",
           &output);
  return output;
}

pid_t ReadPid(const std::string& pidfile) {
  std::ifstream in(pidfile);
  pid_t pid = 0;
  in >> pid;
  return pid;
}

// A port on which nothing listens (the kernel's pick, closed again).
int ClosedPort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  sockaddr_in address = {};
  address.sin_family = AF_INET;
  address.sin_port = 0;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof(address);
  int port = -1;
  if (bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0) {
    port = ntohs(address.sin_port);
  }
  close(fd);
  return port;
}

// One line of CLUSTER NODES.
struct ClusterNode {
  std::string id;
  int port = 0;
  bool master = false;
  bool failed = false;                     // flagged fail or fail?
  std::string master_id;                   // a replica's master
  std::vector<std::pair<int, int>> slots;  // ranges (migrations in progress left out)

  int SlotCount() const {
    int n = 0;
    for (auto [first, last] : slots) n += last - first + 1;
    return n;
  }
  bool Owns(int slot) const {
    for (auto [first, last] : slots) {
      if (first <= slot && slot <= last) return true;
    }
    return false;
  }
};

// The cluster as the node on `port` sees it (empty when it does not answer).
std::vector<ClusterNode> ClusterNodes(int port) {
  std::vector<ClusterNode> nodes;
  std::istringstream lines(Cli(port, "cluster nodes"));
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream fields(line);
    std::string address, flags, ping, pong, epoch, link, slot;
    ClusterNode node;
    if (!(fields >> node.id >> address >> flags >> node.master_id >> ping >> pong >> epoch >>
          link)) {
      continue;
    }
    const size_t colon = address.find(':');
    if (colon == std::string::npos) continue;
    node.port = std::atoi(address.c_str() + colon + 1);
    node.master = flags.find("master") != std::string::npos;
    node.failed = flags.find("fail") != std::string::npos;
    while (fields >> slot) {
      if (slot.empty() || slot[0] == '[') continue;
      const size_t dash = slot.find('-');
      const int first = std::atoi(slot.c_str());
      const int last = dash == std::string::npos ? first : std::atoi(slot.c_str() + dash + 1);
      node.slots.push_back({first, last});
    }
    nodes.push_back(std::move(node));
  }
  return nodes;
}

// The port of the master that owns `slot` as the node on `port` sees it, or -1.
int OwnerOf(int port, int slot) {
  for (const ClusterNode& node : ClusterNodes(port)) {
    if (node.master && !node.failed && node.Owns(slot)) return node.port;
  }
  return -1;
}

// Every node of the cluster reports cluster_state:ok.
bool ClusterOk(const LocalRedisCluster& cluster) {
  for (int port = cluster.base_port(); port < cluster.base_port() + 6; ++port) {
    if (Cli(port, "cluster info").find("cluster_state:ok") == std::string::npos) return false;
  }
  return true;
}

// The MOVED and ASK replies that the nodes on ports base..base+5 have given (INFO errorstats).
std::pair<long, long> Redirections(int base) {
  auto count = [](const std::string& stats, const std::string& error) {
    const std::string field = "errorstat_" + error + ":count=";
    const size_t at = stats.find(field);
    return at == std::string::npos ? 0L : std::atol(stats.c_str() + at + field.size());
  };
  std::pair<long, long> total = {0, 0};
  for (int port = base; port < base + 6; ++port) {
    const std::string stats = Cli(port, "info errorstats");
    total.first += count(stats, "MOVED");
    total.second += count(stats, "ASK");
  }
  return total;
}

// A text of 40 words from a vocabulary of 5000, its own for each seed.
std::string RandomText(uint64_t seed) {
  std::mt19937_64 rng(seed);
  return neardup::testing::Join(neardup::testing::RandomWords(rng, 40));
}

IndexStoreOptions Options() {
  IndexStoreOptions options;
  options.store.method = neardup::testing::Method(DedupMethod::kAccurate);
  options.store.expected_documents = 20000;
  options.redis.timeout_seconds = 5;
  return options;
}

// Every document is in `store`: Get returns its signature (without band keys), and a query of the
// signature finds it, identical (score 1).
void ExpectFound(const std::vector<SignedDocument>& documents, const IndexStore& store,
                 const std::string& which) {
  size_t missing = 0, wrong = 0, unmatched = 0;
  std::string first_problem;
  auto note = [&](size_t* counter, const std::string& what) {
    if (first_problem.empty()) first_problem = what;
    ++*counter;
  };
  for (const SignedDocument& d : documents) {
    auto stored = store.Get(d.id);
    if (!stored.ok()) {
      note(&missing, d.id + ": " + stored.status().ToString());
    } else if (stored->sketch != d.signature.sketch || stored->simhash != d.signature.simhash ||
               stored->empty != d.signature.empty) {
      note(&wrong, d.id + ": another signature");
    }
  }
  constexpr size_t kQueryBatch = 256;
  for (size_t start = 0; start < documents.size(); start += kQueryBatch) {
    std::vector<Signature> signatures;
    const size_t end = std::min(documents.size(), start + kQueryBatch);
    for (size_t i = start; i < end; ++i) signatures.push_back(documents[i].signature);
    auto answers = store.QueryBatch(signatures);
    ASSERT_TRUE(answers.ok()) << which << ": " << answers.status().ToString();
    for (size_t i = start; i < end; ++i) {
      const auto& matches = (*answers)[i - start];
      const bool found = std::any_of(matches.begin(), matches.end(), [&](const OnlineMatch& m) {
        return m.id == documents[i].id && m.score == 1.0;
      });
      if (!found) note(&unmatched, documents[i].id + ": no match of score 1 for itself");
    }
  }
  EXPECT_EQ(missing + wrong + unmatched, 0u)
      << which << ": of " << documents.size() << " acknowledged documents, " << missing
      << " not found by Get, " << wrong << " with another signature, " << unmatched
      << " not found by a query; first: " << first_problem;
}

// Stops and joins the threads when the test returns, also through a failed ASSERT.
struct JoinAtExit {
  std::atomic<bool>& stop;
  std::vector<std::thread>& threads;
  ~JoinAtExit() {
    stop = true;
    for (std::thread& t : threads) {
      if (t.joinable()) t.join();
    }
  }
};

// A writer bulk-inserts batches with wait_replicas=1 while the master of the meta hash (which
// every batch writes: document numbers) is killed; its replica takes over; the killed node is
// restarted and rejoins as the new master's replica. Batches may fail meanwhile (Unavailable), but
// every batch that was acknowledged is there afterwards, whole.
TEST(RedisFailoverTest, KillMasterDuringBulkInsert) {
  if (!RedisInstalled()) GTEST_SKIP() << kNotInstalled;
  std::string why;
  auto cluster = LocalRedisCluster::Start(BasePort(0), &why, "--node-timeout 1000");
  ASSERT_NE(cluster, nullptr) << why;
  IndexStoreOptions options = Options();
  options.redis.wait_replicas = 1;
  options.redis.retry_seconds = 20;
  const std::string prefix = "failover";
  auto store = IndexStore::Open(cluster->Location(prefix), options);
  ASSERT_TRUE(store.ok()) << store.status().ToString();

  // The victim: the master of the meta hash's slot, and its replica.
  const int base = cluster->base_port();
  const int meta_slot = std::atoi(Cli(base, "cluster keyslot '" + prefix + ":{meta}'").c_str());
  const std::vector<ClusterNode> nodes = ClusterNodes(base);
  ASSERT_EQ(nodes.size(), 6u);
  int victim = -1, replica = -1;
  for (const ClusterNode& node : nodes) {
    if (!node.master || !node.Owns(meta_slot)) continue;
    victim = node.port;
    for (const ClusterNode& other : nodes) {
      if (other.master_id == node.id) replica = other.port;
    }
  }
  ASSERT_TRUE(victim > 0 && replica > 0) << "no master or replica for slot " << meta_slot;
  const std::string pidfile = cluster->dir() + "/redis-" + std::to_string(victim) + ".pid";
  const pid_t victim_pid = ReadPid(pidfile);
  ASSERT_GT(victim_pid, 0);
  // A node that rejoins resyncs at once (by default a master waits 5 s for more replicas).
  for (int port = base; port < base + 6; ++port) {
    ASSERT_NE(Cli(port, "config set repl-diskless-sync-delay 0").find("OK"), std::string::npos);
  }

  // The writer, and the phases of the test it records for each batch.
  enum Phase { kBefore, kKilled, kPromoted, kRestarted, kHealed, kPhases };
  static constexpr const char* kPhaseNames[] = {"before the kill", "killed", "promoted",
                                                "restarted", "healed"};
  const size_t kBatch = neardup::testing::Sanitized() ? 100 : 200;
  std::atomic<int> phase{kBefore};
  std::atomic<bool> stop{false};
  // Under the mutex: the documents of the acknowledged batches; the batches acknowledged and
  // failed, by the phase they started in; the batches that started and ended in kPromoted, and of
  // them the acknowledged ones; the first failure; failures other than Unavailable.
  std::mutex mutex;
  std::vector<SignedDocument> acknowledged;
  std::array<int, kPhases> acknowledged_in = {}, failed_in = {};
  int done_while_promoted = 0, acknowledged_while_promoted = 0;
  std::string first_failure;
  std::vector<std::string> unexpected;
  auto count = [&](const std::array<int, kPhases>& by_phase, int p) {
    std::lock_guard lock(mutex);
    return by_phase[static_cast<size_t>(p)];
  };
  std::vector<std::thread> threads;
  threads.emplace_back([&] {
    for (size_t b = 0; !stop; ++b) {
      const int started_in = phase;
      std::vector<SignedDocument> batch;
      for (size_t j = 0; j < kBatch; ++j) {
        const size_t n = b * kBatch + j;
        auto signature = (*store)->signer().Sign(RandomText(n));
        if (!signature.ok()) {
          std::lock_guard lock(mutex);
          unexpected.push_back(signature.status().ToString());
          return;
        }
        batch.push_back({NumberedId("f", n), std::move(*signature), ""});
      }
      auto results = (*store)->InsertBatch(batch);
      const int ended_in = phase;
      bool all_ok = results.ok();
      std::lock_guard lock(mutex);
      if (results.ok()) {
        for (const StoreInsertResult& r : *results) {
          if (!r.status.ok() || !r.inserted) {
            all_ok = false;
            unexpected.push_back("a document of an acknowledged batch: " + r.status.ToString());
            break;
          }
        }
      } else if (results.status().code() != Status::Code::kUnavailable) {
        unexpected.push_back(results.status().ToString());
      }
      if (all_ok) {
        acknowledged.insert(acknowledged.end(), batch.begin(), batch.end());
        ++acknowledged_in[static_cast<size_t>(started_in)];
      } else {
        ++failed_in[static_cast<size_t>(started_in)];
        if (first_failure.empty() && !results.ok()) first_failure = results.status().ToString();
      }
      if (started_in == kPromoted && ended_in == kPromoted) {
        ++done_while_promoted;
        acknowledged_while_promoted += all_ok;
      }
      // A few thousand documents in all.
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  });
  JoinAtExit join{stop, threads};

  ASSERT_TRUE(WaitFor([&] { return count(acknowledged_in, kBefore) >= 6; }, 30))
      << "no batch acknowledged";
  ASSERT_EQ(kill(victim_pid, SIGKILL), 0);
  phase = kKilled;
  const auto killed_at = Clock::now();
  // The replica takes the slots over (node timeout 1 s, then the election).
  ASSERT_TRUE(WaitFor([&] { return OwnerOf(replica, meta_slot) == replica; }, 20))
      << "the replica on port " << replica << " was not promoted";
  phase = kPromoted;
  const double failover_seconds = SecondsSince(killed_at);
  // A new master without a replica cannot acknowledge with WAIT 1: batches fail until the killed
  // node is back.
  ASSERT_TRUE(WaitFor(
      [&] {
        std::lock_guard lock(mutex);
        return done_while_promoted >= 2;
      },
      20))
      << "no batch ended while the promoted master had no replica";

  // The killed node comes back, with its configuration, as the new master's replica.
  phase = kRestarted;
  ASSERT_TRUE(RunShell("redis-server " + cluster->dir() + "/redis-" + std::to_string(victim) +
                       ".conf >/dev/null"));
  ASSERT_TRUE(WaitFor(
      [&] {
        const std::string info = Cli(victim, "info replication");
        return info.find("role:slave") != std::string::npos &&
               info.find("master_link_status:up") != std::string::npos;
      },
      30))
      << "the restarted node did not rejoin as a replica";
  ASSERT_TRUE(WaitFor([&] { return ClusterOk(*cluster); }, 30)) << "the cluster is not ok";
  const double healed_seconds = SecondsSince(killed_at);
  for (int port = base; port < base + 6; ++port) {
    EXPECT_EQ(OwnerOf(port, meta_slot), replica) << "as the node on port " << port << " sees it";
  }
  phase = kHealed;
  ASSERT_TRUE(WaitFor([&] { return count(acknowledged_in, kHealed) >= 6; }, 40))
      << "writes did not succeed again after the failover";
  stop = true;
  threads[0].join();

  std::printf(
      "failover %.1f s after the kill, cluster whole again after %.1f s; %zu documents "
      "acknowledged; batches acknowledged/failed by the phase they started in:",
      failover_seconds, healed_seconds, acknowledged.size());
  for (int p = kBefore; p < kPhases; ++p) {
    std::printf(" %s %d/%d", kPhaseNames[p], acknowledged_in[static_cast<size_t>(p)],
                failed_in[static_cast<size_t>(p)]);
  }
  std::printf("\n");
  if (!first_failure.empty()) std::printf("first failure: %s\n", first_failure.c_str());
  EXPECT_TRUE(unexpected.empty()) << unexpected.size()
                                  << " unexpected failures; first: " << unexpected.front();
  EXPECT_EQ(acknowledged_while_promoted, 0)
      << "batches were acknowledged while the only copy of a shard was its new master";
  ExpectFound(acknowledged, **store, "the writer's store");
  auto fresh = IndexStore::Open(cluster->Location(prefix), Options());
  ASSERT_TRUE(fresh.ok()) << fresh.status().ToString();
  ExpectFound(acknowledged, **fresh, "a fresh store");
}

// Query threads compare every answer with the in-memory online index while 2000 slots move from
// one master to another (redis-cli --cluster reshard: MIGRATE, ASK during, MOVED after) and back.
TEST(RedisFailoverTest, ReshardDuringQueries) {
  if (!RedisInstalled()) GTEST_SKIP() << kNotInstalled;
  std::string why;
  auto cluster = LocalRedisCluster::Start(BasePort(1), &why);
  ASSERT_NE(cluster, nullptr) << why;
  const std::string location = cluster->Location("reshard");
  auto store = IndexStore::Open(location, Options());
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  auto reference = OnlineIndex::Create(neardup::testing::Options({DedupMethod::kAccurate}));
  ASSERT_TRUE(reference.ok()) << reference.status().ToString();

  // Near-duplicate groups, so that answers have several matches.
  const std::vector<std::string> texts =
      neardup::testing::MakeCorpus(neardup::testing::Sanitized() ? 150 : 300, 10, 23);
  std::vector<SignedDocument> documents;
  std::vector<Signature> signatures;
  for (size_t i = 0; i < texts.size(); ++i) {
    auto signature = (*store)->signer().Sign(texts[i]);
    ASSERT_TRUE(signature.ok());
    documents.push_back({NumberedId("r", i), *signature, ""});
    signatures.push_back(*signature);
    ASSERT_TRUE((*reference)->InsertSigned(documents.back().id, *signature).ok());
  }
  for (size_t start = 0; start < documents.size(); start += 500) {
    const size_t n = std::min<size_t>(500, documents.size() - start);
    auto inserted = (*store)->InsertBatch(std::span(documents).subspan(start, n));
    ASSERT_TRUE(inserted.ok()) << inserted.status().ToString();
    for (const StoreInsertResult& r : *inserted) ASSERT_TRUE(r.status.ok() && r.inserted);
  }
  std::vector<std::vector<OnlineMatch>> expected;
  size_t with_others = 0;
  for (const Signature& s : signatures) {
    auto matches = (*reference)->QuerySigned(s);
    ASSERT_TRUE(matches.ok());
    with_others += matches->size() > 1;
    expected.push_back(std::move(*matches));
  }
  EXPECT_GT(with_others, signatures.size() / 2);
  {
    auto answers = (*store)->QueryBatch(signatures);
    ASSERT_TRUE(answers.ok()) << answers.status().ToString();
    for (size_t i = 0; i < signatures.size(); ++i) ASSERT_EQ((*answers)[i], expected[i]) << i;
  }

  // Three query threads: two share the store (one slot map), one has connections of its own.
  auto own = IndexStore::Open(location, Options());
  ASSERT_TRUE(own.ok()) << own.status().ToString();
  std::atomic<bool> stop{false}, resharding{false};
  std::atomic<uint64_t> batches{0}, batches_while_resharding{0}, failed{0}, differed{0};
  std::mutex mutex;
  std::string first_problem;  // under mutex
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t) {
    IndexStore* querier = t < 2 ? store->get() : own->get();
    threads.emplace_back([&, querier, t] {
      std::mt19937 rng(static_cast<uint32_t>(t));
      constexpr size_t kWindow = 64;
      while (!stop) {
        const bool during = resharding;
        const size_t start = rng() % (signatures.size() - kWindow);
        auto answers = querier->QueryBatch(std::span(signatures).subspan(start, kWindow));
        if (!answers.ok()) {
          ++failed;
          std::lock_guard lock(mutex);
          if (first_problem.empty()) first_problem = answers.status().ToString();
          continue;
        }
        for (size_t i = 0; i < kWindow; ++i) {
          if ((*answers)[i] == expected[start + i]) continue;
          ++differed;
          std::lock_guard lock(mutex);
          if (first_problem.empty()) {
            first_problem = "the answer for " + documents[start + i].id + " differs";
          }
        }
        ++batches;
        if (during && resharding) ++batches_while_resharding;
      }
    });
  }
  JoinAtExit join{stop, threads};

  // From the master of slot 0 (its lowest slots move) to another master, and back.
  const int base = cluster->base_port();
  std::vector<ClusterNode> masters;
  for (const ClusterNode& node : ClusterNodes(base)) {
    if (node.master) masters.push_back(node);
  }
  ASSERT_EQ(masters.size(), 3u);
  std::sort(masters.begin(), masters.end(), [](const ClusterNode& a, const ClusterNode& b) {
    return a.slots.front().first < b.slots.front().first;
  });
  const ClusterNode from = masters[0];
  const ClusterNode to = masters[1];
  auto slot_counts = [&] {
    std::pair<int, int> counts = {-1, -1};
    for (const ClusterNode& node : ClusterNodes(base)) {
      if (node.id == from.id) counts.first = node.SlotCount();
      if (node.id == to.id) counts.second = node.SlotCount();
    }
    return counts;
  };
  const std::pair<int, int> before = slot_counts();
  const int kSlots = 2000;
  auto reshard = [&](const ClusterNode& source, const ClusterNode& target) {
    const std::string log = cluster->dir() + "/reshard.log";
    const std::string command =
        "timeout 120 redis-cli --cluster reshard 127.0.0.1:" + std::to_string(base) +
        " --cluster-from " + source.id + " --cluster-to " + target.id + " --cluster-slots " +
        std::to_string(kSlots) + " --cluster-yes >" + log + " 2>&1";
    std::string output;
    const bool ok = RunShell(command);
    if (!ok) RunShell("tail -n 20 " + log, &output);
    EXPECT_TRUE(ok) << command << " failed:\n" << output;
    // Every node agrees on the new owners before the next move.
    EXPECT_TRUE(WaitFor(
        [&] {
          std::string check;
          return RunShell("timeout 10 redis-cli --cluster check 127.0.0.1:" + std::to_string(base) +
                              " 2>&1",
                          &check) &&
                 check.find("[OK] All nodes agree about slots configuration.") !=
                     std::string::npos &&
                 check.find("[OK] All 16384 slots covered.") != std::string::npos;
        },
        20))
        << "the nodes do not agree after the reshard";
  };
  ASSERT_TRUE(WaitFor([&] { return batches >= 20; }, 30)) << "the queries do not run";
  const std::pair<long, long> redirections_before = Redirections(base);
  const auto reshard_start = Clock::now();
  resharding = true;
  reshard(from, to);
  const std::pair<int, int> moved = slot_counts();
  reshard(to, from);
  resharding = false;
  const double reshard_seconds = SecondsSince(reshard_start);
  const std::pair<int, int> after = slot_counts();
  ASSERT_TRUE(WaitFor([&] { return batches >= batches_while_resharding + 20; }, 30));
  stop = true;
  for (std::thread& t : threads) t.join();
  const std::pair<long, long> redirections_after = Redirections(base);
  const long moved_replies = redirections_after.first - redirections_before.first;
  const long ask_replies = redirections_after.second - redirections_before.second;

  EXPECT_EQ(moved.first, before.first - kSlots);
  EXPECT_EQ(moved.second, before.second + kSlots);
  EXPECT_EQ(after, before);
  EXPECT_EQ(failed.load(), 0u) << first_problem;
  EXPECT_EQ(differed.load(), 0u) << first_problem;
  EXPECT_GT(batches_while_resharding.load(), 10u);
  // The queries were redirected (the servers count the MOVED and ASK replies they give).
  EXPECT_GT(moved_replies, 0);
  std::printf(
      "ports %d -> %d: %d slots moved and back in %.1f s; %llu query batches of 64 (%llu during "
      "the moves); slots of the two masters %d/%d, %d/%d while moved; %ld MOVED and %ld ASK "
      "replies\n",
      from.port, to.port, kSlots, reshard_seconds, static_cast<unsigned long long>(batches.load()),
      static_cast<unsigned long long>(batches_while_resharding.load()), before.first, before.second,
      moved.first, moved.second, moved_replies, ask_replies);
  // The same answers through fresh connections after the moves.
  auto fresh = IndexStore::Open(location, Options());
  ASSERT_TRUE(fresh.ok()) << fresh.status().ToString();
  auto answers = (*fresh)->QueryBatch(signatures);
  ASSERT_TRUE(answers.ok()) << answers.status().ToString();
  for (size_t i = 0; i < signatures.size(); ++i) ASSERT_EQ((*answers)[i], expected[i]) << i;
}

// A cluster that requires a password: the right one opens it; a wrong one and none are refused
// (PermissionDenied) at once, not retried; a location naming only a closed port is Unavailable
// within a bounded time.
TEST(RedisFailoverTest, OpenWithWrongPasswordAndUnreachable) {
  if (!RedisInstalled()) GTEST_SKIP() << kNotInstalled;
  neardup::testing::TempDir dir;  // outlives the cluster: its stop reads the password file
  const std::string password = "s3cret-for-neardup";
  const std::string password_file = dir.File("password", password + "\n");
  std::string why;
  auto cluster = LocalRedisCluster::Start(BasePort(2), &why, "--password-file " + password_file);
  ASSERT_NE(cluster, nullptr) << why;
  const std::string location = cluster->Location("auth");

  IndexStoreOptions options = Options();
  options.redis.password = password;
  {
    auto store = IndexStore::Open(location, options);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    ASSERT_TRUE((*store)->Insert("a", RandomText(1)).ok());
    auto matches = (*store)->Query(RandomText(1));
    ASSERT_TRUE(matches.ok()) << matches.status().ToString();
    ASSERT_EQ(matches->size(), 1u);
    EXPECT_EQ((*matches)[0].id, "a");
  }
  for (const std::string& wrong : {std::string("wrong"), std::string()}) {
    options.redis.password = wrong;
    const auto start = Clock::now();
    auto refused = IndexStore::Open(location, options);
    const double seconds = SecondsSince(start);
    EXPECT_EQ(refused.status().code(), Status::Code::kPermissionDenied)
        << "password '" << wrong << "': " << refused.status().ToString();
    EXPECT_NE(refused.status().message().find("127.0.0.1:"), std::string::npos)
        << refused.status().ToString();
    EXPECT_LT(seconds, 2.0) << "password '" << wrong << "' was retried";
  }

  const int closed = ClosedPort();
  ASSERT_GT(closed, 0);
  IndexStoreOptions unreachable = Options();
  unreachable.redis.timeout_seconds = 0.5;
  unreachable.redis.retry_seconds = 1;
  const std::string address = "127.0.0.1:" + std::to_string(closed);
  const auto start = Clock::now();
  auto store = IndexStore::Open("redis-cluster://" + address + "/x", unreachable);
  const double seconds = SecondsSince(start);
  EXPECT_EQ(store.status().code(), Status::Code::kUnavailable) << store.status().ToString();
  EXPECT_NE(store.status().message().find(address), std::string::npos) << store.status().ToString();
  EXPECT_LT(seconds, 10.0);
  std::printf("a closed port was Unavailable after %.2f s\n", seconds);
}

}  // namespace
}  // namespace neardup
