#include "online/sketch_arena.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "util/pod_array.h"

namespace neardup::online_internal {

namespace {

// An unlinked file in `directory`: O_TMPFILE where the file system has it, else a named file
// removed at once. -1 with errno set on failure.
int OpenScratchFile(const std::string& directory) {
#if defined(O_TMPFILE)
  const int fd = ::open(directory.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd >= 0 || (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL)) return fd;
#endif
  std::string name = directory + "/.neardup-sketches-XXXXXX";
  const int named = ::mkstemp(name.data());
  if (named < 0) return -1;
  ::unlink(name.c_str());
  ::fcntl(named, F_SETFD, FD_CLOEXEC);
  return named;
}

}  // namespace

Result<std::unique_ptr<SketchArena>> SketchArena::Create(size_t sketch_bytes,
                                                         const std::string& directory) {
  int fd = -1;
  if (!directory.empty()) {
    fd = OpenScratchFile(directory);
    if (fd < 0) {
      return Status::IOError(directory + ": cannot make the sketch file: " + std::strerror(errno));
    }
  }
  return std::unique_ptr<SketchArena>(new SketchArena(sketch_bytes, fd, directory));
}

SketchArena::SketchArena(size_t sketch_bytes, int fd, std::string directory)
    : sketch_bytes_(sketch_bytes), fd_(fd), directory_(std::move(directory)) {
  if (fd_ >= 0) buffer_ = std::make_unique_for_overwrite<uint8_t[]>(kBufferRows * sketch_bytes_);
}

SketchArena::~SketchArena() {
  if (fd_ >= 0) ::close(fd_);
}

Status SketchArena::WriteAt(const uint8_t* data, size_t size, uint64_t at) {
  auto offset = static_cast<off_t>(at);
  while (size > 0) {
    const ssize_t n = ::pwrite(fd_, data, size, offset);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      return Status::IOError(directory_ + ": cannot write the sketch file: " +
                             (n < 0 ? std::strerror(errno) : "no progress"));
    }
    data += n;
    size -= static_cast<size_t>(n);
    offset += n;
  }
  return Status::OK();
}

Status SketchArena::Flush() {
  NEARDUP_RETURN_IF_ERROR(WriteAt(buffer_.get(), (buffer_end_ - buffer_first_) * sketch_bytes_,
                                  buffer_first_ * sketch_bytes_));
  file_bytes_ = std::max<uint64_t>(file_bytes_, buffer_end_ * sketch_bytes_);
  buffer_first_ = buffer_end_;
  return Status::OK();
}

Status SketchArena::Append(uint32_t row, const uint8_t* sketch) {
  if (fd_ < 0) {
    while (chunks_.size() <= row / kChunkRows) {
      chunks_.push_back(std::make_unique_for_overwrite<uint8_t[]>(kChunkRows * sketch_bytes_));
      util_internal::PrefaultForWrite(chunks_.back().get(), kChunkRows * sketch_bytes_);
    }
    std::memcpy(chunks_[row / kChunkRows].get() + (row % kChunkRows) * sketch_bytes_, sketch,
                sketch_bytes_);
    return Status::OK();
  }
  if (buffer_end_ > buffer_first_ && row >= buffer_first_ + kBufferRows) {
    // A failed write leaves the buffer as it was (its rows stay readable): the row is refused.
    NEARDUP_RETURN_IF_ERROR(Flush());
  }
  if (buffer_end_ == buffer_first_) buffer_first_ = buffer_end_ = row;
  std::memcpy(buffer_.get() + (row - buffer_first_) * sketch_bytes_, sketch, sketch_bytes_);
  buffer_end_ = uint64_t{row} + 1;
  return Status::OK();
}

const uint8_t* SketchArena::Read(uint32_t row, uint8_t* scratch, Status* error) const {
  if (fd_ < 0) return chunks_[row / kChunkRows].get() + (row % kChunkRows) * sketch_bytes_;
  if (row >= buffer_first_ && row < buffer_end_)
    return buffer_.get() + (row - buffer_first_) * sketch_bytes_;
  size_t done = 0;
  const auto offset = static_cast<off_t>(uint64_t{row} * sketch_bytes_);
  while (done < sketch_bytes_) {
    const ssize_t n =
        ::pread(fd_, scratch + done, sketch_bytes_ - done, offset + static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      *error = Status::IOError(directory_ + ": cannot read the sketch file: " +
                               (n < 0 ? std::strerror(errno) : "short file"));
      return nullptr;
    }
    done += static_cast<size_t>(n);
  }
  return scratch;
}

const uint8_t* SketchArena::ReadBlock(uint64_t first, size_t count, uint8_t* scratch,
                                      Status* error) const {
  if (fd_ < 0) {
    if (first / kChunkRows < chunks_.size())
      return chunks_[first / kChunkRows].get() + (first % kChunkRows) * sketch_bytes_;
    return scratch;  // rows past every sketch: none of them has one
  }
  // The file holds the rows below file_bytes_ (but those still in the buffer, which may be newer);
  // the buffer the rest; rows in neither have no sketch.
  const uint64_t begin = first * sketch_bytes_;
  const uint64_t end = std::min<uint64_t>((first + count) * sketch_bytes_, file_bytes_);
  for (uint64_t done = begin; done < end;) {
    const ssize_t n = ::pread(fd_, scratch + (done - begin), end - done, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      *error = Status::IOError(directory_ + ": cannot read the sketch file: " +
                               (n < 0 ? std::strerror(errno) : "short file"));
      return nullptr;
    }
    done += static_cast<uint64_t>(n);
  }
  const uint64_t from = std::max(first, buffer_first_);
  const uint64_t to = std::min(first + count, buffer_end_);
  if (from < to) {
    std::memcpy(scratch + (from - first) * sketch_bytes_,
                buffer_.get() + (from - buffer_first_) * sketch_bytes_,
                (to - from) * sketch_bytes_);
  }
  return scratch;
}

std::vector<std::span<uint8_t>> SketchArena::AllocateRows(uint64_t rows) {
  std::vector<std::span<uint8_t>> spans;
  for (uint64_t first = 0; first < rows; first += kChunkRows) {
    // The part to be filled is mapped at once; the rest of the last chunk as later rows come.
    const size_t bytes = std::min<uint64_t>(kChunkRows, rows - first) * sketch_bytes_;
    chunks_.push_back(std::make_unique_for_overwrite<uint8_t[]>(kChunkRows * sketch_bytes_));
    util_internal::PrefaultForWrite(chunks_.back().get(), bytes);
    spans.emplace_back(chunks_.back().get(), bytes);
  }
  return spans;
}

Status SketchArena::WriteRestored(uint64_t offset, std::span<const uint8_t> bytes) {
  NEARDUP_RETURN_IF_ERROR(WriteAt(bytes.data(), bytes.size(), offset));
  file_bytes_ = std::max<uint64_t>(file_bytes_, offset + bytes.size());
  return Status::OK();
}

size_t SketchArena::memory_bytes() const {
  return chunks_.size() * kChunkRows * sketch_bytes_ +
         (buffer_ != nullptr ? kBufferRows * sketch_bytes_ : 0);
}

}  // namespace neardup::online_internal
