// LineReader over plain, gzip and zstd files, with one fixed-size buffer.
#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "neardup/input.h"

namespace neardup {
namespace {

constexpr size_t kBufferBytes = 1 << 20;

// Whether s ends with the lower-case suffix, in any case (".GZ" too).
bool EndsWith(std::string_view s, std::string_view suffix) {
  if (s.size() < suffix.size()) return false;
  s = s.substr(s.size() - suffix.size());
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i] >= 'A' && s[i] <= 'Z' ? static_cast<char>(s[i] - 'A' + 'a') : s[i];
    if (c != suffix[i]) return false;
  }
  return true;
}

// A stream of bytes: a file descriptor, possibly decompressed.
class ByteSource {
 public:
  virtual ~ByteSource() = default;
  // Fills up to `capacity` bytes; 0 at the end.
  virtual Result<size_t> Read(char* buffer, size_t capacity) = 0;
  virtual uint64_t raw_bytes() const = 0;
};

class FdSource : public ByteSource {
 public:
  FdSource(int fd, bool owned, std::string path) : fd_(fd), owned_(owned), path_(std::move(path)) {}
  ~FdSource() override {
    if (owned_) ::close(fd_);
  }
  // Reads the first bytes of the stream (up to 4, fewer at its end) without consuming them: Read
  // returns them first.
  Result<std::string_view> Peek() {
    while (peeked_.size() < 4 && !peek_end_) {
      char bytes[4];
      auto n = ReadFd(bytes, 4 - peeked_.size());
      if (!n.ok()) return n.status();
      if (*n == 0) peek_end_ = true;
      peeked_.append(bytes, *n);
    }
    return std::string_view(peeked_);
  }
  Result<size_t> Read(char* buffer, size_t capacity) override {
    if (peeked_.size() > peek_used_) {
      const size_t n = std::min(capacity, peeked_.size() - peek_used_);
      std::memcpy(buffer, peeked_.data() + peek_used_, n);
      peek_used_ += n;
      return n;
    }
    return ReadFd(buffer, capacity);
  }
  // Bytes delivered by Read (peeked bytes count once Read has returned them).
  uint64_t raw_bytes() const override { return raw_ - (peeked_.size() - peek_used_); }

 private:
  Result<size_t> ReadFd(char* buffer, size_t capacity) {
    while (true) {
      ssize_t n = ::read(fd_, buffer, capacity);
      if (n >= 0) {
        raw_ += static_cast<uint64_t>(n);
        return static_cast<size_t>(n);
      }
      if (errno == EINTR) continue;
      return Status::IOError(path_ + ": read failed: " + std::strerror(errno));
    }
  }

  int fd_;
  bool owned_;
  std::string path_;
  uint64_t raw_ = 0;
  std::string peeked_;
  size_t peek_used_ = 0;
  bool peek_end_ = false;
};

class GzipSource : public ByteSource {
 public:
  GzipSource(std::unique_ptr<FdSource> raw, std::string path)
      : raw_(std::move(raw)), path_(std::move(path)), in_(kBufferBytes) {
    std::memset(&stream_, 0, sizeof(stream_));
    ok_ = inflateInit2(&stream_, 15 + 32) == Z_OK;  // gzip or zlib header, concatenated members
  }
  ~GzipSource() override { inflateEnd(&stream_); }
  Result<size_t> Read(char* buffer, size_t capacity) override {
    if (!ok_) return Status::Internal(path_ + ": cannot start gzip decompression");
    stream_.next_out = reinterpret_cast<Bytef*>(buffer);
    stream_.avail_out = static_cast<uInt>(capacity);
    while (stream_.avail_out == capacity && !finished_) {
      if (stream_.avail_in == 0) {
        auto n = raw_->Read(in_.data(), in_.size());
        if (!n.ok()) return n.status();
        if (*n == 0) {
          if (!clean_end_) return Status::Corruption(path_ + ": gzip data ends early");
          finished_ = true;
          break;
        }
        stream_.next_in = reinterpret_cast<Bytef*>(in_.data());
        stream_.avail_in = static_cast<uInt>(*n);
      }
      int rc = inflate(&stream_, Z_NO_FLUSH);
      clean_end_ = false;
      if (rc == Z_STREAM_END) {
        clean_end_ = true;
        inflateReset(&stream_);  // another member may follow
      } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
        return Status::Corruption(path_ +
                                  ": bad gzip data: " + (stream_.msg ? stream_.msg : "error"));
      }
    }
    return capacity - stream_.avail_out;
  }
  uint64_t raw_bytes() const override { return raw_->raw_bytes(); }

 private:
  std::unique_ptr<FdSource> raw_;
  std::string path_;
  std::vector<char> in_;
  z_stream stream_;
  bool ok_ = false;
  bool finished_ = false;
  bool clean_end_ = false;
};

class ZstdSource : public ByteSource {
 public:
  ZstdSource(std::unique_ptr<FdSource> raw, std::string path)
      : raw_(std::move(raw)),
        path_(std::move(path)),
        in_(ZSTD_DStreamInSize()),
        stream_(ZSTD_createDStream()) {}
  ~ZstdSource() override { ZSTD_freeDStream(stream_); }
  Result<size_t> Read(char* buffer, size_t capacity) override {
    ZSTD_outBuffer out{buffer, capacity, 0};
    while (out.pos == 0) {
      if (input_.pos == input_.size) {
        auto n = raw_->Read(in_.data(), in_.size());
        if (!n.ok()) return n.status();
        if (*n == 0) {
          if (frame_open_) return Status::Corruption(path_ + ": zstd data ends early");
          return size_t{0};
        }
        input_ = ZSTD_inBuffer{in_.data(), *n, 0};
      }
      size_t rc = ZSTD_decompressStream(stream_, &out, &input_);
      if (ZSTD_isError(rc)) {
        return Status::Corruption(path_ + ": bad zstd data: " + ZSTD_getErrorName(rc));
      }
      frame_open_ = rc != 0;
    }
    return out.pos;
  }
  uint64_t raw_bytes() const override { return raw_->raw_bytes(); }

 private:
  std::unique_ptr<FdSource> raw_;
  std::string path_;
  std::vector<char> in_;
  ZSTD_DStream* stream_;
  ZSTD_inBuffer input_{nullptr, 0, 0};
  bool frame_open_ = false;
};

class LineReaderImpl final : public LineReader {
 public:
  // plain: the source is the file's bytes themselves (offsets in it are offsets in the file).
  LineReaderImpl(std::unique_ptr<ByteSource> source, std::string path, bool plain)
      : source_(std::move(source)), path_(std::move(path)), buffer_(kBufferBytes), plain_(plain) {}

  Result<bool> ReadLine(std::string* line, uint64_t max_bytes) override {
    line->clear();
    bool over = false;
    auto more = ReadLinePieces([&](std::string_view piece) {
      if (line->size() + piece.size() > max_bytes) {
        over = true;
        return Status::ResourceExhausted("line longer than the limit of " +
                                         std::to_string(max_bytes) + " bytes");
      }
      line->append(piece);
      return Status::OK();
    });
    if (!more.ok() && over) {
      line->clear();
      return InputError(more.status(), path_, line_number_);
    }
    return more;
  }

  Result<bool> ReadLinePieces(const std::function<Status(std::string_view)>& on_piece) override {
    bool any = false;
    Status piece_status;
    bool pending_cr = false;  // a '\r' ended the previous piece: drop it if '\n' follows
    while (true) {
      if (begin_ == end_) {
        if (eof_) break;
        auto n = source_->Read(buffer_.data(), buffer_.size());
        if (!n.ok()) return n.status();
        begin_ = 0;
        end_ = *n;
        if (*n == 0) {
          eof_ = true;
          break;
        }
      }
      if (!any) {
        any = true;
        ++line_number_;
      }
      const char* start = buffer_.data() + begin_;
      const void* nl = std::memchr(start, '\n', end_ - begin_);
      const size_t length =
          nl ? static_cast<size_t>(static_cast<const char*>(nl) - start) : end_ - begin_;
      std::string_view piece(start, length);
      begin_ += length + (nl ? 1 : 0);
      if (pending_cr && !(nl && piece.empty())) {
        if (piece_status.ok()) piece_status = on_piece("\r");
      }
      pending_cr = false;
      if (!piece.empty() && piece.back() == '\r') {
        piece.remove_suffix(1);
        pending_cr = !nl;
      }
      if (piece_status.ok() && !piece.empty()) piece_status = on_piece(piece);
      if (nl) break;
    }
    if (!piece_status.ok()) return piece_status;
    return any;
  }

  Result<bool> ReadRawLine(std::string_view* line, std::string* scratch,
                           uint64_t max_bytes) override {
    scratch->clear();
    bool in_scratch = false;
    bool over = false;
    while (true) {
      if (begin_ == end_) {
        if (!eof_) {
          auto filled = Fill();
          if (!filled.ok()) return filled.status();
          if (*filled) continue;
        }
        if (!in_scratch) return false;  // end of input, no partial line
        ++line_number_;
        return Finish(scratch->data(), scratch->size(), over, max_bytes, line);
      }
      const char* start = buffer_.data() + begin_;
      const void* nl = std::memchr(start, '\n', end_ - begin_);
      if (nl != nullptr) {
        const size_t length = static_cast<size_t>(static_cast<const char*>(nl) - start) + 1;
        begin_ += length;
        ++line_number_;
        if (!in_scratch) return Finish(start, length, false, max_bytes, line);
        if (!over) scratch->append(start, length);
        return Finish(scratch->data(), scratch->size(), over, max_bytes, line);
      }
      // The line goes on past the buffered bytes: make room, or collect it in scratch.
      if (!in_scratch && begin_ > 0 && !eof_) {
        std::memmove(buffer_.data(), start, end_ - begin_);
        end_ -= begin_;
        begin_ = 0;
        auto more = source_->Read(buffer_.data() + end_, buffer_.size() - end_);
        if (!more.ok()) return more.status();
        if (*more == 0) eof_ = true;
        end_ += *more;
        continue;
      }
      in_scratch = true;
      if (!over && scratch->size() + (end_ - begin_) > max_bytes + 2) over = true;
      if (!over) scratch->append(start, end_ - begin_);
      begin_ = end_;
    }
  }

  uint64_t line_number() const override { return line_number_; }
  uint64_t bytes_read() const override { return source_->raw_bytes(); }
  const std::string& path() const override { return path_; }
  // The bytes read from the file, less those still buffered.
  uint64_t offset() const override {
    return plain_ ? source_->raw_bytes() - (end_ - begin_) : kNoOffset;
  }

 private:
  // Refills an empty buffer; false at the end of the input.
  Result<bool> Fill() {
    auto n = source_->Read(buffer_.data(), buffer_.size());
    if (!n.ok()) return n.status();
    begin_ = 0;
    end_ = *n;
    if (*n == 0) eof_ = true;
    return *n != 0;
  }

  // Hands out a complete raw line, or the over-long error.
  Result<bool> Finish(const char* data, size_t size, bool over, uint64_t max_bytes,
                      std::string_view* line) {
    std::string_view raw(data, size);
    if (over || StripLineEnd(raw).size() > max_bytes) {
      return InputError(Status::ResourceExhausted("line longer than the limit of " +
                                                  std::to_string(max_bytes) + " bytes"),
                        path_, line_number_);
    }
    *line = raw;
    return true;
  }

  std::unique_ptr<ByteSource> source_;
  std::string path_;
  std::vector<char> buffer_;
  size_t begin_ = 0, end_ = 0;
  bool eof_ = false;
  uint64_t line_number_ = 0;
  const bool plain_;
};

// gzip's 1f 8b and zstd's 28 b5 2f fd cannot start UTF-8 text (0x8b and 0xb5 are continuation
// bytes): a stream that starts with them is read decompressed whatever its name.
enum class Compression { kNone, kGzip, kZstd };
Compression CompressionOfHead(std::string_view head) {
  if (head.starts_with("\x1f\x8b")) return Compression::kGzip;
  if (head.starts_with("\x28\xb5\x2f\xfd")) return Compression::kZstd;
  return Compression::kNone;
}

std::unique_ptr<ByteSource> Decoder(Compression compression, std::unique_ptr<FdSource> raw,
                                    const std::string& path) {
  if (compression == Compression::kGzip) return std::make_unique<GzipSource>(std::move(raw), path);
  if (compression == Compression::kZstd) return std::make_unique<ZstdSource>(std::move(raw), path);
  return raw;
}

// Standard input, whose first bytes are looked at on the first read (not when it is opened: a
// pipe may not have them yet).
class SniffedSource : public ByteSource {
 public:
  SniffedSource(std::unique_ptr<FdSource> raw, std::string path)
      : raw_(std::move(raw)), path_(std::move(path)) {}
  Result<size_t> Read(char* buffer, size_t capacity) override {
    if (source_ == nullptr) {
      auto head = raw_->Peek();
      if (!head.ok()) return head.status();
      source_ = Decoder(CompressionOfHead(*head), std::move(raw_), path_);
    }
    return source_->Read(buffer, capacity);
  }
  uint64_t raw_bytes() const override {
    return source_ != nullptr ? source_->raw_bytes() : raw_->raw_bytes();
  }

 private:
  std::unique_ptr<FdSource> raw_;
  std::unique_ptr<ByteSource> source_;
  std::string path_;
};

}  // namespace

Status InputError(const Status& status, std::string_view path, uint64_t line) {
  return status.WithContext(std::string(path) + ":" + std::to_string(line));
}

Result<std::unique_ptr<LineReader>> LineReader::Open(const std::string& path) {
  std::unique_ptr<FdSource> raw;
  if (path == "-") {
    raw = std::make_unique<FdSource>(0, /*owned=*/false, "-");
  } else {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      const int error = errno;
      std::string message = path + ": cannot open: " + std::strerror(error);
      return error == ENOENT ? Status::NotFound(message) : Status::IOError(message);
    }
    raw = std::make_unique<FdSource>(fd, /*owned=*/true, path);
  }
  // Compressed by its name, or else by its first bytes (CompressionOfHead), so that a file named
  // without its suffix, or standard input, is read as what it is.
  std::unique_ptr<ByteSource> source;
  bool plain = false;
  if (EndsWith(path, ".gz")) {
    source = Decoder(Compression::kGzip, std::move(raw), path);
  } else if (EndsWith(path, ".zst")) {
    source = Decoder(Compression::kZstd, std::move(raw), path);
  } else if (path == "-") {
    source = std::make_unique<SniffedSource>(std::move(raw), path);
  } else {
    auto head = raw->Peek();
    if (!head.ok()) return head.status();
    const Compression compression = CompressionOfHead(*head);
    plain = compression == Compression::kNone;
    source = Decoder(compression, std::move(raw), path);
  }
  return std::unique_ptr<LineReader>(
      std::make_unique<LineReaderImpl>(std::move(source), path, plain));
}

}  // namespace neardup
