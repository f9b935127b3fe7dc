// The output layer: temporary file and rename for regular files, in-place writes for devices, FIFOs
// and links followed, write errors seen, and the outputs of one job checked and committed together.
#include "neardup/output.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include "testutil.h"

namespace neardup {
namespace {

namespace fs = std::filesystem;

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void WriteAndCheck(const std::string& dir, size_t size, bool no_threads = false) {
  const std::string path = dir + "/out.bin";
  std::string data(size, '\0');
  std::mt19937_64 rng(size);
  for (char& c : data) c = static_cast<char>('a' + rng() % 26);
  OutputFile out;
  if (no_threads) out.set_no_threads();
  ASSERT_TRUE(out.Open(path).ok());
  // Mixed writes: direct pieces and the formatted staging buffer.
  size_t at = 0;
  while (at < size) {
    const size_t piece = std::min<size_t>(size - at, 1 + rng() % 300000);
    if (rng() % 2) {
      out.Write(std::string_view(data).substr(at, piece));
    } else {
      out.buffer().append(data, at, piece);
      out.MaybeDrain();
    }
    at += piece;
  }
  EXPECT_FALSE(std::filesystem::exists(path));
  ASSERT_TRUE(out.Commit().ok());
  const std::string got = ReadAll(path);
  ASSERT_EQ(got.size(), data.size()) << dir;
  const auto diff = std::mismatch(got.begin(), got.end(), data.begin());
  EXPECT_TRUE(diff.first == got.end())
      << size << " bytes in " << dir << ": first difference at byte " << (diff.first - got.begin());
  EXPECT_EQ(std::filesystem::file_size(path), size);
  // Only the output is left: no temporary file.
  size_t files = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(dir)) ++files;
  EXPECT_EQ(files, 1u);
  std::filesystem::remove(path);
}

TEST(OutputFileTest, EverySizeAroundTheBlocksComesOutWhole) {
  testing::TempDir disk;
  std::vector<std::string> dirs = {disk.Path("")};
  // tmpfs refuses O_DIRECT: the same writes go through the page cache there.
  std::string shm;
  if (std::filesystem::is_directory("/dev/shm")) {
    char templ[] = "/dev/shm/neardup-test-XXXXXX";
    if (::mkdtemp(templ) != nullptr) dirs.push_back(shm = templ);
  }
  constexpr size_t kBlock = OutputFile::kBlockBytes;
  for (const auto& dir : dirs) {
    for (size_t size : {size_t{0}, size_t{1}, size_t{4095}, size_t{4096}, size_t{4097}, kBlock - 1,
                        kBlock, kBlock + 1, 3 * kBlock + 12345}) {
      WriteAndCheck(dir, size);
      WriteAndCheck(dir, size, /*no_threads=*/true);  // as a snapshot's forked writer does
    }
  }
  if (!shm.empty()) std::filesystem::remove_all(shm);
}

TEST(OutputFileTest, AbandonedOutputLeavesNothingAndKeepsTheOldFile) {
  testing::TempDir dir;
  const std::string path = dir.File("out.txt", "previous run\n");
  {
    OutputFile out;
    ASSERT_TRUE(out.Open(path).ok());
    out.Write(std::string(OutputFile::kBlockBytes + 100, 'x'));  // a block already written out
  }
  EXPECT_EQ(ReadAll(path), "previous run\n");
  size_t files = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(dir.Path("")))
    ++files;
  EXPECT_EQ(files, 1u);
  OutputFile missing;
  EXPECT_EQ(missing.Open(dir.Path("no/such/folder/out.txt")).code(), Status::Code::kIOError);
  EXPECT_EQ(missing.Commit().code(), Status::Code::kFailedPrecondition);
}

TEST(OutputFileTest, NewFilesGetTheUsualPermissions) {
  testing::TempDir dir;
  const mode_t old = ::umask(022);
  OutputFile out;
  ASSERT_TRUE(out.Open(dir.Path("out.txt")).ok());
  out.Write("x\n");
  ASSERT_TRUE(out.Commit().ok());
  ::umask(old);
  const auto perms = std::filesystem::status(dir.Path("out.txt")).permissions();
  EXPECT_EQ(perms, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write |
                       std::filesystem::perms::group_read | std::filesystem::perms::others_read);
}

// Every entry of a folder, sorted.
std::vector<std::string> Entries(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir))
    names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

// A character device node like the system's /dev/null (1, 3) or /dev/full (1, 7), made in a test
// folder: the tests never touch the system's own nodes. Empty when mknod is refused (not root).
std::string MakeDevice(const testing::TempDir& dir, const std::string& name, unsigned minor) {
  const std::string path = dir.Path(name);
  if (::mknod(path.c_str(), S_IFCHR | 0666, makedev(1, minor)) != 0) return "";
  return path;
}

// Tests with the device nodes null and full made in their folder (mknod is refused to all but
// root).
class DeviceNodeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    null_ = MakeDevice(dir_, "null", 3);
    full_ = MakeDevice(dir_, "full", 7);
    if (null_.empty() || full_.empty()) {
      ASSERT_NE(::geteuid(), 0u) << "mknod refused to root";
      GTEST_SKIP() << "not root: mknod is refused, so no device node to test with";
    }
  }
  const std::vector<std::string> kNodes = {"full", "null"};
  testing::TempDir dir_;
  std::string null_, full_;
};

TEST_F(DeviceNodeTest, CharacterDeviceIsWrittenInPlaceNeverReplaced) {
  const std::string& null = null_;
  OutputFile out;
  ASSERT_TRUE(out.Open(null).ok());
  EXPECT_EQ(out.kind(), OutputFile::Kind::kInPlace);
  out.Write(std::string(OutputFile::kStreamBytes * 3, 'x'));
  ASSERT_TRUE(out.Commit().ok());
  struct stat st;
  ASSERT_EQ(::lstat(null.c_str(), &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
  EXPECT_EQ(st.st_rdev, makedev(1, 3));
  EXPECT_EQ(Entries(dir_.Path("")), kNodes);
}

TEST_F(DeviceNodeTest, FullDeviceIsAnErrorNamingTheOutput) {
  const std::string& full = full_;
  OutputFile out;
  ASSERT_TRUE(out.Open(full).ok());
  out.Write("a line\n");
  const Status status = out.Commit();
  EXPECT_EQ(status.code(), Status::Code::kIOError);
  EXPECT_EQ(status.message(), full + ": write failed: No space left on device");
  EXPECT_FALSE(IsBrokenPipe(status));
  // A stream sees the error at the first write that reaches it.
  OutputFile again;
  ASSERT_TRUE(again.Open(full).ok());
  again.buffer().append(std::string(OutputFile::kStreamBytes, 'x'));
  EXPECT_EQ(again.MaybeDrain().code(), Status::Code::kIOError);
}

TEST(OutputFileTest, FifoIsWrittenInPlace) {
  testing::TempDir dir;
  const std::string fifo = dir.Path("fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::string received;
  std::thread reader([&] {
    std::ifstream in(fifo, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    received = s.str();
  });
  const std::string data(OutputFile::kStreamBytes * 2 + 17, 'f');
  {
    OutputFile out;
    ASSERT_TRUE(out.Open(fifo).ok());
    EXPECT_EQ(out.kind(), OutputFile::Kind::kInPlace);
    out.Write(data);
    EXPECT_TRUE(out.Commit().ok());
  }
  reader.join();
  EXPECT_EQ(received, data);
  struct stat st;
  ASSERT_EQ(::lstat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  EXPECT_EQ(Entries(dir.Path("")), std::vector<std::string>{"fifo"});
}

TEST(OutputFileTest, ClosedPipeIsABrokenPipe) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  ::close(fds[0]);
  struct sigaction ignore = {}, previous;
  ignore.sa_handler = SIG_IGN;
  ::sigaction(SIGPIPE, &ignore, &previous);
  const std::string path = "/dev/fd/" + std::to_string(fds[1]);
  OutputFile out;
  ASSERT_TRUE(out.Open(path).ok());
  EXPECT_EQ(out.kind(), OutputFile::Kind::kInPlace);
  out.Write("x");
  const Status status = out.Commit();
  ::sigaction(SIGPIPE, &previous, nullptr);
  ::close(fds[1]);
  EXPECT_TRUE(IsBrokenPipe(status)) << status.ToString();
}

TEST(OutputFileTest, SymlinkIsFollowedAndStays) {
  testing::TempDir dir;
  const std::string target = dir.File("target.txt", "old\n");
  const std::string link = dir.Path("link.txt");
  ASSERT_EQ(::symlink("target.txt", link.c_str()), 0);
  OutputFile out;
  ASSERT_TRUE(out.Open(link).ok());
  EXPECT_EQ(out.kind(), OutputFile::Kind::kFile);
  out.Write("new\n");
  EXPECT_EQ(ReadAll(target), "old\n");  // nothing visible before the commit
  ASSERT_TRUE(out.Commit().ok());
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_EQ(fs::read_symlink(link), "target.txt");
  EXPECT_EQ(ReadAll(target), "new\n");
  EXPECT_EQ(Entries(dir.Path("")), (std::vector<std::string>{"link.txt", "target.txt"}));

  // A dangling link: its target is created.
  const std::string dangling = dir.Path("dangling");
  ASSERT_EQ(::symlink("created.txt", dangling.c_str()), 0);
  OutputFile created;
  ASSERT_TRUE(created.Open(dangling).ok());
  created.Write("made\n");
  ASSERT_TRUE(created.Commit().ok());
  EXPECT_TRUE(fs::is_symlink(dangling));
  EXPECT_EQ(ReadAll(dir.Path("created.txt")), "made\n");
}

TEST(OutputFileTest, ReplacedFileKeepsItsPermissions) {
  testing::TempDir dir;
  const std::string path = dir.File("out.txt", "old\n");
  ASSERT_EQ(::chmod(path.c_str(), 0640), 0);
  OutputFile out;
  ASSERT_TRUE(out.Open(path).ok());
  out.Write("new\n");
  ASSERT_TRUE(out.Commit().ok());
  EXPECT_EQ(fs::status(path).permissions(),
            fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
}

TEST(OutputFileTest, FoldersAndMissingFoldersAreRefused) {
  testing::TempDir dir;
  OutputFile out;
  const Status folder = out.Open(dir.Path(""));
  EXPECT_EQ(folder.code(), Status::Code::kInvalidArgument);
  EXPECT_NE(folder.message().find("is a folder"), std::string::npos) << folder.message();
  EXPECT_EQ(Entries(dir.Path("")), std::vector<std::string>{});
}

TEST(OutputFileTest, SignalCleanupRemovesTemporaryFiles) {
  testing::TempDir dir;
  OutputFile out;
  ASSERT_TRUE(out.Open(dir.Path("out.txt")).ok());
  out.Write("partial");
  ASSERT_EQ(Entries(dir.Path("")).size(), 1u);  // the temporary file
  RemoveTemporaryOutputs();
  EXPECT_EQ(Entries(dir.Path("")), std::vector<std::string>{});
}

// A writer killed with SIGKILL (nothing of it runs after) leaves its temporary file: the next
// output to the same target removes it once the writer is gone, and only then; nothing else is
// touched.
TEST(OutputFileTest, TemporaryFilesOfKilledWritersAreRemoved) {
  testing::TempDir dir;
  testing::TempDir outside;
  const std::string path = dir.Path("out.txt");
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    OutputFile out;
    if (!out.Open(path).ok()) std::_Exit(1);
    out.Write(std::string(OutputFile::kBlockBytes + 100, 'x'));
    if (::write(ready[1], "x", 1) != 1) std::_Exit(1);
    for (;;) ::pause();
  }
  ::close(ready[1]);
  char byte = 0;
  ASSERT_EQ(::read(ready[0], &byte, 1), 1);
  ::close(ready[0]);
  const std::vector<std::string> killed = Entries(dir.Path(""));
  ASSERT_EQ(killed.size(), 1u);
  ASSERT_TRUE(killed[0].starts_with("out.txt.tmp-"));

  // Left alone: a live writer's file, other names and targets, links, folders, a file whose lock
  // another process holds.
  std::ofstream(dir.Path("out.txt.tmp-abc12")) << "short name";
  std::ofstream(dir.Path("out.txt.tmp-abc_12")) << "not mkstemp's";
  std::ofstream(dir.Path("other.txt.tmp-abc123")) << "another target's";
  std::ofstream(outside.Path("target")) << "not ours";
  fs::create_symlink(outside.Path("target"), dir.Path("out.txt.tmp-link12"));
  fs::create_directory(dir.Path("out.txt.tmp-dir123"));
  std::ofstream(dir.Path("out.txt.tmp-held12")) << "locked";
  const int held = ::open(dir.Path("out.txt.tmp-held12").c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(held, 0);
  ASSERT_EQ(::flock(held, LOCK_EX), 0);
  // A file of a writer gone some other way: a free lock.
  std::ofstream(dir.Path("out.txt.tmp-gone12")) << "left";

  {
    OutputFile second;
    ASSERT_TRUE(second.Open(path).ok());
    second.Write("second\n");
    const std::vector<std::string> during = Entries(dir.Path(""));
    EXPECT_EQ(std::count(during.begin(), during.end(), killed[0]), 1) << "its writer is alive";
    EXPECT_EQ(std::count(during.begin(), during.end(), "out.txt.tmp-gone12"), 0);
    ASSERT_TRUE(second.Commit().ok());
  }
  ::kill(child, SIGKILL);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  OutputFile third;
  ASSERT_TRUE(third.Open(path).ok());
  third.Write("third\n");
  ASSERT_TRUE(third.Commit().ok());
  ::close(held);
  EXPECT_EQ(ReadAll(path), "third\n");
  EXPECT_EQ(Entries(dir.Path("")),
            (std::vector<std::string>{"other.txt.tmp-abc123", "out.txt", "out.txt.tmp-abc12",
                                      "out.txt.tmp-abc_12", "out.txt.tmp-dir123",
                                      "out.txt.tmp-held12", "out.txt.tmp-link12"}));
  EXPECT_EQ(ReadAll(outside.Path("target")), "not ours");
}

// Writes beyond a file-size limit fail with EFBIG: a full disk, for one process, without mounting.
class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t bytes) {
    struct sigaction ignore = {};
    ignore.sa_handler = SIG_IGN;
    ::sigaction(SIGXFSZ, &ignore, &previous_signal_);
    ::getrlimit(RLIMIT_FSIZE, &previous_);
    struct rlimit limit = previous_;
    limit.rlim_cur = bytes;
    ::setrlimit(RLIMIT_FSIZE, &limit);
  }
  ~FileSizeLimit() {
    ::setrlimit(RLIMIT_FSIZE, &previous_);
    ::sigaction(SIGXFSZ, &previous_signal_, nullptr);
  }

 private:
  struct rlimit previous_;
  struct sigaction previous_signal_;
};

TEST(OutputSetTest, ACommitIsAllOrNothing) {
  testing::TempDir dir;
  const std::string small = dir.File("small.txt", "old small\n");
  const std::string large = dir.File("large.txt", "old large\n");
  {
    OutputSet set;
    auto a = set.Add(small, "small");
    auto b = set.Add(large, "large");
    ASSERT_TRUE(a.ok() && b.ok());
    ASSERT_TRUE(set.OpenAll().ok());
    // The limit comes first: the output layer may write a full block while Write() returns, on a
    // thread of its own, so a limit set after the writes would miss the blocks already written.
    FileSizeLimit limit(OutputFile::kBlockBytes);
    (*a)->Write("new small\n");
    (*b)->Write(std::string(3 * OutputFile::kBlockBytes, 'L'));  // over the limit
    const Status status = set.CommitAll();
    EXPECT_EQ(status.code(), Status::Code::kIOError);
    EXPECT_NE(status.message().find("large.txt: write failed: File too large"), std::string::npos)
        << status.message();
  }
  EXPECT_EQ(ReadAll(small), "old small\n");
  EXPECT_EQ(ReadAll(large), "old large\n");
  EXPECT_EQ(Entries(dir.Path("")), (std::vector<std::string>{"large.txt", "small.txt"}));

  OutputSet set;
  auto a = set.Add(small, "small");
  auto b = set.Add(dir.Path("new.txt"), "new");
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_TRUE(set.OpenAll().ok());
  (*a)->Write("new small\n");
  (*b)->Write("new file\n");
  ASSERT_TRUE(set.CommitAll().ok());
  EXPECT_EQ(ReadAll(small), "new small\n");
  EXPECT_EQ(ReadAll(dir.Path("new.txt")), "new file\n");
  EXPECT_EQ(Entries(dir.Path("")), (std::vector<std::string>{"large.txt", "new.txt", "small.txt"}));
}

TEST(OutputSetTest, TwoOutputsNamingOneFileAreRefused) {
  testing::TempDir dir;
  const std::string file = dir.File("out.txt", "x");
  ASSERT_EQ(::link(file.c_str(), dir.Path("hard.txt").c_str()), 0);
  ASSERT_EQ(::symlink("out.txt", dir.Path("soft.txt").c_str()), 0);
  fs::create_directory(dir.Path("sub"));
  for (const std::string& other :
       {file, dir.Path("hard.txt"), dir.Path("soft.txt"), dir.Path("sub/../out.txt")}) {
    OutputSet set;
    ASSERT_TRUE(set.Add(file, "first").ok());
    auto second = set.Add(other, "second");
    ASSERT_FALSE(second.ok()) << other;
    EXPECT_EQ(second.status().message(), "second " + other + " and first " + file +
                                             " name the same file: give each output its own file");
  }
  // A new name, twice.
  OutputSet set;
  ASSERT_TRUE(set.Add(dir.Path("new.txt"), "first").ok());
  EXPECT_FALSE(set.Add(dir.Path("sub/../new.txt"), "second").ok());
  EXPECT_TRUE(set.Add(dir.Path("sub/new.txt"), "third").ok());
  EXPECT_EQ(Entries(dir.Path("")),
            (std::vector<std::string>{"hard.txt", "out.txt", "soft.txt", "sub"}));
}

TEST(OutputSetTest, AnOutputNamingAnInputIsRefused) {
  testing::TempDir dir;
  const std::string input = dir.File("in.txt", "data\n");
  fs::create_directory(dir.Path("corpus"));
  const std::string inside = dir.File("corpus/part.txt", "data\n");
  ASSERT_EQ(::symlink("in.txt", dir.Path("link.txt").c_str()), 0);
  {
    OutputSet set;
    ASSERT_TRUE(set.Add(dir.Path("link.txt"), "--save-index").ok());
    const Status status = set.CheckNotInputs({"-", dir.Path("missing"), input});
    EXPECT_EQ(status.message(), "--save-index " + dir.Path("link.txt") + " is also an input (" +
                                    input + "): refusing to overwrite an input");
  }
  {
    OutputSet set;
    ASSERT_TRUE(set.Add(inside, "-o").ok());
    EXPECT_EQ(set.CheckNotInputs({dir.Path("corpus")}).code(), Status::Code::kInvalidArgument);
  }
  OutputSet set;
  ASSERT_TRUE(set.Add(dir.Path("corpus/new.txt"), "-o").ok());
  EXPECT_TRUE(set.CheckNotInputs({dir.Path("corpus"), input}).ok());
  EXPECT_EQ(ReadAll(input), "data\n");
}

TEST_F(DeviceNodeTest, DeviceNodesMayTakeSeveralOutputs) {
  const std::string& null = null_;
  OutputSet set;
  ASSERT_TRUE(set.Add(null, "a").ok());
  ASSERT_TRUE(set.Add(null, "b").ok());
  EXPECT_FALSE(set.Add(null, "c", /*regular_only=*/true).ok());
  ASSERT_TRUE(set.OpenAll().ok());
  ASSERT_TRUE(set.CommitAll().ok());
  EXPECT_EQ(Entries(dir_.Path("")), kNodes);
}

}  // namespace
}  // namespace neardup
