#include "dedup/scratch_dir.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>

#include "neardup/format.h"
#include "util/file_lock.h"

namespace neardup::dedup_internal {
namespace {

constexpr char kPrefix[] = "neardup-";
constexpr size_t kPrefixSize = sizeof(kPrefix) - 1;
constexpr char kLockName[] = "lock";

// What mkdtemp makes of "neardup-XXXXXX": the prefix and six letters or digits.
bool IsScratchName(const char* name) {
  if (std::strncmp(name, kPrefix, kPrefixSize) != 0) return false;
  const char* tail = name + kPrefixSize;
  for (int i = 0; i < 6; ++i) {
    const char c = tail[i];
    const bool alnum = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    if (!alnum) return false;
  }
  return tail[6] == '\0';
}

// The bytes of the regular files under `dir` (what removing it frees), not following links.
uint64_t TreeBytes(const std::filesystem::path& dir) {
  uint64_t bytes = 0;
  std::error_code error;
  for (std::filesystem::recursive_directory_iterator it(dir, error), end; !error && it != end;
       it.increment(error)) {
    struct stat st;
    if (::lstat(it->path().c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
      bytes += static_cast<uint64_t>(st.st_blocks) * 512;
    }
  }
  return bytes;
}

// Removes `dir` if its job is gone; its description for the caller, or "" when it was left.
std::string ReclaimIfStale(const std::string& dir) {
  struct stat st;
  if (::lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::geteuid()) {
    return "";
  }
  // The lock is free only once its job has ended: the job holds it from before the file has this
  // name (Create) until its folder is gone.
  const int fd = util::LockIfAbandoned(dir + "/" + kLockName);
  if (fd < 0) return "";
  std::string removed;
  const uint64_t bytes = TreeBytes(dir);
  std::error_code error;
  std::filesystem::remove_all(dir, error);
  if (!error) removed = dir + " (" + ByteSize(bytes) + ")";
  ::close(fd);
  return removed;
}

}  // namespace

std::vector<std::string> ReclaimStaleScratchDirs(const std::string& base) {
  std::vector<std::string> names;
  if (DIR* d = ::opendir(base.c_str())) {
    while (const dirent* entry = ::readdir(d)) {
      if (IsScratchName(entry->d_name)) names.emplace_back(entry->d_name);
    }
    ::closedir(d);
  }
  std::vector<std::string> removed;
  for (const std::string& name : names) {
    std::string what = ReclaimIfStale((std::filesystem::path(base) / name).string());
    if (!what.empty()) removed.push_back(std::move(what));
  }
  return removed;
}

Result<std::unique_ptr<ScratchDir>> ScratchDir::Create(const std::string& parent,
                                                       std::vector<std::string>* reclaimed) {
  std::error_code error;
  const std::filesystem::path base =
      parent.empty() ? std::filesystem::temp_directory_path(error) : std::filesystem::path(parent);
  *reclaimed = ReclaimStaleScratchDirs(base.string());
  std::string templ = (base / (std::string(kPrefix) + "XXXXXX")).string();
  if (::mkdtemp(templ.data()) == nullptr) {
    return Status::IOError("cannot create a temporary folder in " + base.string() + ": " +
                           std::strerror(errno) + " (--tmp-dir chooses where)");
  }
  // The lock is taken under another name and then renamed: a cleaner never sees a lock file whose
  // job has not locked it yet.
  const std::string unlocked = templ + "/lock.new";
  int fd = ::open(unlocked.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) {
    const int open_errno = errno;
    std::filesystem::remove_all(templ, error);
    return Status::IOError("cannot create a file in the temporary folder " + templ + ": " +
                           std::strerror(open_errno) + " (--tmp-dir chooses where)");
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0 ||
      ::rename(unlocked.c_str(), (templ + "/" + kLockName).c_str()) != 0) {
    // A file system without locks: the folder works, but no later job can tell that it is left.
    ::close(fd);
    fd = -1;
  }
  return std::unique_ptr<ScratchDir>(new ScratchDir(std::move(templ), fd));
}

ScratchDir::~ScratchDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
  if (lock_fd_ >= 0) ::close(lock_fd_);  // only now: the folder is gone
}

}  // namespace neardup::dedup_internal
