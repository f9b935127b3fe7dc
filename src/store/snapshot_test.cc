// Store snapshots: a store reopened from its snapshot plus the writes after it answers exactly as
// one rebuilt from every record; unusable snapshots are passed over; snapshots taken while writers
// run lose nothing.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <atomic>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "neardup/store.h"
#include "store/record.h"
#include "store/store_testutil.h"
#include "testutil.h"

namespace neardup {
namespace {

namespace fs = std::filesystem;
using store::testing::Corpus;
using store::testing::MustOpen;

struct Case {
  DedupMethod method;
  bool sketches_on_disk;
};

class SnapshotTest : public ::testing::TestWithParam<Case> {
 protected:
  StoreOptions Options(bool load_snapshot = true) const {
    StoreOptions options;
    MethodOptions method;
    method.method = GetParam().method;
    options.method = method;
    options.sketches_on_disk = GetParam().sketches_on_disk;
    options.load_snapshot = load_snapshot;
    return options;
  }
  // The answers of a store to every text of the corpus and to a few others, its documents and
  // the signatures of the corpus's ids.
  static std::vector<std::string> Answers(Store* store, const Corpus& corpus) {
    std::vector<std::string> out;
    for (size_t i = 0; i < corpus.size(); ++i) {
      auto matches = store->Query(corpus.text(i));
      EXPECT_TRUE(matches.ok()) << matches.status().ToString();
      std::string line = corpus.id(i) + (store->Contains(corpus.id(i)) ? " stored:" : " absent:");
      if (matches.ok()) {
        for (const OnlineMatch& match : *matches)
          line += " " + match.id + "=" + std::to_string(match.score);
      }
      out.push_back(line);
    }
    const StoreStats stats = store->Stats();
    out.push_back("documents " + std::to_string(stats.index.documents) + " empty " +
                  std::to_string(stats.index.empty_documents));
    return out;
  }
  static std::vector<std::string> SnapshotFiles(const std::string& dir) {
    std::vector<std::string> files;
    for (const auto& entry : fs::directory_iterator(dir)) {
      const std::string name = entry.path().filename().string();
      if (name.starts_with("snapshot-")) files.push_back(name);
    }
    return files;
  }
  neardup::testing::TempDir temp_;
};

// Inserts, removes and re-inserts on both sides of a snapshot: the reopened store loads the
// snapshot, replays what came after, and answers as a rebuild from the records does.
TEST_P(SnapshotTest, WritesAfterTheSnapshotAreReplayed) {
  const std::string dir = temp_.Path("store");
  const Corpus corpus(360, 5);
  std::vector<std::string> before;
  {
    auto store = MustOpen(dir, Options());
    for (size_t i = 0; i < 240; ++i)
      ASSERT_TRUE(store->QueryAndInsert(corpus.id(i), corpus.text(i), InsertPolicy::kAlways).ok());
    ASSERT_TRUE(store->Insert("empty", "").ok());  // no features
    ASSERT_TRUE(store->Remove(corpus.id(3)).ok());
    ASSERT_TRUE(store->Snapshot().ok());
    EXPECT_EQ(SnapshotFiles(dir).size(), 1u);
    EXPECT_EQ(store->Stats().snapshot_rows, 241u);
    // After it: removes of documents from before and after, inserts, an id stored again.
    for (size_t i = 0; i < 240; i += 5) ASSERT_TRUE(store->Remove(corpus.id(i)).ok()) << i;
    for (size_t i = 240; i < corpus.size(); ++i)
      ASSERT_TRUE(store->Insert(corpus.id(i), corpus.text(i)).ok());
    for (size_t i = 300; i < corpus.size(); i += 4) ASSERT_TRUE(store->Remove(corpus.id(i)).ok());
    ASSERT_TRUE(store->Insert(corpus.id(10), corpus.text(11)).ok());  // removed, stored again
    ASSERT_TRUE(store->Insert(corpus.id(300), corpus.text(1)).ok());  // the same, after it
    ASSERT_TRUE(store->Remove("empty").ok());
    before = Answers(store.get(), corpus);
  }
  {
    auto store = MustOpen(dir, Options());
    const StoreStats stats = store->Stats();
    EXPECT_EQ(stats.loaded_from, "snapshot") << stats.snapshot_skipped;
    EXPECT_EQ(Answers(store.get(), corpus), before);
    // It keeps taking writes, and a second snapshot replaces the first.
    ASSERT_TRUE(store->Remove(corpus.id(11)).ok());
    ASSERT_TRUE(store->Insert("late", "a late document that nobody has seen before").ok());
    ASSERT_TRUE(store->Snapshot().ok());
    ASSERT_EQ(SnapshotFiles(dir).size(), 1u);
    EXPECT_EQ(SnapshotFiles(dir)[0],
              store::SnapshotFileName(store->Stats().next_row, store->Stats().snapshot_removals));
    before = Answers(store.get(), corpus);
  }
  auto loaded = MustOpen(dir, Options());
  EXPECT_EQ(loaded->Stats().loaded_from, "snapshot");
  EXPECT_TRUE(loaded->Contains("late"));
  EXPECT_EQ(Answers(loaded.get(), corpus), before);
  loaded.reset();
  auto rebuilt = MustOpen(dir, Options(/*load_snapshot=*/false));
  EXPECT_EQ(rebuilt->Stats().loaded_from, "records");
  EXPECT_EQ(Answers(rebuilt.get(), corpus), before);
}

// A second snapshot with nothing written in between writes nothing.
TEST_P(SnapshotTest, NothingWrittenNothingToDo) {
  const std::string dir = temp_.Path("store");
  const Corpus corpus(30, 6);
  auto store = MustOpen(dir, Options());
  for (size_t i = 0; i < corpus.size(); ++i)
    ASSERT_TRUE(store->Insert(corpus.id(i), corpus.text(i)).ok());
  ASSERT_TRUE(store->Snapshot().ok());
  const auto files = SnapshotFiles(dir);
  const auto written = fs::last_write_time(fs::path(dir) / files.at(0));
  ASSERT_TRUE(store->Snapshot().ok());
  EXPECT_EQ(SnapshotFiles(dir), files);
  EXPECT_EQ(fs::last_write_time(fs::path(dir) / files.at(0)), written);
  // Reopened from it: still nothing to do.
  store.reset();
  store = MustOpen(dir, Options());
  ASSERT_TRUE(store->Snapshot().ok());
  EXPECT_EQ(SnapshotFiles(dir), files);
}

// A damaged, truncated or missing snapshot is passed over: the index is rebuilt from the records
// and answers the same; the reason is reported.
TEST_P(SnapshotTest, UnusableSnapshotsArePassedOver) {
  const std::string dir = temp_.Path("store");
  const Corpus corpus(120, 7);
  std::vector<std::string> before;
  std::string file;
  {
    auto store = MustOpen(dir, Options());
    for (size_t i = 0; i < corpus.size(); ++i)
      ASSERT_TRUE(store->Insert(corpus.id(i), corpus.text(i)).ok());
    ASSERT_TRUE(store->Snapshot().ok());
    ASSERT_TRUE(store->Remove(corpus.id(4)).ok());
    before = Answers(store.get(), corpus);
    file = (fs::path(dir) / SnapshotFiles(dir).at(0)).string();
  }
  const auto size = fs::file_size(file);
  const std::string original = store::testing::FileContents(dir).at(fs::path(file).filename());
  auto damage = [&](const std::string& bytes) {
    std::ofstream(file, std::ios::binary | std::ios::trunc) << bytes;
  };
  ASSERT_EQ(original.size(), size);
  ASSERT_GT(size, 200u);
  std::vector<std::string> damaged = {original.substr(0, size / 2), original.substr(0, 100),
                                      original, original};
  damaged[2][size / 3] ^= 0x40;
  damaged[3][size - 10] ^= 1;
  for (const std::string& bytes : damaged) {
    damage(bytes);
    auto store = MustOpen(dir, Options());
    const StoreStats stats = store->Stats();
    EXPECT_EQ(stats.loaded_from, "records");
    EXPECT_NE(stats.snapshot_skipped.find(fs::path(file).filename().string()), std::string::npos)
        << stats.snapshot_skipped;
    EXPECT_EQ(Answers(store.get(), corpus), before);
  }
  fs::remove(file);
  {
    auto store = MustOpen(dir, Options());
    EXPECT_EQ(store->Stats().loaded_from, "records");
    EXPECT_FALSE(store->Stats().snapshot_skipped.empty());
    EXPECT_EQ(Answers(store.get(), corpus), before);
    // A new snapshot is taken although the cut is the same as the lost one's.
    ASSERT_TRUE(store->Snapshot().ok());
    EXPECT_EQ(SnapshotFiles(dir).size(), 1u);
  }
  auto store = MustOpen(dir, Options());
  EXPECT_EQ(store->Stats().loaded_from, "snapshot");
  EXPECT_EQ(Answers(store.get(), corpus), before);
}

// Files a crash left (a snapshot's temporary file, an older snapshot) are removed at open.
TEST_P(SnapshotTest, LeftoversAreRemovedAtOpen) {
  const std::string dir = temp_.Path("store");
  {
    auto store = MustOpen(dir, Options());
    ASSERT_TRUE(store->Insert("a", "one two three four five six seven").ok());
    ASSERT_TRUE(store->Snapshot().ok());
  }
  const auto kept = SnapshotFiles(dir);
  temp_.File("store/snapshot-0-0.ndx", "old");
  temp_.File("store/snapshot-9-0.ndx.tmp-abcdef", "half written");
  auto store = MustOpen(dir, Options());
  EXPECT_EQ(store->Stats().loaded_from, "snapshot");
  EXPECT_EQ(SnapshotFiles(dir), kept);
}

// Snapshots taken while writers insert and remove: every acknowledged write is there after a
// reopen, which loads the last snapshot.
TEST_P(SnapshotTest, SnapshotsWhileWritersRun) {
  const std::string dir = temp_.Path("store");
  const Corpus corpus(400, 8);
  std::atomic<bool> stop{false};
  std::vector<std::string> before;
  {
    StoreOptions options = Options();
    auto store = MustOpen(dir, options);
    std::vector<std::thread> writers;
    std::vector<std::string> ids;
    for (size_t i = 0; i < corpus.size(); ++i) ids.push_back(corpus.id(i));
    for (size_t w = 0; w < 4; ++w) {
      writers.emplace_back([&, w] {
        for (size_t i = w; i < ids.size(); i += 4) {
          const Status inserted = store->Insert(ids[i], corpus.text(i));
          EXPECT_TRUE(inserted.ok()) << inserted.ToString();
          if (i % 9 == 0) {
            EXPECT_TRUE(store->Remove(ids[i]).ok()) << ids[i];
          }
        }
      });
    }
    int snapshots = 0;
    std::thread snapshotter([&] {
      while (!stop) {
        ASSERT_TRUE(store->Snapshot().ok());
        ++snapshots;
      }
    });
    for (auto& writer : writers) writer.join();
    stop = true;
    snapshotter.join();
    EXPECT_GT(snapshots, 0);
    ASSERT_TRUE(store->Remove(corpus.id(1)).ok());  // after the last snapshot
    before = Answers(store.get(), corpus);
  }
  auto store = MustOpen(dir, Options());
  EXPECT_EQ(store->Stats().loaded_from, "snapshot");
  EXPECT_EQ(Answers(store.get(), corpus), before);
  store.reset();
  store = MustOpen(dir, Options(/*load_snapshot=*/false));
  EXPECT_EQ(Answers(store.get(), corpus), before);
}

// A checkpoint takes the snapshot along and opens from it.
TEST_P(SnapshotTest, CheckpointTakesTheSnapshot) {
  const std::string dir = temp_.Path("store");
  const Corpus corpus(60, 9);
  auto store = MustOpen(dir, Options());
  for (size_t i = 0; i < corpus.size(); ++i)
    ASSERT_TRUE(store->Insert(corpus.id(i), corpus.text(i)).ok());
  ASSERT_TRUE(store->Snapshot().ok());
  ASSERT_TRUE(store->Remove(corpus.id(0)).ok());
  ASSERT_TRUE(store->Checkpoint(temp_.Path("copy")).ok());
  auto copy = MustOpen(temp_.Path("copy"), Options());
  EXPECT_EQ(copy->Stats().loaded_from, "snapshot");
  EXPECT_EQ(Answers(copy.get(), corpus), Answers(store.get(), corpus));
}

std::string CaseName(const ::testing::TestParamInfo<Case>& param) {
  return std::string(DedupMethodName(param.param.method)) +
         (param.param.sketches_on_disk ? "_sketch_file" : "");
}

INSTANTIATE_TEST_SUITE_P(Methods, SnapshotTest,
                         ::testing::Values(Case{DedupMethod::kAccurate, false},
                                           Case{DedupMethod::kAccurate, true},
                                           Case{DedupMethod::kSimhash, false}),
                         CaseName);

// A snapshot that cannot be written (a full disk: here the file size limit, which the child process
// inherits) fails with IOError naming its file and changes nothing: no file is left, the store
// takes writes, and the next snapshot succeeds.
TEST(SnapshotFailureTest, AFailedWriteChangesNothing) {
  neardup::testing::TempDir temp;
  const std::string dir = temp.Path("store");
  const Corpus corpus(600, 12);
  auto store = MustOpen(dir, StoreOptions());
  for (size_t i = 0; i < corpus.size(); ++i)
    ASSERT_TRUE(store->Insert(std::to_string(i), corpus.text(i)).ok());
  std::signal(SIGXFSZ, SIG_IGN);
  rlimit saved{};
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &saved), 0);
  rlimit limited = saved;
  limited.rlim_cur = 32 << 10;
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &limited), 0);
  const Status failed = store->Snapshot();
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &saved), 0);
  EXPECT_EQ(failed.code(), Status::Code::kIOError) << failed.ToString();
  EXPECT_NE(failed.message().find("snapshot-600-0.ndx"), std::string::npos) << failed.message();
  for (const auto& entry : fs::directory_iterator(dir))
    EXPECT_FALSE(entry.path().filename().string().starts_with("snapshot-")) << entry.path();
  EXPECT_EQ(store->Stats().snapshot_time, 0);
  ASSERT_TRUE(store->Insert("after", "a document written after the failed snapshot").ok());
  ASSERT_TRUE(store->Snapshot().ok());
  store.reset();
  store = MustOpen(dir, StoreOptions());
  EXPECT_EQ(store->Stats().loaded_from, "snapshot");
  EXPECT_EQ(store->Stats().index.documents, corpus.size() + 1);
}

TEST(SnapshotDiskResidentTest, NotSupported) {
  neardup::testing::TempDir temp;
  StoreOptions options;
  MethodOptions method;
  method.method = DedupMethod::kSimhash;
  options.method = method;
  options.disk_resident = true;
  auto store = MustOpen(temp.Path("store"), options);
  ASSERT_TRUE(store->Insert("a", "one two three four five").ok());
  EXPECT_EQ(store->Snapshot().code(), Status::Code::kNotSupported);
  EXPECT_EQ(store->Stats().loaded_from, "disk");
}

}  // namespace
}  // namespace neardup
