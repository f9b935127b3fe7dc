// The spill files against the values written: every band key and sketch read back, over whole and
// partial ranges, with O_DIRECT and on tmpfs; write errors (a file size limit) that name the folder
// and --tmp-dir; files cut short after they were written. The job's temporary folder: removed with
// its object, and by a later job once its process is gone (killed), and nothing else.
#include "dedup/spill.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <thread>
#include <vector>

#include "dedup/scratch_dir.h"
#include "testutil.h"

namespace neardup::dedup_internal {
namespace {

uint64_t Mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// The values written: pseudo-random functions of the document (and band, and byte).
uint32_t KeyOf(uint64_t document, size_t band) {
  return static_cast<uint32_t>(Mix(document * 64 + band) >> 16);
}

void SketchOf(uint64_t document, size_t sketch_bytes, uint8_t* out) {
  for (size_t i = 0; i < sketch_bytes; i += 8) {
    const uint64_t word = Mix((document << 12) + i + (uint64_t{1} << 60));
    std::memcpy(out + i, &word, std::min<size_t>(8, sketch_bytes - i));
  }
}

struct Shape {
  uint64_t documents;
  size_t bands;
  size_t sketch_bytes;
};

// Appends the documents of `shape` to a new writer in `dir` and finishes it.
Status WriteAll(const std::string& dir, const Shape& shape) {
  auto writer = SpillWriter::Create(dir, shape.sketch_bytes, shape.bands);
  if (!writer.ok()) return writer.status();
  std::vector<uint8_t> sketch(shape.sketch_bytes);
  std::vector<uint32_t> keys(shape.bands);
  for (uint64_t d = 0; d < shape.documents; ++d) {
    SketchOf(d, shape.sketch_bytes, sketch.data());
    for (size_t j = 0; j < shape.bands; ++j) keys[j] = KeyOf(d, j);
    NEARDUP_RETURN_IF_ERROR((*writer)->Append(sketch.data(), keys.data()));
  }
  const uint64_t total = shape.documents * (shape.sketch_bytes + 4 * shape.bands);
  EXPECT_EQ((*writer)->bytes(), total);
  EXPECT_EQ((*writer)->documents(), shape.documents);
  NEARDUP_RETURN_IF_ERROR((*writer)->Finish());
  EXPECT_EQ((*writer)->bytes(), total);
  EXPECT_EQ((*writer)->dir(), dir);
  return Status::OK();
}

// Reads band `band` of [begin, end) and checks every chunk: consecutive, the keys written, ending
// at `end`. An empty string when all is well, else the first discrepancy.
std::string CheckBand(const BandKeyFiles& files, size_t band, uint64_t begin, uint64_t end) {
  uint64_t next = begin;
  std::string error;
  const Status status =
      files.ForEachChunk(band, begin, end, [&](uint64_t first, std::span<const uint32_t> keys) {
        if (first != next && error.empty()) {
          error = "chunk at " + std::to_string(first) + ", expected " + std::to_string(next);
        }
        for (size_t i = 0; i < keys.size() && error.empty(); ++i) {
          if (keys[i] != KeyOf(first + i, band)) {
            error = "key of document " + std::to_string(first + i) + " differs";
          }
        }
        next = first + keys.size();
        return Status::OK();
      });
  if (!status.ok()) return status.ToString();
  if (error.empty() && next != end) {
    error = "read up to " + std::to_string(next) + " instead of " + std::to_string(end);
  }
  return error.empty() ? error
                       : "band " + std::to_string(band) + " [" + std::to_string(begin) + ", " +
                             std::to_string(end) + "): " + error;
}

// Whether this process has `path` open with O_DIRECT (from /proc/self/fdinfo), if it has it open.
std::optional<bool> OpenWithDirect(const std::string& path) {
  std::error_code ignored;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd", ignored)) {
    if (std::filesystem::read_symlink(entry.path(), ignored) != path) continue;
    std::ifstream info("/proc/self/fdinfo/" + entry.path().filename().string());
    std::string field;
    while (info >> field) {
      if (field == "flags:") {
        std::string octal;
        info >> octal;
        return (std::stoul(octal, nullptr, 8) & O_DIRECT) != 0;
      }
    }
  }
  return std::nullopt;
}

// Writes `shape` to `dir`, then reads every band over the whole range and over aligned partial
// ranges (on two threads at once), and every sketch.
void RoundTrip(const std::string& dir, const Shape& shape) {
  {
    auto probe = SpillWriter::Create(dir, shape.sketch_bytes, shape.bands);
    ASSERT_TRUE(probe.ok()) << probe.status().ToString();
    const std::optional<bool> direct = OpenWithDirect(dir + "/band-0");
    ASSERT_TRUE(direct.has_value());
    std::printf("%s: band files with O_DIRECT: %s\n", dir.c_str(), *direct ? "yes" : "no");
    ::testing::Test::RecordProperty("o_direct", *direct ? "yes" : "no");
  }
  ASSERT_TRUE(WriteAll(dir, shape).ok());
  const uint64_t n = shape.documents;
  for (size_t j = 0; j < shape.bands; ++j) {
    EXPECT_EQ(std::filesystem::file_size(dir + "/band-" + std::to_string(j)), 4 * n);
  }
  EXPECT_EQ(std::filesystem::file_size(dir + "/sketches"), n * shape.sketch_bytes);

  const BandKeyFiles files(dir, shape.bands, n);
  const uint64_t last_block = n / kBandKeyAlignment * kBandKeyAlignment;
  const std::vector<std::pair<uint64_t, uint64_t>> ranges = {
      {0, n},
      {37 * kBandKeyAlignment, n - 5},
      {last_block, n},
      {kBandKeyAlignment, 3000},
      {1024, 1024},
      {0, 1},
      // Across the reads of 4 MiB (1Mi keys), when there are that many documents.
      {std::min(last_block, (uint64_t{1} << 20) - 2048), std::min(n, (uint64_t{1} << 21) + 3)}};
  std::vector<std::string> errors(shape.bands);
  auto check_bands = [&](size_t from) {
    for (size_t j = from; j < shape.bands; j += 2) {
      for (const auto& [begin, end] : ranges) {
        if (errors[j].empty()) errors[j] = CheckBand(files, j, begin, end);
      }
    }
  };
  std::thread other(check_bands, 1);
  check_bands(0);
  other.join();
  for (const std::string& error : errors) EXPECT_EQ(error, "");

  auto sketches = SketchFile::Open(dir, shape.sketch_bytes, n);
  ASSERT_TRUE(sketches.ok()) << sketches.status().ToString();
  std::vector<uint8_t> expected(shape.sketch_bytes);
  std::vector<uint8_t> read(shape.sketch_bytes);
  uint64_t differing = 0, differing_read = 0;
  for (uint64_t d = 0; d < n; ++d) {
    SketchOf(d, shape.sketch_bytes, expected.data());
    differing += std::memcmp((*sketches)->At(d), expected.data(), shape.sketch_bytes) != 0;
    (*sketches)->Read(d, read.data());
    differing_read += read != expected;
  }
  EXPECT_EQ(differing, 0u);
  EXPECT_EQ(differing_read, 0u);
  // Ranges of documents, up to the last one.
  uint64_t differing_ranges = 0;
  for (const uint64_t count : {uint64_t{1}, uint64_t{3}, uint64_t{8192}}) {
    if (count > n) continue;
    std::vector<uint8_t> range(count * shape.sketch_bytes);
    for (uint64_t first : {uint64_t{0}, n / 3, n - count}) {
      (*sketches)->ReadRange(first, count, range.data());
      for (uint64_t d = first; d < first + count; ++d) {
        SketchOf(d, shape.sketch_bytes, expected.data());
        differing_ranges += std::memcmp(range.data() + (d - first) * shape.sketch_bytes,
                                        expected.data(), shape.sketch_bytes) != 0;
      }
    }
  }
  EXPECT_EQ(differing_ranges, 0u);
}

// The resident kilobytes of this process's mapping of `path` (from /proc/self/smaps), if mapped.
std::optional<uint64_t> ResidentKilobytes(const std::string& path) {
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool in_mapping = false;
  while (std::getline(smaps, line)) {
    if (line.size() >= path.size() &&
        line.compare(line.size() - path.size(), path.size(), path) == 0) {
      in_mapping = true;
    } else if (in_mapping && line.rfind("Rss:", 0) == 0) {
      return std::stoull(line.substr(4));
    }
  }
  return std::nullopt;
}

// 300001 documents: neither a multiple of the read alignment (1024) nor of the band buffer (256Ki).
constexpr Shape kDefaultShape{300001, 20, 132};

TEST(SpillTest, RoundTrip) {
  testing::TempDir dir;
  RoundTrip(dir.path(), kDefaultShape);
}

TEST(SpillTest, RoundTripAcrossReadChunks) {
  // Over 2Mi documents: band files read in several chunks of 1Mi keys, sketches in 4 MiB buffers.
  testing::TempDir dir;
  RoundTrip(dir.path(), {(uint64_t{2} << 20) + 4097, 2, 12});
}

TEST(SpillTest, RoundTripOnTmpfs) {
  std::string templ = "/dev/shm/neardup-spill-test-XXXXXX";
  if (::mkdtemp(templ.data()) == nullptr) GTEST_SKIP() << "no writable /dev/shm";
  RoundTrip(templ, testing::Sanitized() ? Shape{100001, 20, 132} : kDefaultShape);
  std::error_code ignored;
  std::filesystem::remove_all(templ, ignored);
}

// In a child process: appends `documents` documents of `shape` under a file size limit of `limit`
// bytes (SIGXFSZ ignored: write() fails with EFBIG), then finishes, and prints the first error.
// Exits with 0 when there was one, an IOError from Append (in_append) or Finish naming the file in
// `dir` and --tmp-dir.
[[noreturn]] void WriteUnderSizeLimit(const std::string& dir, const Shape& shape, rlim_t limit,
                                      const std::string& file, bool in_append) {
  std::signal(SIGXFSZ, SIG_IGN);
  rlimit limits{};
  ::getrlimit(RLIMIT_FSIZE, &limits);
  limits.rlim_cur = limit;
  if (::setrlimit(RLIMIT_FSIZE, &limits) != 0) std::_Exit(2);
  auto writer = SpillWriter::Create(dir, shape.sketch_bytes, shape.bands);
  if (!writer.ok()) std::_Exit(3);
  std::vector<uint8_t> sketch(shape.sketch_bytes);
  std::vector<uint32_t> keys(shape.bands);
  Status status;
  bool from_append = false;
  for (uint64_t d = 0; d < shape.documents && status.ok(); ++d) {
    SketchOf(d, shape.sketch_bytes, sketch.data());
    for (size_t j = 0; j < shape.bands; ++j) keys[j] = KeyOf(d, j);
    status = (*writer)->Append(sketch.data(), keys.data());
    from_append = !status.ok();
  }
  if (status.ok()) status = (*writer)->Finish();
  writer->reset();
  std::fprintf(stderr, "%s\n", status.ToString().c_str());
  const std::string& message = status.message();
  const bool named = message.find(dir + "/" + file + ":") != std::string::npos &&
                     message.find("--tmp-dir") != std::string::npos;
  std::_Exit(status.code() == Status::Code::kIOError && named && from_append == in_append ? 0 : 1);
}

// Pages read through the mapping are resident until released; Read maps none; the bytes stay.
TEST(SpillTest, ReleasedSketchPagesLeaveTheResidentSet) {
  testing::TempDir dir;
  const Shape shape{100000, 1, 132};  // 13.2 MB of sketches
  ASSERT_TRUE(WriteAll(dir.path(), shape).ok());
  auto sketches = SketchFile::Open(dir.path(), shape.sketch_bytes, shape.documents);
  ASSERT_TRUE(sketches.ok()) << sketches.status().ToString();
  const std::string path = dir.path() + "/sketches";
  const auto resident = [&] { return ResidentKilobytes(path).value_or(~uint64_t{0}); };
  std::vector<uint8_t> sketch(shape.sketch_bytes), expected(shape.sketch_bytes);
  for (uint64_t d = 0; d < shape.documents; d += 7) (*sketches)->Read(d, sketch.data());
  EXPECT_EQ(resident(), 0u);
  uint64_t sum = 0;
  for (uint64_t d = 0; d < shape.documents; ++d) sum += (*sketches)->At(d)[5];
  const uint64_t full = resident();
  EXPECT_GE(full, 12000u) << sum;  // all of it
  (*sketches)->Release(0, shape.documents / 2);
  EXPECT_LE(resident(), full / 2 + 8);  // the second half's (a page shared at the middle)
  EXPECT_GT(resident(), 0u);
  (*sketches)->Release(shape.documents / 2, shape.documents);
  EXPECT_EQ(resident(), 0u);
  uint64_t differing = 0;
  for (uint64_t d = 0; d < shape.documents; d += 13) {
    SketchOf(d, shape.sketch_bytes, expected.data());
    differing += std::memcmp((*sketches)->At(d), expected.data(), shape.sketch_bytes) != 0;
  }
  EXPECT_EQ(differing, 0u);
  (*sketches)->Release(0, 0);                                   // nothing
  (*sketches)->Release(shape.documents, shape.documents + 10);  // past the end: nothing
}

// ForwardSketches and KeptSketches give the sketches written, asked in order, out of order, and
// (KeptSketches) held or through its cache, groups that share a cache slot included.
TEST(SpillTest, ForwardAndKeptSketchesReadTheSketchesWritten) {
  testing::TempDir dir;
  const Shape shape{40000, 1, 132};
  ASSERT_TRUE(WriteAll(dir.path(), shape).ok());
  auto file = SketchFile::Open(dir.path(), shape.sketch_bytes, shape.documents);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  std::vector<uint8_t> expected(shape.sketch_bytes);
  auto same = [&](uint64_t d, const uint8_t* got) {
    SketchOf(d, shape.sketch_bytes, expected.data());
    return std::memcmp(got, expected.data(), shape.sketch_bytes) == 0;
  };
  ForwardSketches forward(**file, shape.sketch_bytes, shape.documents);
  for (uint64_t d : {0, 1, 8191, 8192, 8193, 20000, 39999, 5, 39998, 12345}) {
    EXPECT_TRUE(same(d, forward.Of(d))) << d;
  }
  // Groups: every third document starts one; the needed ones, about one in five, include groups
  // 8,192 apart (one cache slot) and the last.
  std::vector<uint32_t> first_member;
  for (uint32_t d = 0; d < shape.documents; d += 3) first_member.push_back(d);
  const auto groups = static_cast<uint32_t>(first_member.size());
  std::vector<uint64_t> needed((groups + 63) / 64, 0);
  std::vector<uint32_t> asked;
  std::mt19937_64 rng(5);
  for (uint32_t g = 0; g < groups; ++g) {
    if (rng() % 5 == 0 || g == 7 || g == 7 + 8192 || g == groups - 1) {
      needed[g / 64] |= uint64_t{1} << (g % 64);
      asked.push_back(g);
    }
  }
  std::shuffle(asked.begin(), asked.end(), rng);
  asked.insert(asked.end(), {7, 7 + 8192, 7, groups - 1, 7 + 8192});
  for (const uint64_t budget : {uint64_t{1} << 30, uint64_t{1000}}) {
    KeptSketches kept(**file, first_member, shape.sketch_bytes, needed);
    ASSERT_TRUE(kept.Load(budget, [] { return Status::OK(); }).ok());
    EXPECT_EQ(kept.held(), budget > 1000);
    size_t wrong = 0;
    for (uint32_t g : asked) wrong += !same(first_member[g], kept.Of(g));
    EXPECT_EQ(wrong, 0u) << "budget " << budget;
  }
  // A check that fails (SIGINT heard) stops the reading with its error.
  KeptSketches cancelled(**file, first_member, shape.sketch_bytes, needed);
  int checks = 0;
  const Status status = cancelled.Load(uint64_t{1} << 30, [&] {
    ++checks;
    return Status::Cancelled("interrupted");
  });
  EXPECT_EQ(status.code(), Status::Code::kCancelled);
  EXPECT_EQ(checks, 1);
}

TEST(SpillTest, WriteErrorsNameTheFolderAndTmpDir) {
  testing::TempDir dir;
  // The sketches' first 4 MiB write is cut at 1 MiB.
  EXPECT_EXIT(WriteUnderSizeLimit(dir.path(), {200000, 20, 132}, (1 << 20) + 100, "sketches", true),
              ::testing::ExitedWithCode(0), "IO error: temporary file .*sketches: File too large");
  // Nothing written before Finish.
  EXPECT_EXIT(WriteUnderSizeLimit(dir.path(), {1000, 3, 132}, 4096, "sketches", false),
              ::testing::ExitedWithCode(0), "sketches: File too large.*--tmp-dir");
  // A band file's O_DIRECT write cut at the limit (sketches of one byte fit under it).
  EXPECT_EXIT(WriteUnderSizeLimit(dir.path(), {3000, 1, 1}, 4096, "band-0", false),
              ::testing::ExitedWithCode(0), "band-0: File too large.*--tmp-dir");
  // A band buffer's flush in Append (256Ki keys: 1 MiB) under a limit of 512 KiB.
  EXPECT_EXIT(WriteUnderSizeLimit(dir.path(), {300000, 1, 1}, 512 << 10, "band-0", true),
              ::testing::ExitedWithCode(0), "band-0: File too large");
}

TEST(SpillTest, ShortFilesAreErrors) {
  testing::TempDir dir;
  const Shape shape{5000, 3, 132};
  ASSERT_TRUE(WriteAll(dir.path(), shape).ok());
  const BandKeyFiles files(dir.path(), shape.bands, shape.documents);
  EXPECT_EQ(CheckBand(files, 0, 0, shape.documents), "");
  // Band 1 cut inside a block, band 2 at a block boundary (8192 bytes: 2048 keys).
  std::filesystem::resize_file(dir.Path("band-1"), 4 * (shape.documents - 100));
  std::filesystem::resize_file(dir.Path("band-2"), 8192);
  for (size_t band : {1, 2}) {
    SCOPED_TRACE(band);
    const Status status = files.ForEachChunk(
        band, 0, shape.documents, [](uint64_t, std::span<const uint32_t>) { return Status::OK(); });
    EXPECT_EQ(status.code(), Status::Code::kIOError);
    EXPECT_NE(status.message().find(dir.Path("band-" + std::to_string(band))), std::string::npos)
        << status.ToString();
  }
  EXPECT_NE(CheckBand(files, 2, 0, shape.documents).find("shorter than written"),
            std::string::npos);
  // What remains is read.
  EXPECT_EQ(CheckBand(files, 1, 0, 4096), "");
  EXPECT_EQ(CheckBand(files, 2, 1024, 2048), "");
  // fn's error stops the reading.
  int calls = 0;
  const Status stopped =
      files.ForEachChunk(0, 0, shape.documents, [&](uint64_t, std::span<const uint32_t>) {
        ++calls;
        return Status::Cancelled("stop");
      });
  EXPECT_EQ(stopped.code(), Status::Code::kCancelled);
  EXPECT_EQ(calls, 1);

  std::filesystem::resize_file(dir.Path("sketches"), (shape.documents - 1) * shape.sketch_bytes);
  auto short_sketches = SketchFile::Open(dir.path(), shape.sketch_bytes, shape.documents);
  ASSERT_FALSE(short_sketches.ok());
  EXPECT_EQ(short_sketches.status().code(), Status::Code::kIOError);
  EXPECT_NE(short_sketches.status().message().find("shorter than written"), std::string::npos);
  EXPECT_TRUE(SketchFile::Open(dir.path(), shape.sketch_bytes, shape.documents - 1).ok());

  const BandKeyFiles missing(dir.Path("gone"), 1, 10);
  EXPECT_EQ(missing.ForEachChunk(0, 0, 10, [](uint64_t, auto) { return Status::OK(); }).code(),
            Status::Code::kIOError);
  EXPECT_EQ(SketchFile::Open(dir.Path("gone"), 132, 10).status().code(), Status::Code::kIOError);
  EXPECT_EQ(SpillWriter::Create(dir.Path("gone"), 132, 2).status().code(), Status::Code::kIOError);
}

// --- The job's temporary folder (scratch_dir.h) ---

bool LockIsHeld(const std::string& folder) {
  const int fd = ::open((folder + "/lock").c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool held = ::flock(fd, LOCK_EX | LOCK_NB) != 0;
  ::close(fd);
  return held;
}

TEST(ScratchDirTest, HoldsItsLockAndIsRemovedWithTheObject) {
  testing::TempDir base;
  std::vector<std::string> reclaimed{"stale entry"};
  auto scratch = ScratchDir::Create(base.path(), &reclaimed);
  ASSERT_TRUE(scratch.ok()) << scratch.status().ToString();
  EXPECT_TRUE(reclaimed.empty());
  const std::string folder = (*scratch)->path();
  EXPECT_EQ(std::filesystem::path(folder).parent_path(), std::filesystem::path(base.path()));
  EXPECT_TRUE(LockIsHeld(folder));
  EXPECT_FALSE(std::filesystem::exists(folder + "/lock.new"));
  // A cleaner leaves a folder whose job is alive.
  EXPECT_TRUE(ReclaimStaleScratchDirs(base.path()).empty());
  EXPECT_TRUE(std::filesystem::exists(folder));
  scratch->reset();
  EXPECT_FALSE(std::filesystem::exists(folder));
  EXPECT_EQ(ScratchDir::Create(base.Path("missing"), &reclaimed).status().code(),
            Status::Code::kIOError);
}

// A job killed with SIGKILL (nothing of it runs after) leaves its folder; it is removed once its
// process is gone, and only then; nothing else in the folder's parent is touched.
TEST(ScratchDirTest, RemovesTheFoldersOfKilledJobsOnly) {
  testing::TempDir base;
  testing::TempDir outside;
  namespace fs = std::filesystem;
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    std::vector<std::string> ignored;
    auto scratch = ScratchDir::Create(base.path(), &ignored);
    if (!scratch.ok()) std::_Exit(1);
    std::ofstream((*scratch)->path() + "/sketches", std::ios::binary) << std::string(3 << 20, 'x');
    const std::string& path = (*scratch)->path();
    if (::write(ready[1], path.data(), path.size()) != static_cast<ssize_t>(path.size())) {
      std::_Exit(1);
    }
    ::close(ready[1]);
    for (;;) ::pause();
  }
  ::close(ready[1]);
  std::string killed_folder(4096, '\0');
  const ssize_t got = ::read(ready[0], killed_folder.data(), killed_folder.size());
  ::close(ready[0]);
  ASSERT_GT(got, 0);
  killed_folder.resize(static_cast<size_t>(got));

  // What must stay: a live job's folder, folders without a lock file (an older version's, or a job
  // killed before it locked), a lock that is a link or a folder, other names, a link to a folder
  // whose job is gone, a plain file.
  std::vector<std::string> reclaimed;
  auto live = ScratchDir::Create(base.path(), &reclaimed);
  ASSERT_TRUE(live.ok());
  EXPECT_TRUE(reclaimed.empty()) << "the child's job is alive";
  auto make = [&](const std::string& name, const std::string& lock) {
    fs::create_directory(base.Path(name));
    if (!lock.empty()) std::ofstream(base.Path(name) + "/" + lock) << "";
    return base.Path(name);
  };
  const std::vector<std::string> kept = {
      make("neardup-NoLock", ""),     make("neardup-new123", "lock.new"),
      make("neardup-abc12", "lock"),  make("neardup-abc1234", "lock"),
      make("neardup-ab_123", "lock"), make("neardup_abc123", "lock"),
      make("neardup-link12", ""),     make("neardup-dir123", ""),
  };
  fs::create_symlink(outside.Path("target"), base.Path("neardup-link12") + "/lock");
  std::ofstream(outside.Path("target")) << "not ours";
  fs::create_directory(base.Path("neardup-dir123") + "/lock");
  fs::create_directory(outside.Path("neardup-gone01"));
  std::ofstream(outside.Path("neardup-gone01") + "/lock") << "";
  fs::create_directory_symlink(outside.Path("neardup-gone01"), base.Path("neardup-symlnk"));
  std::ofstream(base.Path("neardup-file01")) << "a file";
  // One more folder whose job is gone: a free lock file (its process ended).
  const std::string gone = make("neardup-gone02", "lock");

  reclaimed = ReclaimStaleScratchDirs(base.path());
  EXPECT_EQ(reclaimed, std::vector<std::string>{gone + " (0 bytes)"});
  EXPECT_TRUE(fs::exists(killed_folder + "/sketches")) << "its job is alive";

  ::kill(child, SIGKILL);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_TRUE(fs::exists(killed_folder + "/sketches"));
  auto next = ScratchDir::Create(base.path(), &reclaimed);
  ASSERT_TRUE(next.ok());
  EXPECT_EQ(reclaimed, std::vector<std::string>{killed_folder + " (3.0 MB)"});
  EXPECT_FALSE(fs::exists(killed_folder));

  EXPECT_TRUE(fs::exists((*live)->path() + "/lock"));
  EXPECT_TRUE(fs::exists((*next)->path() + "/lock"));
  for (const std::string& folder : kept) EXPECT_TRUE(fs::is_directory(folder)) << folder;
  EXPECT_TRUE(fs::exists(outside.Path("neardup-gone01") + "/lock"));
  EXPECT_TRUE(fs::is_symlink(base.Path("neardup-symlnk")));
  EXPECT_TRUE(fs::is_regular_file(base.Path("neardup-file01")));
  EXPECT_TRUE(fs::exists(outside.Path("target")));
}

}  // namespace
}  // namespace neardup::dedup_internal
