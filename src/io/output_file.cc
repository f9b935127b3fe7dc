// OutputFile: temporary file and rename for regular files, in-place writes for devices, FIFOs and
// standard output; every write checked.
#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <vector>

#include "io/output_paths.h"
#include "neardup/output.h"
#include "util/file_lock.h"

namespace neardup {
namespace {

constexpr size_t kAlignment = 4096;  // covers the logical block size of the devices O_DIRECT meets
constexpr const char* kBrokenPipe = ": closed by its reader (broken pipe)";

char* NewBlock() {
  return static_cast<char*>(std::aligned_alloc(kAlignment, OutputFile::kBlockBytes));
}

// Temporary files of open outputs, for RemoveTemporaryOutputs (a signal handler reads this table:
// it holds plain pointers, set and cleared atomically).
constexpr int kTempSlots = 256;
std::atomic<char*> temp_paths[kTempSlots];

int RegisterTemp(const std::string& path) {
  char* copy = ::strdup(path.c_str());
  if (copy == nullptr) return -1;
  for (int i = 0; i < kTempSlots; ++i) {
    char* expected = nullptr;
    if (temp_paths[i].compare_exchange_strong(expected, copy)) return i;
  }
  std::free(copy);  // more open outputs than slots: that one is not removed on a signal
  return -1;
}

void UnregisterTemp(int* slot) {
  if (*slot < 0) return;
  std::free(temp_paths[*slot].exchange(nullptr));
  *slot = -1;
}

// Removes the temporary files `TARGET.tmp-XXXXXX` beside `target` whose writer is gone: an output
// holds an flock on its temporary file while it is open, and the kernel releases it when the
// process ends however it ends (kill -9, the out-of-memory killer, a crash), the only ways one is
// left. Only regular files of this user with exactly that name are looked at.
void RemoveStaleTemporaries(const std::string& target) {
  const std::string folder = output_internal::FolderOf(target);
  const size_t slash = target.rfind('/');
  const std::string prefix =
      (slash == std::string::npos ? target : target.substr(slash + 1)) + ".tmp-";
  std::vector<std::string> names;
  if (DIR* d = ::opendir(folder.c_str())) {
    while (const dirent* entry = ::readdir(d)) {
      const std::string_view name(entry->d_name);
      if (name.size() != prefix.size() + 6 || !name.starts_with(prefix)) continue;
      if (std::all_of(name.begin() + static_cast<std::ptrdiff_t>(prefix.size()), name.end(),
                      [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; })) {
        names.emplace_back(name);
      }
    }
    ::closedir(d);
  }
  for (const std::string& name : names) {
    const std::string path = folder + "/" + name;
    const int fd = util::LockIfAbandoned(path);
    if (fd < 0) continue;
    ::unlink(path.c_str());
    ::close(fd);
  }
}

// Errors that fsync gives for what cannot be synced (pipes, terminals, some devices): not failures.
bool NothingToSync(int error) { return error == EINVAL || error == EROFS || error == ENOTSUP; }

}  // namespace

void OutputFile::Block::operator()(char* p) const { std::free(p); }

OutputFile::~OutputFile() { Discard(); }

Status OutputFile::Open(const std::string& path, bool keep_in_cache) {
  if (fd_ >= 0 || !temp_path_.empty()) return Status::FailedPrecondition(path_ + ": already open");
  path_ = path;
  finished_ = failed_ = direct_ = false;
  error_ = 0;
  fill_ = 0;
  staging_.clear();
  if (path == "-") {
    kind_ = Kind::kStandardOutput;
    target_ = path;
    fd_ = ::fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
    if (fd_ < 0) return Status::IOError(std::string("standard output: ") + std::strerror(errno));
    return Status::OK();
  }
  if (const int descriptor = output_internal::DescriptorOf(path); descriptor >= 0) {
    // An open descriptor of ours (/dev/stdout, /dev/fd/N): written in place, whatever it is.
    kind_ = Kind::kInPlace;
    target_ = path;
    if ((::fcntl(descriptor, F_GETFL) & O_ACCMODE) == O_RDONLY) {
      kind_ = Kind::kClosed;
      return Status::InvalidArgument(path + ": descriptor " + std::to_string(descriptor) +
                                     " is open for reading only");
    }
    fd_ = ::fcntl(descriptor, F_DUPFD_CLOEXEC, 3);
    if (fd_ < 0) return Status::IOError(path + ": " + std::strerror(errno));
    return Status::OK();
  }
  // stat follows every link, the kernel's own (/proc/PID/fd/N of another process) included.
  struct stat st;
  const bool exists = ::stat(path.c_str(), &st) == 0;
  if (!exists && errno != ENOENT) return Status::IOError(path + ": " + std::strerror(errno));
  if (exists && !S_ISREG(st.st_mode)) {
    NEARDUP_RETURN_IF_ERROR(output_internal::CheckWritableKind(path, st.st_mode));
    // A device, FIFO or socket is written where it is (opening a FIFO waits for its reader).
    kind_ = Kind::kInPlace;
    target_ = path;
    auto fd = output_internal::OpenInPlace(path, st.st_mode);
    if (!fd.ok()) return fd.status();
    fd_ = *fd;
    return Status::OK();
  }
  auto target = output_internal::ReplacedPath(path, exists);
  if (!target.ok()) return target.status();
  target_ = std::move(*target);
  kind_ = Kind::kFile;
  RemoveStaleTemporaries(target_);
  temp_path_ = target_ + ".tmp-XXXXXX";
  fd_ = ::mkstemp(temp_path_.data());
  if (fd_ < 0) {
    temp_path_.clear();
    kind_ = Kind::kClosed;
    return Status::IOError(path + ": cannot create: " + std::strerror(errno));
  }
  ::flock(fd_, LOCK_EX | LOCK_NB);  // not held on a file system without locks: then never removed
  temp_slot_ = RegisterTemp(temp_path_);
  // mkstemp creates the file private: a replaced file keeps its permissions, a new one gets those
  // of any new file.
  mode_t mode = 0;
  if (exists) {
    mode = st.st_mode & 07777;
  } else {
    const mode_t mask = ::umask(0);
    ::umask(mask);
    mode = 0666 & ~mask;
  }
  ::fchmod(fd_, mode);
  current_.reset(NewBlock());
  spare_.reset(NewBlock());
  if (current_ == nullptr || spare_ == nullptr) {
    Discard();
    return Status::ResourceExhausted(path + ": cannot allocate the output buffers");
  }
#ifdef O_DIRECT
  if (!keep_in_cache) {
    const int flags = ::fcntl(fd_, F_GETFL);
    direct_ = flags >= 0 && ::fcntl(fd_, F_SETFL, flags | O_DIRECT) == 0;
  }
#endif
  return Status::OK();
}

bool OutputFile::WriteAll(const char* data, size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(fd_, data, size);
    if (n < 0 && errno == EINTR) continue;
#ifdef O_DIRECT
    if (n < 0 && errno == EINVAL && direct_) {
      // The file system took O_DIRECT at open but refuses the write: go on through the cache.
      direct_ = false;
      const int flags = ::fcntl(fd_, F_GETFL);
      if (flags >= 0 && ::fcntl(fd_, F_SETFL, flags & ~O_DIRECT) == 0) continue;
    }
#endif
    if (n <= 0) {
      error_ = n < 0 ? errno : EIO;
      return false;
    }
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

bool OutputFile::WaitPending() {
  if (!pending_.valid()) return true;
  const bool ok = pending_.get();
  if (!ok) failed_ = true;
  return ok;
}

void OutputFile::SubmitBlock() {
  WaitPending();
  std::swap(current_, spare_);
  const char* data = spare_.get();
  const size_t size = fill_;
  fill_ = 0;
  if (failed_) return;
  if (no_threads_) {
    if (!WriteAll(data, size)) failed_ = true;
    return;
  }
  pending_ = std::async(std::launch::async, [this, data, size] { return WriteAll(data, size); });
}

void OutputFile::Write(std::string_view data) {
  if (kind_ == Kind::kFile) {
    if (!staging_.empty()) DrainStaging();  // what was staged comes first
    Append(data);
    return;
  }
  staging_.append(data);
  if (staging_.size() >= kStreamBytes) DrainStaging();
}

void OutputFile::Append(std::string_view data) {
  if (fd_ < 0) return;
  while (!data.empty()) {
    const size_t n = std::min(data.size(), kBlockBytes - fill_);
    std::memcpy(current_.get() + fill_, data.data(), n);
    fill_ += n;
    data.remove_prefix(n);
    if (fill_ == kBlockBytes) SubmitBlock();
  }
}

void OutputFile::DrainStaging() {
  if (kind_ == Kind::kFile) {
    Append(staging_);
  } else if (fd_ >= 0 && !failed_ && !WriteAll(staging_.data(), staging_.size())) {
    failed_ = true;  // streams: the error is seen at once, and nothing more is written
  }
  staging_.clear();
}

Status OutputFile::MaybeDrain() {
  if (staging_.size() >= (kind_ == Kind::kFile ? size_t{1} << 16 : kStreamBytes)) DrainStaging();
  return status();
}

Status OutputFile::Drain() {
  if (!staging_.empty()) DrainStaging();
  return status();
}

Status OutputFile::WriteError() const {
  const std::string name = path_ == "-" ? "standard output" : path_;
  if (error_ == EPIPE) return Status::IOError(name + kBrokenPipe);
  return Status::IOError(name + ": write failed: " + std::strerror(error_ != 0 ? error_ : EIO));
}

Status OutputFile::status() const { return failed_ ? WriteError() : Status::OK(); }

void OutputFile::Close() {
  if (fd_ < 0) return;
  WaitPending();
  ::close(fd_);
  fd_ = -1;
}

Status OutputFile::Finish() {
  if (finished_) return status();
  if (fd_ < 0) return Status::FailedPrecondition(path_ + ": not open");
  DrainStaging();
  bool ok = WaitPending() && !failed_;
  if (ok && fill_ > 0) {
    // The whole 4 KiB pages of the tail directly, the rest through the cache.
    const size_t whole = direct_ ? fill_ / kAlignment * kAlignment : 0;
    ok = WriteAll(current_.get(), whole);
#ifdef O_DIRECT
    if (ok && direct_ && whole < fill_) {
      const int flags = ::fcntl(fd_, F_GETFL);
      ok = flags >= 0 && ::fcntl(fd_, F_SETFL, flags & ~O_DIRECT) == 0;
      if (!ok) error_ = errno;
      direct_ = false;
    }
#endif
    ok = ok && WriteAll(current_.get() + whole, fill_ - whole);
    fill_ = 0;
  }
  // A device, FIFO or terminal has nothing to sync; standard output redirected to a file does.
  if (ok && ::fsync(fd_) != 0 && !(kind_ != Kind::kFile && NothingToSync(errno))) {
    ok = false;
    error_ = errno;
  }
  if (::close(fd_) != 0 && ok) {
    ok = false;
    error_ = errno;
  }
  fd_ = -1;
  current_.reset();
  spare_.reset();
  finished_ = true;
  if (!ok) {
    failed_ = true;
    Discard();
    return WriteError();
  }
  return Status::OK();
}

Status OutputFile::Rename() {
  if (kind_ != Kind::kFile || temp_path_.empty()) return Status::OK();
  if (std::rename(temp_path_.c_str(), target_.c_str()) != 0) {
    const int error = errno;
    Discard();
    return Status::IOError(
        path_ + ": cannot rename the finished output into place: " + std::strerror(error));
  }
  temp_path_.clear();
  UnregisterTemp(&temp_slot_);
  // The rename is durable once the folder is synced.
  const std::string folder = output_internal::FolderOf(target_);
  const int dir = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) return Status::IOError(folder + ": cannot open to sync: " + std::strerror(errno));
  const bool synced = ::fsync(dir) == 0 || NothingToSync(errno);
  const int error = errno;
  ::close(dir);
  if (!synced) return Status::IOError(folder + ": cannot sync: " + std::strerror(error));
  return Status::OK();
}

Status OutputFile::Commit() {
  NEARDUP_RETURN_IF_ERROR(Finish());
  Status renamed = Rename();
  kind_ = Kind::kClosed;
  return renamed;
}

void OutputFile::Discard() {
  Close();
  if (!temp_path_.empty()) {
    ::unlink(temp_path_.c_str());
    temp_path_.clear();
  }
  UnregisterTemp(&temp_slot_);
  staging_.clear();
  fill_ = 0;
}

bool IsBrokenPipe(const Status& status) {
  const std::string& m = status.message();
  const size_t n = std::strlen(kBrokenPipe);
  return status.code() == Status::Code::kIOError && m.size() >= n &&
         m.compare(m.size() - n, n, kBrokenPipe) == 0;
}

void RemoveTemporaryOutputs() noexcept {
  for (auto& slot : temp_paths) {
    const char* path = slot.load();
    if (path != nullptr) ::unlink(path);
  }
}

}  // namespace neardup
