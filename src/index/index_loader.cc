// LoadIndex: opens a file of doc/index_format.md, checking everything a query relies on before use.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include <cerrno>
#include <cstring>

#include "index/index_format.h"
#include "index/permuted_table_index.h"

namespace neardup {
namespace {

using index_internal::IndexRun;
using index_internal::Layout;
using index_internal::PermutedTableIndex;
using index_internal::TableView;

constexpr auto& kMagic = index_internal::kIndexMagic;
constexpr uint32_t kVersion = index_internal::kIndexVersion;
constexpr size_t kHeaderBytes = index_internal::kIndexHeaderBytes;
constexpr size_t kChecksumOffset = index_internal::kIndexChecksumOffset;
constexpr size_t kSectionEntryBytes = index_internal::kIndexSectionEntryBytes;
constexpr int kMaxPrefixBits = 30;

// The file's bytes: a private read-only mapping, or a heap copy aligned for uint64_t.
class FileBytes {
 public:
  ~FileBytes() {
    if (mapped_) ::munmap(data_, size_);
  }
  static Result<std::shared_ptr<FileBytes>> Open(const std::string& path, bool map) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      return errno == ENOENT ? Status::NotFound(path + ": no such file")
                             : Status::IOError(path + ": " + std::strerror(errno));
    }
    auto bytes = std::make_shared<FileBytes>();
    Status status = bytes->Read(fd, path, map);
    ::close(fd);
    if (!status.ok()) return status;
    return bytes;
  }
  const uint8_t* data() const { return static_cast<const uint8_t*>(data_); }
  size_t size() const { return size_; }
  bool mapped() const { return mapped_; }

 private:
  Status Read(int fd, const std::string& path, bool map) {
    struct stat st;
    if (::fstat(fd, &st) != 0) return Status::IOError(path + ": " + std::strerror(errno));
    if (!S_ISREG(st.st_mode)) return Status::IOError(path + ": not a regular file");
    size_ = static_cast<size_t>(st.st_size);
    if (size_ == 0) return Status::Corruption(path + ": empty file, not an index");
    if (map) {
      void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
      if (p != MAP_FAILED) {
        data_ = p;
        mapped_ = true;
        return Status::OK();
      }
    }
    heap_.resize((size_ + 7) / 8);
    data_ = heap_.data();
    size_t done = 0;
    while (done < size_) {
      const ssize_t got = ::read(fd, static_cast<uint8_t*>(data_) + done, size_ - done);
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) return Status::IOError(path + ": read failed at byte " + std::to_string(done));
      done += static_cast<size_t>(got);
    }
    return Status::OK();
  }

  void* data_ = nullptr;
  size_t size_ = 0;
  bool mapped_ = false;
  std::vector<uint64_t> heap_;
};

template <typename T>
T Get(const uint8_t* in, size_t offset) {
  T value;
  std::memcpy(&value, in + offset, sizeof(T));
  return value;
}

struct Header {
  TableDesign design;
  int prefix_bits = 0;
  uint64_t count = 0;
  uint32_t sections = 0;
};

Result<Header> ParseHeader(const FileBytes& file, const std::string& path) {
  auto corrupt = [&](const std::string& what) { return Status::Corruption(path + ": " + what); };
  const uint8_t* p = file.data();
  if (file.size() < kHeaderBytes || std::memcmp(p, kMagic, sizeof(kMagic)) != 0) {
    return corrupt("not a neardup index (bad magic or shorter than the 128-byte header)");
  }
  const uint32_t version = Get<uint32_t>(p, 8);
  if (version != kVersion) {
    return corrupt("index format version " + std::to_string(version) + "; this build reads " +
                   std::to_string(kVersion));
  }
  Header h;
  h.sections = Get<uint32_t>(p, 48);
  const uint32_t header_size = Get<uint32_t>(p, 12);
  if (h.sections > 2 + 3 * index_internal::kMaxTables ||
      header_size != kHeaderBytes + h.sections * kSectionEntryBytes || header_size > file.size()) {
    return corrupt("header size " + std::to_string(header_size) + " inconsistent (truncated?)");
  }
  const uint64_t checksum =
      XXH3_64bits(p, kChecksumOffset) ^ XXH3_64bits(p + kHeaderBytes, header_size - kHeaderBytes);
  if (checksum != Get<uint64_t>(p, kChecksumOffset)) return corrupt("header checksum mismatch");
  const uint32_t blocks = Get<uint32_t>(p, 16);
  if (blocks > index_internal::kMaxBlocks) return corrupt("too many blocks");
  for (uint32_t j = 0; j < blocks; ++j) h.design.block_bits.push_back(p[24 + j]);
  h.design.key_blocks = static_cast<int>(Get<uint32_t>(p, 20));
  Status valid = h.design.Validate();
  if (!valid.ok()) return corrupt("invalid design: " + valid.message());
  h.prefix_bits = static_cast<int>(Get<uint32_t>(p, 32));
  h.count = Get<uint64_t>(p, 40);
  const Layout layout(h.design);
  if (h.prefix_bits < 0 || h.prefix_bits > std::min(layout.min_key_bits(), kMaxPrefixBits) ||
      Get<uint32_t>(p, 36) != static_cast<uint32_t>(layout.tables()) ||
      h.sections != 2 + 3 * static_cast<uint32_t>(layout.tables()) || h.count > 0xFFFFFFFEu) {
    return corrupt("header fields inconsistent with the design " + h.design.ToString());
  }
  return h;
}

// The bytes of section s, checked against its expected kind, table, size and (optionally) checksum.
Result<const uint8_t*> SectionData(const FileBytes& file, const std::string& path, uint32_t s,
                                   uint32_t kind, uint32_t table, uint64_t bytes, bool verify) {
  const uint8_t* p = file.data();
  const size_t at = kHeaderBytes + s * kSectionEntryBytes;
  const uint64_t offset = Get<uint64_t>(p, at + 8);
  const uint64_t size = Get<uint64_t>(p, at + 16);
  const std::string name = "section " + std::to_string(s);
  if (Get<uint32_t>(p, at) != kind || Get<uint32_t>(p, at + 4) != table || size != bytes ||
      offset % index_internal::kIndexSectionAlignment != 0) {
    return Status::Corruption(path + ": " + name +
                              " has an unexpected kind, table, size or alignment");
  }
  if (offset > file.size() || size > file.size() - offset) {
    return Status::Corruption(path + ": " + name + " at byte " + std::to_string(offset) +
                              " runs past the end of the file (truncated?)");
  }
  if (verify && XXH3_64bits(p + offset, size) != Get<uint64_t>(p, at + 24)) {
    return Status::Corruption(path + ": " + name + " at byte " + std::to_string(offset) +
                              ": checksum mismatch");
  }
  return p + offset;
}

// The sections must tile the file: in order, 64-byte aligned, zero padding between them, nothing
// after.
Status CheckTiling(const FileBytes& file, const std::string& path, uint32_t sections) {
  const uint8_t* p = file.data();
  uint64_t position = kHeaderBytes + uint64_t{sections} * kSectionEntryBytes;
  for (uint32_t s = 0; s < sections; ++s) {
    const size_t at = kHeaderBytes + s * kSectionEntryBytes;
    const uint64_t offset = Get<uint64_t>(p, at + 8);
    const uint64_t size = Get<uint64_t>(p, at + 16);
    if (offset < position || offset - position >= 64 || offset > file.size() ||
        size > file.size() - offset) {
      return Status::Corruption(path + ": section " + std::to_string(s) + " at byte " +
                                std::to_string(offset) +
                                " is misplaced or runs past the end (truncated?)");
    }
    for (uint64_t b = position; b < offset; ++b) {
      if (p[b] != 0)
        return Status::Corruption(path + ": non-zero padding at byte " + std::to_string(b));
    }
    position = offset + size;
  }
  if (position != file.size()) {
    return Status::Corruption(path + ": " + std::to_string(file.size() - position) +
                              " unexpected bytes after the last section");
  }
  return Status::OK();
}

}  // namespace

Result<std::unique_ptr<Index>> LoadIndex(const std::string& path, const LoadOptions& options) {
  auto file = FileBytes::Open(path, options.map_file);
  if (!file.ok()) return file.status();
  const FileBytes& bytes = **file;
  auto header = ParseHeader(bytes, path);
  if (!header.ok()) return header.status();
  const Header& h = *header;
  const Layout layout(h.design);
  const uint64_t n = h.count;
  const bool verify = options.verify_checksums;
  NEARDUP_RETURN_IF_ERROR(CheckTiling(bytes, path, h.sections));

  auto ids = SectionData(bytes, path, 0, index_internal::kIndexIds, 0, n * 8, verify);
  if (!ids.ok()) return ids.status();
  auto codes = SectionData(bytes, path, 1, index_internal::kIndexCodes, 0, n * 8, verify);
  if (!codes.ok()) return codes.status();

  const uint64_t directory_size = (uint64_t{1} << h.prefix_bits) + 1;
  std::vector<TableView> tables;
  for (int t = 0; t < layout.tables(); ++t) {
    const auto table = static_cast<uint32_t>(t);
    const uint32_t first = 2 + 3 * table;
    auto directory = SectionData(bytes, path, first, index_internal::kIndexDirectory, table,
                                 directory_size * 4, verify);
    if (!directory.ok()) return directory.status();
    auto fragments = SectionData(bytes, path, first + 1, index_internal::kIndexFragments, table,
                                 n * 4, verify);
    if (!fragments.ok()) return fragments.status();
    auto rows = SectionData(bytes, path, first + 2, index_internal::kIndexRows, table, n * 4,
                            verify);
    if (!rows.ok()) return rows.status();
    TableView view{{reinterpret_cast<const uint32_t*>(*directory), directory_size},
                   {reinterpret_cast<const uint32_t*>(*fragments), n},
                   {reinterpret_cast<const uint32_t*>(*rows), n}};
    // Queries index codes through the directory: check it always (it is small).
    if (view.directory[0] != 0 || view.directory[directory_size - 1] != n) {
      return Status::Corruption(path + ": directory of table " + std::to_string(t) +
                                " does not span the table");
    }
    for (uint64_t b = 1; b < directory_size; ++b) {
      if (view.directory[b] < view.directory[b - 1]) {
        return Status::Corruption(path + ": directory of table " + std::to_string(t) +
                                  " decreases at bucket " + std::to_string(b));
      }
    }
    if (verify) {
      for (uint32_t row : view.rows) {
        if (row >= n)
          return Status::Corruption(path + ": row out of range in table " + std::to_string(t));
      }
    }
    tables.push_back(view);
  }
  const uint64_t table_bytes = bytes.size() - 16 * n;  // ids and codes are copied, not shared
  auto run = IndexRun::FromViews(h.prefix_bits, n, static_cast<uint32_t>(n), std::move(tables),
                                 *file, table_bytes);
  auto index = std::make_unique<PermutedTableIndex>(h.design, options.index);
  index->Adopt(std::move(run), {reinterpret_cast<const uint64_t*>(*ids), n},
               {reinterpret_cast<const uint64_t*>(*codes), n});
  return std::unique_ptr<Index>(std::move(index));
}

}  // namespace neardup
