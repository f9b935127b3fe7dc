#include "dedup/spill.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace neardup::dedup_internal {
namespace {

constexpr size_t kAlignment = 4096;             // O_DIRECT's block size on the devices met
constexpr size_t kBandBufferKeys = 256 * 1024;  // 1 MiB of keys per band
constexpr size_t kSketchBufferBytes = 4 << 20;  // sketches are written 4 MiB at a time
constexpr size_t kReadChunkBytes = 4 << 20;     // band files are read 4 MiB at a time

std::string BandPath(const std::string& dir, size_t band) {
  return dir + "/band-" + std::to_string(band);
}
std::string SketchPath(const std::string& dir) { return dir + "/sketches"; }

// write() until every byte is written. 0 or errno.
int WriteAll(int fd, const void* data, size_t size) {
  const auto* p = static_cast<const uint8_t*>(data);
  while (size > 0) {
    const ssize_t n = ::write(fd, p, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    if (n == 0) return ENOSPC;
    p += n;
    size -= static_cast<size_t>(n);
  }
  return 0;
}

// Opens for writing, with O_DIRECT when the file system takes it. -1 with errno set on failure.
int OpenForWrite(const std::string& path, bool try_direct, bool* direct) {
  constexpr int kFlags = O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC;
  if (try_direct) {
    const int fd = ::open(path.c_str(), kFlags | O_DIRECT, 0600);
    if (fd >= 0) {
      *direct = true;
      return fd;
    }
  }
  *direct = false;
  return ::open(path.c_str(), kFlags, 0600);
}

std::string ErrorText(int error) { return std::strerror(error); }

}  // namespace

Result<std::unique_ptr<SpillWriter>> SpillWriter::Create(const std::string& dir,
                                                         size_t sketch_bytes, size_t bands) {
  std::unique_ptr<SpillWriter> w(new SpillWriter());
  w->dir_ = dir;
  w->sketch_bytes_ = sketch_bytes;
  w->bands_ = bands;
  bool direct = false;
  w->sketch_fd_ = OpenForWrite(SketchPath(dir), false, &direct);
  if (w->sketch_fd_ < 0) return w->WriteError("sketches", errno);
  w->sketch_buffer_.reserve(kSketchBufferBytes + sketch_bytes);
  w->band_files_.resize(bands);
  for (size_t j = 0; j < bands; ++j) {
    BandFile& f = w->band_files_[j];
    f.fd = OpenForWrite(BandPath(dir, j), true, &f.direct);
    if (f.fd < 0) return w->WriteError("band-" + std::to_string(j), errno);
    f.buffer = static_cast<uint32_t*>(std::aligned_alloc(kAlignment, kBandBufferKeys * 4));
    if (f.buffer == nullptr) return Status::ResourceExhausted("no memory for the band buffers");
  }
  return w;
}

SpillWriter::~SpillWriter() {
  if (sketch_fd_ >= 0) ::close(sketch_fd_);
  for (BandFile& f : band_files_) {
    if (f.fd >= 0) ::close(f.fd);
    std::free(f.buffer);
  }
}

uint64_t SpillWriter::bytes() const {
  uint64_t total = sketch_file_bytes_ + sketch_buffer_.size();
  for (const BandFile& f : band_files_) total += f.written + f.used * 4;
  return total;
}

Status SpillWriter::WriteError(const std::string& file, int error) const {
  return Status::IOError("temporary file " + dir_ + "/" + file + ": " + ErrorText(error) +
                         " (the default method keeps its signatures there while it runs; "
                         "--tmp-dir puts them on another disk)");
}

Status SpillWriter::FlushSketches() {
  if (sketch_buffer_.empty()) return Status::OK();
  if (const int error = WriteAll(sketch_fd_, sketch_buffer_.data(), sketch_buffer_.size())) {
    return WriteError("sketches", error);
  }
  sketch_file_bytes_ += sketch_buffer_.size();
  sketch_buffer_.clear();
  return Status::OK();
}

Status SpillWriter::FlushBand(size_t band, bool last) {
  BandFile& f = band_files_[band];
  if (f.used == 0) return Status::OK();
  const size_t bytes = f.used * 4;
  // O_DIRECT writes whole aligned blocks: the last one is padded, and the file cut back after.
  const size_t write_bytes = f.direct ? (bytes + kAlignment - 1) / kAlignment * kAlignment : bytes;
  std::memset(reinterpret_cast<uint8_t*>(f.buffer) + bytes, 0, write_bytes - bytes);
  if (const int error = WriteAll(f.fd, f.buffer, write_bytes)) {
    return WriteError("band-" + std::to_string(band), error);
  }
  f.written += bytes;
  f.used = 0;
  if (last && write_bytes != bytes && ::ftruncate(f.fd, static_cast<off_t>(f.written)) != 0) {
    return WriteError("band-" + std::to_string(band), errno);
  }
  return Status::OK();
}

Status SpillWriter::Append(const uint8_t* sketch, const uint32_t* band_keys) {
  sketch_buffer_.insert(sketch_buffer_.end(), sketch, sketch + sketch_bytes_);
  if (sketch_buffer_.size() >= kSketchBufferBytes) NEARDUP_RETURN_IF_ERROR(FlushSketches());
  for (size_t j = 0; j < bands_; ++j) {
    BandFile& f = band_files_[j];
    f.buffer[f.used++] = band_keys[j];
    if (f.used == kBandBufferKeys) NEARDUP_RETURN_IF_ERROR(FlushBand(j, false));
  }
  ++documents_;
  return Status::OK();
}

Status SpillWriter::Finish() {
  NEARDUP_RETURN_IF_ERROR(FlushSketches());
  for (size_t j = 0; j < bands_; ++j) NEARDUP_RETURN_IF_ERROR(FlushBand(j, true));
  if (::close(sketch_fd_) != 0) {
    sketch_fd_ = -1;
    return WriteError("sketches", errno);
  }
  sketch_fd_ = -1;
  for (size_t j = 0; j < bands_; ++j) {
    const int fd = band_files_[j].fd;
    band_files_[j].fd = -1;
    if (::close(fd) != 0) return WriteError("band-" + std::to_string(j), errno);
  }
  return Status::OK();
}

Status BandKeyFiles::ForEachChunk(
    size_t band, uint64_t begin, uint64_t end,
    const std::function<Status(uint64_t, std::span<const uint32_t>)>& fn) const {
  if (band >= bands_) {
    return Status::InvalidArgument("band " + std::to_string(band) + " of " +
                                   std::to_string(bands_) + " spilled");
  }
  const std::string path = BandPath(dir_, band);
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_DIRECT);
  if (fd < 0) fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::IOError("temporary file " + path + ": " + ErrorText(errno));
  auto* buffer = static_cast<uint32_t*>(std::aligned_alloc(kAlignment, kReadChunkBytes));
  Status status;
  if (buffer == nullptr) status = Status::ResourceExhausted("no memory to read " + path);
  if (begin % kBandKeyAlignment != 0 || end > documents_) {
    status = Status::Internal("band keys read out of range");
  }
  uint64_t document = begin;
  while (status.ok() && document < end) {
    const size_t want = std::min<uint64_t>(kReadChunkBytes / 4, end - document) * 4;
    // A whole number of aligned blocks (the file's end makes the read short).
    const size_t request = (want + kAlignment - 1) / kAlignment * kAlignment;
    size_t got = 0;
    while (got < want) {
      const ssize_t n = ::pread(fd, reinterpret_cast<uint8_t*>(buffer) + got, request - got,
                                static_cast<off_t>(document * 4 + got));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        status = Status::IOError("temporary file " + path + ": " + ErrorText(errno));
        break;
      }
      if (n == 0) {
        status = Status::IOError("temporary file " + path + " is shorter than written");
        break;
      }
      got += static_cast<size_t>(n);
    }
    if (!status.ok()) break;
    const size_t keys = want / 4;
    status = fn(document, std::span<const uint32_t>(buffer, keys));
    document += keys;
  }
  std::free(buffer);
  ::close(fd);
  return status;
}

Result<std::unique_ptr<SketchFile>> SketchFile::Open(const std::string& dir, size_t sketch_bytes,
                                                     uint64_t documents) {
  std::unique_ptr<SketchFile> file(new SketchFile());
  file->sketch_bytes_ = sketch_bytes;
  file->mapped_bytes_ = documents * sketch_bytes;
  if (file->mapped_bytes_ == 0) return file;
  const std::string path = SketchPath(dir);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::IOError("temporary file " + path + ": " + ErrorText(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || static_cast<uint64_t>(st.st_size) < file->mapped_bytes_) {
    ::close(fd);
    return Status::IOError("temporary file " + path + " is shorter than written");
  }
  void* base = ::mmap(nullptr, file->mapped_bytes_, PROT_READ, MAP_SHARED, fd, 0);
  const int error = errno;
  if (base == MAP_FAILED) {
    ::close(fd);
    return Status::IOError("cannot map " + path + ": " + ErrorText(error));
  }
  file->fd_ = fd;
  file->base_ = static_cast<const uint8_t*>(base);
  return file;
}

void SketchFile::ReadRange(uint64_t first, uint64_t count, uint8_t* out) const {
  const uint64_t bytes = count * sketch_bytes_;
  uint64_t done = 0;
  while (done < bytes) {
    const ssize_t n =
        ::pread(fd_, out + done, bytes - done, static_cast<off_t>(first * sketch_bytes_ + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      // The mapping has the same bytes (a file that cannot be read fails there too).
      std::memcpy(out + done, At(first) + done, bytes - done);
      return;
    }
    done += static_cast<uint64_t>(n);
  }
}

void SketchFile::Release(uint64_t begin, uint64_t end) const {
  static const auto page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  const uint64_t first = begin * sketch_bytes_ / page * page;
  const uint64_t last = std::min<uint64_t>(end * sketch_bytes_, mapped_bytes_);
  if (base_ == nullptr || last <= first) return;
  // Advice: a failure leaves the pages mapped, which only costs memory.
  ::madvise(const_cast<uint8_t*>(base_) + first, last - first, MADV_DONTNEED);
}

SketchFile::~SketchFile() {
  if (base_ != nullptr) ::munmap(const_cast<uint8_t*>(base_), mapped_bytes_);
  if (fd_ >= 0) ::close(fd_);
}

ForwardSketches::ForwardSketches(const SketchFile& file, size_t sketch_bytes, uint64_t documents)
    : file_(file), bytes_(sketch_bytes), documents_(documents), buffer_(kBlock * sketch_bytes) {}

const uint8_t* ForwardSketches::Of(uint64_t d) {
  if (d < begin_ || d >= end_) {
    begin_ = d;
    end_ = std::min(documents_, d + kBlock);
    file_.ReadRange(begin_, end_ - begin_, buffer_.data());
  }
  return buffer_.data() + (d - begin_) * bytes_;
}

KeptSketches::KeptSketches(const SketchFile& file, const std::vector<uint32_t>& first_member,
                           size_t sketch_bytes, std::vector<uint64_t> needed)
    : file_(file), first_member_(first_member), bytes_(sketch_bytes), needed_(std::move(needed)) {}

Status KeptSketches::Load(uint64_t budget, const std::function<Status()>& check) {
  uint64_t count = 0;
  ranks_.resize(needed_.size());
  for (size_t w = 0; w < needed_.size(); ++w) {
    ranks_[w] = count;
    count += static_cast<uint64_t>(std::popcount(needed_[w]));
  }
  if (count > 0 && count * bytes_ <= budget) {
    held_.resize(count * bytes_);
    const uint64_t documents = first_member_.empty() ? 0 : uint64_t{first_member_.back()} + 1;
    ForwardSketches forward(file_, bytes_, documents);
    uint64_t rank = 0;
    for (size_t w = 0; w < needed_.size(); ++w) {
      for (uint64_t bits = needed_[w]; bits != 0; bits &= bits - 1) {
        if ((rank & 0xFFFF) == 0) NEARDUP_RETURN_IF_ERROR(check());
        const size_t group = 64 * w + static_cast<size_t>(std::countr_zero(bits));
        std::memcpy(held_.data() + rank++ * bytes_, forward.Of(first_member_[group]), bytes_);
      }
    }
    return Status::OK();
  }
  std::vector<uint64_t>().swap(needed_);
  std::vector<uint64_t>().swap(ranks_);
  groups_.assign(kSlots, UINT32_MAX);
  sketches_.resize(kSlots * bytes_);
  return Status::OK();
}

const uint8_t* KeptSketches::Of(uint32_t group) {
  if (!held_.empty()) {
    const uint64_t below = needed_[group / 64] & ((uint64_t{1} << (group % 64)) - 1);
    return held_.data() +
           (ranks_[group / 64] + static_cast<uint64_t>(std::popcount(below))) * bytes_;
  }
  const size_t slot = group % kSlots;
  uint8_t* sketch = sketches_.data() + slot * bytes_;
  if (groups_[slot] != group) {
    file_.Read(first_member_[group], sketch);
    groups_[slot] = group;
  }
  return sketch;
}

}  // namespace neardup::dedup_internal
