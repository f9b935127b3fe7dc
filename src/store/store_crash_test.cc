// Kill -9 at random moments: a writer process (this program, run as a child) prints each id once
// its write is acknowledged; the test kills it with SIGKILL, reopens the store and checks that
// every acknowledged document is there with its signature. Rounds accumulate on one store per fsync
// mode.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include "neardup/store.h"
#include "store/store_testutil.h"
#include "testutil.h"

namespace neardup {
namespace {

constexpr const char* kWriterVariable = "NEARDUP_STORE_CRASH_WRITER";

// The text of a document, from its id alone (the checker signs it again).
std::string TextOf(const std::string& id) {
  std::mt19937_64 rng(std::hash<std::string>()(id));
  return "document " + id + " " + neardup::testing::Join(neardup::testing::RandomWords(rng, 20));
}

// One line "ack ID" per acknowledged id, written whole by one write(2) (googletest's own lines,
// which reach the pipe when a writer ends before its kill, are not acknowledgements).
void Acknowledge(const std::string& id) {
  const std::string line = "ack " + id + "\n";
  ASSERT_EQ(::write(1, line.data(), line.size()), static_cast<ssize_t>(line.size()));
}

// A line "rmv ID" before the remove of ID is asked for (from then on ID may be there or not), and
// "del ID" once it is acknowledged.
void Say(const char* what, const std::string& id) {
  const std::string line = what + (" " + id) + "\n";
  ASSERT_EQ(::write(1, line.data(), line.size()), static_cast<ssize_t>(line.size()));
}

// The writer: NEARDUP_STORE_CRASH_WRITER=MODE:ROUND:DIR, MODE an fsync mode, "disk" (a
// disk-resident simhash store, kBatch) or "snapshot" (kBatch, snapshots taken all the time on a
// third thread, and every fifth single document removed again). kAlways and kNever write one
// document at a time; kBatch writes batches of 32 and, on a second thread, single documents at the
// same time.
TEST(StoreCrashWriter, Write) {
  const char* variable = std::getenv(kWriterVariable);
  if (variable == nullptr) GTEST_SKIP() << "run by StoreCrashTest";
  const std::string spec = variable;
  const size_t first = spec.find(':'), second = spec.find(':', first + 1);
  const bool disk = spec.substr(0, first) == "disk";
  const bool snapshots = spec.substr(0, first) == "snapshot";
  const FsyncMode mode =
      disk || snapshots ? FsyncMode::kBatch : *ParseFsyncMode(spec.substr(0, first));
  const std::string round = spec.substr(first + 1, second - first - 1);
  StoreOptions options;
  options.fsync = mode;
  if (disk) {
    MethodOptions simhash;
    simhash.method = DedupMethod::kSimhash;
    options.method = simhash;
    options.disk_resident = true;
  }
  auto store = Store::Open(spec.substr(second + 1), options);
  if (!store.ok()) {
    std::printf("OPEN FAILED: %s\n", store.status().ToString().c_str());
    std::fflush(stdout);
    return;
  }
  constexpr int kLimit = 4000;  // a writer that outlives its kill point stops here
  if (mode != FsyncMode::kBatch) {
    for (int i = 0; i < kLimit; ++i) {
      const std::string id = "r" + round + "-" + std::to_string(i);
      auto result = (*store)->QueryAndInsert(id, TextOf(id), InsertPolicy::kAlways);
      ASSERT_TRUE(result.ok()) << result.status().ToString();
      Acknowledge(id);
    }
    return;
  }
  std::atomic<bool> done{false};
  std::thread snapshotter([&] {
    while (snapshots && !done) ASSERT_TRUE((*store)->Snapshot().ok());
  });
  std::thread single([&] {
    for (int i = 0; i < kLimit / 8; ++i) {
      const std::string id = "r" + round + "-t" + std::to_string(i);
      ASSERT_TRUE((*store)->Insert(id, TextOf(id)).ok());
      Acknowledge(id);
      if (snapshots && i % 5 == 0) {
        Say("rmv", id);
        ASSERT_TRUE((*store)->Remove(id).ok());
        Say("del", id);
      }
    }
  });
  for (int b = 0; b < kLimit / 32; ++b) {
    std::vector<SignedDocument> batch;
    for (int i = 0; i < 32; ++i) {
      const std::string id = "r" + round + "-b" + std::to_string(b * 32 + i);
      batch.push_back({id, *(*store)->signer().Sign(TextOf(id)), {}});
    }
    auto results = (*store)->QueryAndInsertBatch(batch, InsertPolicy::kAlways);
    ASSERT_TRUE(results.ok()) << results.status().ToString();
    for (const SignedDocument& document : batch) Acknowledge(document.id);
  }
  single.join();
  done = true;
  snapshotter.join();
}

// An fsync mode, or "disk": a disk-resident store with kBatch.
class StoreCrashTest : public ::testing::TestWithParam<std::string> {};

TEST_P(StoreCrashTest, EveryAcknowledgedWriteSurvivesKill9) {
  neardup::testing::TempDir temp;
  const std::string dir = temp.Path("store");
  const int rounds = neardup::testing::Sanitized() ? 20 : 24;
  std::mt19937_64 rng(std::hash<std::string>()(GetParam()));
  std::set<std::string> acknowledged, removed;
  int killed_before_any_ack = 0, loaded_from_snapshot = 0;
  // A line of the writer: an acknowledged insert or remove (false: not one).
  auto take = [&](const char* line) {
    const size_t size = std::strlen(line);
    if (size < 5 || line[size - 1] != '\n') return false;  // a line cut by the kill is not one
    const std::string id(line + 4, size - 5);
    if (std::strncmp(line, "ack ", 4) == 0) {
      acknowledged.insert(id);
      return true;
    }
    if (std::strncmp(line, "rmv ", 4) == 0) {
      acknowledged.erase(id);
      return true;
    }
    if (std::strncmp(line, "del ", 4) == 0) {
      removed.insert(id);
      return true;
    }
    return false;
  };
  for (int round = 0; round < rounds; ++round) {
    const std::string spec = GetParam() + ":" + std::to_string(round) + ":" + dir;
    pid_t pid = 0;
    FILE* out = store::testing::StartSelf("StoreCrashWriter.Write", kWriterVariable, spec, &pid);
    ASSERT_NE(out, nullptr);
    char line[512];
    // Every other round dies at a random moment from its start (while opening, perhaps), the others
    // a random moment after their first acknowledgement.
    if (round % 2 == 0) {
      std::this_thread::sleep_for(std::chrono::microseconds(rng() % 250000));
    } else {
      while (std::fgets(line, sizeof line, out) != nullptr) {
        ASSERT_NE(std::strncmp(line, "OPEN FAILED", 11), 0) << line;
        if (take(line)) break;
      }
      std::this_thread::sleep_for(std::chrono::microseconds(rng() % 30000));
    }
    ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
    size_t lines = 0;
    while (std::fgets(line, sizeof line, out) != nullptr) {
      ASSERT_NE(std::strncmp(line, "OPEN FAILED", 11), 0) << line;
      lines += take(line);
    }
    std::fclose(out);
    killed_before_any_ack += lines == 0;

    // The store opens cleanly and holds every document ever acknowledged, with its signature.
    // (A writer killed before it created the store leaves none: the checker creates nothing.)
    StoreOptions existing;
    existing.create_if_missing = false;
    auto opened = Store::Open(dir, existing);
    if (!opened.ok() && opened.status().code() == Status::Code::kNotFound && acknowledged.empty())
      continue;
    ASSERT_TRUE(opened.ok()) << "round " << round << ": " << opened.status().ToString();
    std::unique_ptr<Store> store = std::move(*opened);
    ASSERT_EQ(store->Stats().disk_resident, GetParam() == "disk");
    loaded_from_snapshot += store->Stats().loaded_from == "snapshot";
    // Every acknowledged remove holds.
    for (const std::string& id : removed)
      ASSERT_FALSE(store->Contains(id)) << "round " << round << ": removed " << id << " is back";
    // Every acknowledged document is present; the signatures of this round's are compared with
    // their texts signed again, and of a sample of the earlier rounds' (signing them all each round
    // would take most of the test's time).
    const std::string this_round = "r" + std::to_string(round) + "-";
    size_t earlier = 0;
    for (const std::string& id : acknowledged) {
      auto signature = store->Get(id);
      ASSERT_TRUE(signature.ok()) << "round " << round << ": acknowledged " << id << " lost";
      if (!id.starts_with(this_round) && earlier++ % 16 != 0) continue;
      ASSERT_EQ(*signature, *store->signer().Sign(TextOf(id))) << id;
    }
    // Its index too: this round's acknowledged documents are found by their own texts (sampled: a
    // query of a disk-resident store reads the disk).
    size_t sampled = 0;
    for (const std::string& id : acknowledged) {
      if (!id.starts_with(this_round) || sampled++ % 16 != 0) continue;
      auto matches = store->Query(TextOf(id));
      ASSERT_TRUE(matches.ok()) << matches.status().ToString();
      ASSERT_TRUE(std::any_of(matches->begin(), matches->end(),
                              [&](const OnlineMatch& m) { return m.id == id; }))
          << "round " << round << ": " << id << " not found by its own text";
    }
    EXPECT_GE(store->Stats().index.documents, acknowledged.size());
  }
  EXPECT_GT(acknowledged.size(), 0u);
  if (GetParam() == "snapshot") {
    EXPECT_GT(loaded_from_snapshot, 0);
    EXPECT_GT(removed.size(), 0u);
  }
  std::printf(
      "%s: %d kills, %zu acknowledged documents, %zu removes, %d kills before any, %d opens from a "
      "snapshot\n",
      GetParam().c_str(), rounds, acknowledged.size(), removed.size(), killed_before_any_ack,
      loaded_from_snapshot);
}

std::string ModeName(const ::testing::TestParamInfo<std::string>& param) { return param.param; }

INSTANTIATE_TEST_SUITE_P(Modes, StoreCrashTest,
                         ::testing::Values("always", "batch", "never", "disk", "snapshot"),
                         ModeName);

}  // namespace
}  // namespace neardup
