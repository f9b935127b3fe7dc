#include "dedup/output_file.h"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace neardup::dedup_internal {

OutputFile::~OutputFile() {
  if (file_ != nullptr) {
    std::fclose(file_);
    std::remove(temp_path_.c_str());
  }
}

Status OutputFile::Open(const std::string& path) {
  path_ = path;
  temp_path_ = path + ".tmp-XXXXXX";
  int fd = ::mkstemp(temp_path_.data());
  if (fd < 0) return Status::IOError(path + ": cannot create: " + std::strerror(errno));
  file_ = ::fdopen(fd, "wb");
  if (file_ == nullptr) {
    ::close(fd);
    std::remove(temp_path_.c_str());
    return Status::IOError(path + ": cannot open: " + std::strerror(errno));
  }
  return Status::OK();
}

void OutputFile::Drain() {
  if (file_ == nullptr || buffer_.empty()) return;
  if (std::fwrite(buffer_.data(), 1, buffer_.size(), file_) != buffer_.size()) failed_ = true;
  buffer_.clear();
}

Status OutputFile::Commit() {
  if (file_ == nullptr) return Status::FailedPrecondition(path_ + ": not open");
  Drain();
  bool ok = !failed_ && std::fflush(file_) == 0 && ::fsync(::fileno(file_)) == 0;
  const int error = errno;
  ok = std::fclose(file_) == 0 && ok;
  file_ = nullptr;
  if (!ok || std::rename(temp_path_.c_str(), path_.c_str()) != 0) {
    std::remove(temp_path_.c_str());
    return Status::IOError(path_ + ": write failed: " + std::strerror(ok ? errno : error));
  }
  return Status::OK();
}

}  // namespace neardup::dedup_internal
