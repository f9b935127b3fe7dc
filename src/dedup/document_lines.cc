#include "dedup/document_lines.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace neardup::dedup_internal {

std::string_view DocumentLine::text() const {
  const std::string_view line = StripLineEnd(raw);
  return line_number == 1 ? StripByteOrderMark(line) : line;
}

DocumentLines::DocumentLines(const std::vector<InputFile>& files, const DocumentTable& table,
                             uint64_t max_line_bytes)
    : files_(files), table_(table), max_line_bytes_(max_line_bytes) {}

DocumentLines::~DocumentLines() = default;

Status DocumentLines::Changed(uint64_t line_number, std::string_view what) const {
  return Status::Internal(files_[file_].name + ":" + std::to_string(line_number) +
                          ": the input changed since pass 1 (" + std::string(what) + ")");
}

Status DocumentLines::OpenNextFile() {
  const InputFile& file = files_[file_];
  auto reader = LineReader::Open(file.read_path);
  if (!reader.ok()) {
    // The reader's message names the path it read; a spooled input is named as the user gave it.
    return file.read_path != file.name ? reader.status().WithContext(file.name) : reader.status();
  }
  reader_ = std::move(*reader);
  file_line_ = 0;
  // Pass 1 records where each file starts; without that record, only the total is checked.
  const std::vector<uint64_t>& starts = table_.file_starts;
  file_end_ = starts.size() == files_.size() && file_ + 1 < starts.size() ? starts[file_ + 1]
                                                                          : table_.lines;
  return Status::OK();
}

Status DocumentLines::EndFile() {
  const std::vector<uint64_t>& starts = table_.file_starts;
  if (ordinal_ != file_end_ && starts.size() == files_.size()) {
    return Changed(file_line_ + 1, "it now ends after " + std::to_string(file_line_) +
                                       " lines; pass 1 read " +
                                       std::to_string(file_end_ - starts[file_]));
  }
  reader_.reset();
  ++file_;
  return Status::OK();
}

bool DocumentLines::IsDocument(uint64_t ordinal) {
  if (!table_.ordinals.empty()) {  // a shard's lines, or a merge's
    return document_ < table_.ordinals.size() && table_.ordinals[document_] == ordinal;
  }
  if (next_bad_ < table_.bad_lines.size() && table_.bad_lines[next_bad_] == ordinal) {
    ++next_bad_;
    return false;
  }
  return true;
}

Result<bool> DocumentLines::Next(DocumentLine* line) {
  while (true) {
    if (reader_ == nullptr) {
      if (file_ == files_.size()) break;
      NEARDUP_RETURN_IF_ERROR(OpenNextFile());
    }
    auto more = reader_->ReadRawLine(&raw_, &scratch_, max_line_bytes_);
    const bool too_long = !more.ok() && more.status().code() == Status::Code::kResourceExhausted;
    if (!more.ok() && !too_long) return more.status();
    if (more.ok() && !*more) {
      NEARDUP_RETURN_IF_ERROR(EndFile());
      continue;
    }
    ++file_line_;
    const uint64_t ordinal = ordinal_++;
    if (ordinal >= file_end_) {
      return Changed(file_line_, "pass 1 read " + std::to_string(file_line_ - 1) + " lines");
    }
    if (!IsDocument(ordinal)) continue;
    if (too_long) return Changed(file_line_, "a document's line is now longer than the limit");
    if (document_ >= table_.size()) return Changed(file_line_, "more documents than in pass 1");
    *line = DocumentLine{static_cast<uint32_t>(document_++), file_, file_line_, raw_};
    document_bytes_ += raw_.size();
    return true;
  }
  if (document_ != table_.size()) {
    return Status::Internal(table_.Location(document_) +
                            ": the input changed since pass 1 (this document is missing)");
  }
  return false;
}

namespace {

// The least a read takes: between a document with an offset and the one asked for are 7.5 lines on
// average (about 2 KB of the scale corpus's).
constexpr uint64_t kReadBytes = 4 << 10;

// Prefetch asks for the places of this many documents ahead, kReadBytes twice each. With the input
// no longer in the page cache (100M documents: 152,096 reads a few hundred KB apart), reads one at
// a time with the kernel's read-ahead took 31 s; asked ahead, with the read-ahead off, 10.9 s.
constexpr size_t kPrefetchDocuments = 64;

}  // namespace

bool DocumentLinesAt::Available(const DocumentTable& table, size_t files) {
  return table.line_offsets.documents() == table.size() &&
         table.file_byte_starts.size() == files + 1;
}

DocumentLinesAt::DocumentLinesAt(const std::vector<InputFile>& files, const DocumentTable& table,
                                 uint64_t max_line_bytes, std::span<const uint32_t> documents)
    : files_(files), table_(table), max_line_bytes_(max_line_bytes), documents_(documents) {}

DocumentLinesAt::~DocumentLinesAt() {
  if (fd_ >= 0) ::close(fd_);
}

Status DocumentLinesAt::Changed(size_t file, uint64_t line_number, std::string_view what) const {
  return Status::Internal(files_[file].name + ":" + std::to_string(line_number) +
                          ": the input changed since pass 1 (" + std::string(what) + ")");
}

Status DocumentLinesAt::Open(size_t file, uint64_t line_number) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  file_ = SIZE_MAX;
  buffer_.clear();
  window_ = cursor_ = 0;
  cursor_line_ = 1;
  prefetched_to_ = 0;
  const InputFile& input = files_[file];
  const int fd = ::open(input.read_path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int error = errno;
    // A spooled input is named as the user gave it.
    const std::string message = input.read_path + ": cannot open: " + std::strerror(error);
    const Status status = error == ENOENT ? Status::NotFound(message) : Status::IOError(message);
    return input.read_path != input.name ? status.WithContext(input.name) : status;
  }
  fd_ = fd;
  file_ = file;
  // No read-ahead around each read: the places needed are asked for (Prefetch). With it, each read
  // of a few KB a few hundred KB from the last made the kernel read far more than was needed.
  (void)::posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM);
  file_bytes_ = table_.file_byte_starts[file + 1] - table_.file_byte_starts[file];
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    return Status::IOError(input.name + ": cannot stat: " + std::strerror(errno));
  }
  if (static_cast<uint64_t>(st.st_size) != file_bytes_) {
    return Changed(file, line_number,
                   "the file is now " + std::to_string(st.st_size) + " bytes; pass 1 read " +
                       std::to_string(file_bytes_));
  }
  return Status::OK();
}

void DocumentLinesAt::Prefetch() {
  const size_t end = std::min(documents_.size(), next_ + kPrefetchDocuments);
  for (prefetched_ = std::max(prefetched_, next_); prefetched_ < end; ++prefetched_) {
    const size_t anchor = documents_[prefetched_] / LineOffsets::kEvery * LineOffsets::kEvery;
    const uint64_t at = table_.line_offsets.At(anchor), start = table_.file_byte_starts[file_];
    if (at >= table_.file_byte_starts[file_ + 1]) return;  // in a later file
    // An offset in an earlier file: the document is read from its file's start.
    const uint64_t from = std::max(at < start ? 0 : at - start, prefetched_to_);
    const uint64_t to = std::min(from + 2 * kReadBytes, file_bytes_);
    if (from < to) {
      // Advice only: an error changes nothing that the reads themselves would not report.
      (void)::posix_fadvise(fd_, static_cast<off_t>(from), static_cast<off_t>(to - from),
                            POSIX_FADV_WILLNEED);
      prefetched_to_ = to;
    }
  }
}

Status DocumentLinesAt::Load(uint64_t from, uint64_t at_least) {
  const uint64_t end = from + std::min(at_least, file_bytes_ - from);
  const uint64_t window_end = window_ + buffer_.size();
  if (from >= window_ && end <= window_end) return Status::OK();
  if (from >= window_ && from <= window_end) {
    buffer_.erase(0, from - window_);  // kept: the bytes from `from` on
  } else {
    buffer_.clear();
  }
  window_ = from;
  const uint64_t have = window_ + buffer_.size();
  const uint64_t to = std::min(file_bytes_, std::max(end, have + kReadBytes));
  const size_t old_size = buffer_.size();
  buffer_.resize(to - window_);
  for (uint64_t at = have; at < to;) {
    const ssize_t n =
        ::pread(fd_, buffer_.data() + old_size + (at - have), to - at, static_cast<off_t>(at));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      buffer_.resize(old_size);
      return Status::IOError(files_[file_].name + ": read failed: " + std::strerror(errno));
    }
    if (n == 0) {
      buffer_.resize(at - window_);
      return Status::Internal(files_[file_].name +
                              ": the input changed since pass 1 (the file is shorter)");
    }
    at += static_cast<uint64_t>(n);
  }
  return Status::OK();
}

Result<bool> DocumentLinesAt::Next(DocumentLine* line) {
  if (next_ == documents_.size()) return false;
  const uint32_t d = documents_[next_];
  const auto [file, line_number] = table_.FileAndLine(d);
  if (file != file_) {
    NEARDUP_RETURN_IF_ERROR(Open(file, line_number));
    prefetched_ = next_;
  }
  Prefetch();
  // Start from the nearest document before this one that has an offset, unless the last line read
  // is nearer.
  const size_t anchor = d / LineOffsets::kEvery * LineOffsets::kEvery;
  const auto [anchor_file, anchor_line] = table_.FileAndLine(anchor);
  if (cursor_line_ > line_number) {
    cursor_ = 0;
    cursor_line_ = 1;
  }
  if (anchor_file == file && anchor_line > cursor_line_) {
    cursor_ = table_.line_offsets.At(anchor) - table_.file_byte_starts[file];
    cursor_line_ = anchor_line;
    if (cursor_ > file_bytes_) return Changed(file, anchor_line, "its line is past the file's end");
    if (cursor_ > 0) {
      NEARDUP_RETURN_IF_ERROR(Load(cursor_ - 1, 1));
      if (buffer_[cursor_ - 1 - window_] != '\n') {
        return Changed(file, anchor_line, "its line no longer starts where pass 1 found it");
      }
    }
  }
  // Lines up to the document's.
  while (cursor_line_ < line_number) {
    if (cursor_ >= file_bytes_) {
      return Changed(file, line_number, "the file now ends before this line");
    }
    NEARDUP_RETURN_IF_ERROR(Load(cursor_, 1));
    const char* at = buffer_.data() + (cursor_ - window_);
    const size_t available = buffer_.size() - (cursor_ - window_);
    const void* end = std::memchr(at, '\n', available);
    if (end != nullptr) {
      cursor_ += static_cast<uint64_t>(static_cast<const char*>(end) - at) + 1;
      ++cursor_line_;
    } else {
      cursor_ += available;  // a long line: its start is not kept
    }
  }
  // The document's line: to its line end, or to the file's end.
  uint64_t scanned = 0, length = 0;
  while (true) {
    NEARDUP_RETURN_IF_ERROR(Load(cursor_, scanned + 1));
    const char* at = buffer_.data() + (cursor_ - window_);
    const size_t available = buffer_.size() - (cursor_ - window_);
    const void* end = std::memchr(at + scanned, '\n', available - scanned);
    if (end != nullptr) {
      length = static_cast<uint64_t>(static_cast<const char*>(end) - at) + 1;
      break;
    }
    scanned = available;
    if (cursor_ + scanned >= file_bytes_) {
      length = scanned;
      break;
    }
    if (scanned > max_line_bytes_ + 2) {
      return Changed(file, line_number, "a document's line is now longer than the limit");
    }
  }
  if (length == 0) return Changed(file, line_number, "this document is missing");
  const std::string_view raw(buffer_.data() + (cursor_ - window_), length);
  if (StripLineEnd(raw).size() > max_line_bytes_) {
    return Changed(file, line_number, "a document's line is now longer than the limit");
  }
  *line = DocumentLine{d, file, line_number, raw};
  cursor_ += length;
  ++cursor_line_;
  ++next_;
  return true;
}

}  // namespace neardup::dedup_internal
