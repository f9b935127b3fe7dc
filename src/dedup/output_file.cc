#include "dedup/output_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace neardup::dedup_internal {
namespace {

constexpr size_t kAlignment = 4096;  // covers the logical block size of the devices O_DIRECT meets

char* NewBlock() {
  return static_cast<char*>(std::aligned_alloc(kAlignment, OutputFile::kBlockBytes));
}

}  // namespace

void OutputFile::Block::operator()(char* p) const { std::free(p); }

OutputFile::~OutputFile() {
  if (fd_ >= 0) {
    WaitPending();
    ::close(fd_);
    if (!standard_output_) std::remove(temp_path_.c_str());
  }
}

Status OutputFile::Open(const std::string& path) {
  path_ = path;
  standard_output_ = path == "-";
  if (standard_output_) {
    fd_ = ::dup(STDOUT_FILENO);
    if (fd_ < 0) return Status::IOError(std::string("standard output: ") + std::strerror(errno));
  } else {
    temp_path_ = path + ".tmp-XXXXXX";
    fd_ = ::mkstemp(temp_path_.data());
    if (fd_ < 0) return Status::IOError(path + ": cannot create: " + std::strerror(errno));
    // mkstemp creates the file private; an output gets the permissions of any new file.
    const mode_t mask = ::umask(0);
    ::umask(mask);
    ::fchmod(fd_, 0666 & ~mask);
  }
  current_.reset(NewBlock());
  spare_.reset(NewBlock());
  if (current_ == nullptr || spare_ == nullptr) {
    ::close(fd_);
    fd_ = -1;
    if (!standard_output_) std::remove(temp_path_.c_str());
    return Status::ResourceExhausted(path + ": cannot allocate the output buffers");
  }
#ifdef O_DIRECT
  if (!standard_output_) {
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
  pending_ = std::async(std::launch::async, [this, data, size] { return WriteAll(data, size); });
}

void OutputFile::Write(std::string_view data) {
  if (!staging_.empty()) DrainStaging();  // what was staged comes first
  Append(data);
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
  Append(staging_);
  staging_.clear();
}

Status OutputFile::Commit() {
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
  // Standard output may be a pipe or a terminal: nothing to sync there.
  if (ok && ::fsync(fd_) != 0 && !(standard_output_ && (errno == EINVAL || errno == EROFS))) {
    ok = false;
    error_ = errno;
  }
  if (::close(fd_) != 0 && ok) {
    ok = false;
    error_ = errno;
  }
  fd_ = -1;
  if (standard_output_) {
    if (!ok) return Status::IOError(std::string("standard output: write failed: ") + std::strerror(error_ != 0 ? error_ : EIO));
    return Status::OK();
  }
  if (ok && std::rename(temp_path_.c_str(), path_.c_str()) != 0) {
    ok = false;
    error_ = errno;
  }
  if (!ok) {
    std::remove(temp_path_.c_str());
    return Status::IOError(path_ + ": write failed: " + std::strerror(error_ != 0 ? error_ : EIO));
  }
  return Status::OK();
}

}  // namespace neardup::dedup_internal
