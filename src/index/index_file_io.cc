// The parts every index file shares (index_file_io.h, doc/index_format.md).
#include "index/index_file_io.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <cerrno>
#include <new>

#include "index/index_format.h"
#include "index/layout.h"
#include "neardup/output.h"

namespace neardup::index_internal {
namespace {

size_t AlignUp(size_t n) {
  return (n + kIndexSectionAlignment - 1) / kIndexSectionAlignment * kIndexSectionAlignment;
}

uint64_t HeaderChecksum(const uint8_t* p, size_t header_size) {
  return XXH3_64bits(p, kIndexChecksumOffset) ^
         XXH3_64bits(p + kIndexHeaderBytes, header_size - kIndexHeaderBytes);
}

static_assert(kIndexMaxSections >= 2 + 3 * kMaxTables, "fingerprint files of every design");

// The longest header any file may have: the section table and settings line at their limits.
constexpr size_t kMaxHeaderBytes =
    kIndexHeaderBytes + kIndexMaxSections * kIndexSectionEntryBytes + kIndexMaxSettingsBytes;

// ParseCommonHeader of the file's first `available` bytes (at least min(file_size,
// kMaxHeaderBytes)).
Result<CommonHeader> ParseHeaderBytes(const uint8_t* p, size_t available, uint64_t file_size,
                                      const std::string& path) {
  auto corrupt = [&](const std::string& what) { return Status::Corruption(path + ": " + what); };
  if (available < kIndexHeaderBytes || std::memcmp(p, kIndexMagic, sizeof(kIndexMagic)) != 0) {
    return corrupt("not a neardup index (bad magic or shorter than the 128-byte header)");
  }
  CommonHeader h;
  h.version = GetLittleEndian<uint32_t>(p, 8);
  if (h.version < kIndexOldestVersion || h.version > kIndexVersion) {
    return corrupt("index format version " + std::to_string(h.version) +
                   "; this build reads versions " + std::to_string(kIndexOldestVersion) + " to " +
                   std::to_string(kIndexVersion) +
                   (h.version > kIndexVersion ? " (a file of a newer neardup?)" : ""));
  }
  h.sections = GetLittleEndian<uint32_t>(p, kIndexSectionCountOffset);
  h.header_size = GetLittleEndian<uint32_t>(p, 12);
  h.count = GetLittleEndian<uint64_t>(p, kIndexCountOffset);
  const uint32_t settings_size =
      h.version == 1 ? 0 : GetLittleEndian<uint32_t>(p, kIndexSettingsSizeOffset);
  if (h.sections > kIndexMaxSections || settings_size > kIndexMaxSettingsBytes ||
      h.header_size != kIndexHeaderBytes + h.sections * kIndexSectionEntryBytes + settings_size ||
      h.header_size > file_size || h.header_size > available) {
    return corrupt("header size " + std::to_string(h.header_size) + " inconsistent (truncated?)");
  }
  if (HeaderChecksum(p, h.header_size) != GetLittleEndian<uint64_t>(p, kIndexChecksumOffset)) {
    return corrupt("header checksum mismatch");
  }
  h.kind = h.version == 1 ? kIndexFingerprints : GetLittleEndian<uint32_t>(p, kIndexKindOffset);
  if (h.kind != kIndexFingerprints && h.kind != kIndexSignatures && h.kind != kIndexOnline) {
    return corrupt("unknown file kind " + std::to_string(h.kind));
  }
  h.settings.assign(reinterpret_cast<const char*>(p) + h.header_size - settings_size,
                    settings_size);
  for (char c : h.settings) {
    if (c < 0x20 || c > 0x7E) return corrupt("the settings line is not printable text");
  }
  if (h.count > kIndexMaxCount) return corrupt("count " + std::to_string(h.count) + " too large");
  return h;
}

// Internal when a section's produce handed on another number of bytes than it said.
Status CheckProduced(const SectionToWrite& section, size_t produced) {
  if (produced == section.bytes) return Status::OK();
  return Status::Internal("index file section of kind " + std::to_string(section.kind) + " gave " +
                          std::to_string(produced) + " bytes, not " +
                          std::to_string(section.bytes));
}

// The checksum of a section that produces its bytes.
Result<uint64_t> ChecksumOf(const SectionToWrite& section) {
  std::unique_ptr<XXH3_state_t, decltype(&XXH3_freeState)> state(XXH3_createState(),
                                                                 &XXH3_freeState);
  if (state == nullptr) throw std::bad_alloc();
  XXH3_64bits_reset(state.get());
  size_t produced = 0;
  NEARDUP_RETURN_IF_ERROR(section.produce([&](std::string_view piece) {
    produced += piece.size();
    XXH3_64bits_update(state.get(), piece.data(), piece.size());
  }));
  NEARDUP_RETURN_IF_ERROR(CheckProduced(section, produced));
  return static_cast<uint64_t>(XXH3_64bits_digest(state.get()));
}

// CheckTiling of a file of file_size bytes whose header is at p; bytes_at(offset, n) gives n < 64
// bytes of the file (null when they cannot be read).
Status CheckTilingOf(const uint8_t* p, uint64_t file_size, const std::string& path,
                     const CommonHeader& header,
                     const std::function<const uint8_t*(uint64_t, size_t)>& bytes_at) {
  uint64_t position = header.header_size;
  for (uint32_t s = 0; s < header.sections; ++s) {
    const size_t at = kIndexHeaderBytes + s * kIndexSectionEntryBytes;
    const uint64_t offset = GetLittleEndian<uint64_t>(p, at + 8);
    const uint64_t size = GetLittleEndian<uint64_t>(p, at + 16);
    if (offset < position || offset - position >= kIndexSectionAlignment || offset > file_size ||
        size > file_size - offset) {
      return Status::Corruption(path + ": section " + std::to_string(s) + " at byte " +
                                std::to_string(offset) +
                                " is misplaced or runs past the end (truncated?)");
    }
    if (offset > position) {
      const uint8_t* padding = bytes_at(position, offset - position);
      if (padding == nullptr) {
        return Status::IOError(path + ": read failed at byte " + std::to_string(position));
      }
      for (uint64_t b = position; b < offset; ++b) {
        if (padding[b - position] != 0) {
          return Status::Corruption(path + ": non-zero padding at byte " + std::to_string(b));
        }
      }
    }
    position = offset + size;
  }
  if (position != file_size) {
    return Status::Corruption(path + ": " + std::to_string(file_size - position) +
                              " unexpected bytes after the last section");
  }
  return Status::OK();
}

}  // namespace

FileBytes::~FileBytes() {
  if (mapped_) ::munmap(data_, size_);
}

Result<std::shared_ptr<FileBytes>> FileBytes::Open(const std::string& path, bool map) {
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

Status FileBytes::Read(int fd, const std::string& path, bool map) {
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

Result<CommonHeader> ParseCommonHeader(const FileBytes& file, const std::string& path) {
  return ParseHeaderBytes(file.data(), file.size(), file.size(), path);
}

Result<FingerprintFileFields> ParseFingerprintFileFields(const uint8_t* p,
                                                         const CommonHeader& header,
                                                         const std::string& path) {
  FingerprintFileFields fields;
  if (header.version < 2 || header.kind != kIndexFingerprints) return fields;
  fields.id_names = GetLittleEndian<uint32_t>(p, kIndexIdNamesOffset);
  const uint32_t k_plus_one = GetLittleEndian<uint32_t>(p, kIndexQueryKOffset);
  if (fields.id_names > 2) {
    return Status::Corruption(path + ": unknown id names field " + std::to_string(fields.id_names));
  }
  if (k_plus_one > 8) {
    return Status::Corruption(path + ": query k field " + std::to_string(k_plus_one) +
                              " out of range (k + 1, at most 8)");
  }
  fields.query_k = static_cast<int>(k_plus_one) - 1;
  return fields;
}

Status WriteIndexFile(uint32_t kind, std::string_view settings, uint64_t count,
                      const std::function<void(std::string*)>& header_fields,
                      const std::vector<SectionToWrite>& sections, OutputFile* out) {
  if (settings.size() > kIndexMaxSettingsBytes) {
    return Status::InvalidArgument("settings line longer than " +
                                   std::to_string(kIndexMaxSettingsBytes) + " bytes");
  }
  const size_t table_at = kIndexHeaderBytes;
  const size_t settings_at = table_at + sections.size() * kIndexSectionEntryBytes;
  std::string header(settings_at + settings.size(), '\0');
  std::memcpy(header.data(), kIndexMagic, sizeof(kIndexMagic));
  PutLittleEndian<uint32_t>(&header, 8, kIndexVersion);
  PutLittleEndian<uint32_t>(&header, 12, static_cast<uint32_t>(header.size()));
  header_fields(&header);
  PutLittleEndian<uint64_t>(&header, kIndexCountOffset, count);
  PutLittleEndian<uint32_t>(&header, kIndexSectionCountOffset,
                            static_cast<uint32_t>(sections.size()));
  PutLittleEndian<uint32_t>(&header, kIndexKindOffset, kind);
  PutLittleEndian<uint32_t>(&header, kIndexSettingsSizeOffset,
                            static_cast<uint32_t>(settings.size()));
  std::vector<uint64_t> offsets;
  size_t offset = AlignUp(header.size());
  for (size_t s = 0; s < sections.size(); ++s) {
    const SectionToWrite& section = sections[s];
    const size_t at = table_at + s * kIndexSectionEntryBytes;
    PutLittleEndian<uint32_t>(&header, at, section.kind);
    PutLittleEndian<uint32_t>(&header, at + 4, section.table);
    PutLittleEndian<uint64_t>(&header, at + 8, offset);
    PutLittleEndian<uint64_t>(&header, at + 16, section.bytes);
    uint64_t checksum = 0;
    if (section.produce) {
      auto sum = ChecksumOf(section);
      if (!sum.ok()) return sum.status();
      checksum = *sum;
    } else {
      checksum = XXH3_64bits(section.data, section.bytes);
    }
    PutLittleEndian<uint64_t>(&header, at + 24, checksum);
    offsets.push_back(offset);
    offset = AlignUp(offset + section.bytes);
  }
  if (!settings.empty()) std::memcpy(header.data() + settings_at, settings.data(), settings.size());
  PutLittleEndian<uint64_t>(
      &header, kIndexChecksumOffset,
      HeaderChecksum(reinterpret_cast<const uint8_t*>(header.data()), header.size()));

  std::string zeros;
  out->Write(header);
  size_t position = header.size();
  for (size_t s = 0; s < sections.size(); ++s) {
    const SectionToWrite& section = sections[s];
    zeros.assign(offsets[s] - position, '\0');
    out->Write(zeros);
    if (section.produce) {
      size_t written = 0;
      NEARDUP_RETURN_IF_ERROR(section.produce([&](std::string_view piece) {
        written += piece.size();
        out->Write(piece);
      }));
      NEARDUP_RETURN_IF_ERROR(CheckProduced(section, written));
    } else {
      out->Write(std::string_view(static_cast<const char*>(section.data), section.bytes));
    }
    position = offsets[s] + section.bytes;
  }
  return out->status();
}

Result<const uint8_t*> SectionData(const FileBytes& file, const std::string& path, uint32_t s,
                                   uint32_t kind, uint32_t table, uint64_t bytes, bool verify) {
  const uint8_t* p = file.data();
  const size_t at = kIndexHeaderBytes + s * kIndexSectionEntryBytes;
  const uint64_t offset = GetLittleEndian<uint64_t>(p, at + 8);
  const uint64_t size = GetLittleEndian<uint64_t>(p, at + 16);
  const std::string name = "section " + std::to_string(s);
  if (GetLittleEndian<uint32_t>(p, at) != kind || GetLittleEndian<uint32_t>(p, at + 4) != table ||
      size != bytes || offset % kIndexSectionAlignment != 0) {
    return Status::Corruption(path + ": " + name +
                              " has an unexpected kind, table, size or alignment");
  }
  if (offset > file.size() || size > file.size() - offset) {
    return Status::Corruption(path + ": " + name + " at byte " + std::to_string(offset) +
                              " runs past the end of the file (truncated?)");
  }
  if (verify && XXH3_64bits(p + offset, size) != GetLittleEndian<uint64_t>(p, at + 24)) {
    return Status::Corruption(path + ": " + name + " at byte " + std::to_string(offset) +
                              ": checksum mismatch");
  }
  return p + offset;
}

Status CheckTiling(const FileBytes& file, const std::string& path, const CommonHeader& header) {
  return CheckTilingOf(file.data(), file.size(), path, header,
                       [&](uint64_t offset, size_t) { return file.data() + offset; });
}

Result<std::unique_ptr<IndexFileReader>> IndexFileReader::Open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return errno == ENOENT ? Status::NotFound(path + ": no such file")
                           : Status::IOError(path + ": " + std::strerror(errno));
  }
  std::unique_ptr<IndexFileReader> reader(new IndexFileReader(fd, path));
  struct stat st;
  if (::fstat(fd, &st) != 0) return Status::IOError(path + ": " + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) return Status::IOError(path + ": not a regular file");
  reader->size_ = static_cast<uint64_t>(st.st_size);
  if (reader->size_ == 0) return Status::Corruption(path + ": empty file, not an index");
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  const auto available = static_cast<size_t>(std::min<uint64_t>(reader->size_, kMaxHeaderBytes));
  reader->header_bytes_.resize(available);
  NEARDUP_RETURN_IF_ERROR(reader->ReadAt(0, available, reader->header_bytes_.data()));
  auto header = ParseHeaderBytes(reader->header_bytes_.data(), available, reader->size_, path);
  if (!header.ok()) return header.status();
  reader->header_ = std::move(*header);
  reader->header_bytes_.resize(reader->header_.header_size);
  uint8_t padding[kIndexSectionAlignment];
  NEARDUP_RETURN_IF_ERROR(
      CheckTilingOf(reader->header_bytes_.data(), reader->size_, path, reader->header_,
                    [&](uint64_t offset, size_t n) -> const uint8_t* {
                      return reader->ReadAt(offset, n, padding).ok() ? padding : nullptr;
                    }));
  return reader;
}

IndexFileReader::~IndexFileReader() { ::close(fd_); }

Status IndexFileReader::ReadAt(uint64_t offset, size_t size, uint8_t* out) const {
  size_t done = 0;
  while (done < size) {
    const ssize_t got = ::pread(fd_, out + done, size - done, static_cast<off_t>(offset + done));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      return Status::IOError(path_ + ": read failed at byte " + std::to_string(offset + done) +
                             (got < 0 ? std::string(": ") + std::strerror(errno)
                                      : std::string(" (the file shrank?)")));
    }
    done += static_cast<size_t>(got);
  }
  return Status::OK();
}

Status IndexFileReader::Entry(uint32_t s, uint32_t kind, uint32_t table, uint64_t bytes,
                              uint64_t* offset, uint64_t* checksum) const {
  const std::string name = "section " + std::to_string(s);
  if (s >= header_.sections) {
    return Status::Corruption(path_ + ": " + name + " is missing (the file has " +
                              std::to_string(header_.sections) + ")");
  }
  const uint8_t* p = header_bytes_.data();
  const size_t at = kIndexHeaderBytes + s * kIndexSectionEntryBytes;
  const uint32_t found_kind = GetLittleEndian<uint32_t>(p, at);
  const uint32_t found_table = GetLittleEndian<uint32_t>(p, at + 4);
  const uint64_t size = GetLittleEndian<uint64_t>(p, at + 16);
  if (found_kind != kind || found_table != table || size != bytes) {
    return Status::Corruption(path_ + ": " + name + " is of kind " + std::to_string(found_kind) +
                              ", table " + std::to_string(found_table) + ", " +
                              std::to_string(size) + " bytes; expected kind " +
                              std::to_string(kind) + ", table " + std::to_string(table) + ", " +
                              std::to_string(bytes) + " bytes");
  }
  // Open checked the offsets and sizes against the file (CheckTiling).
  *offset = GetLittleEndian<uint64_t>(p, at + 8);
  *checksum = GetLittleEndian<uint64_t>(p, at + 24);
  return Status::OK();
}

Status IndexFileReader::Read(uint32_t s, uint32_t kind, uint32_t table, uint64_t bytes,
                             void* into) const {
  const std::span<uint8_t> all(static_cast<uint8_t*>(into), static_cast<size_t>(bytes));
  return Read(s, kind, table, bytes, std::span<const std::span<uint8_t>>(&all, 1));
}

Status IndexFileReader::Read(uint32_t s, uint32_t kind, uint32_t table, uint64_t bytes,
                             std::span<const std::span<uint8_t>> into) const {
  uint64_t offset = 0, checksum = 0;
  NEARDUP_RETURN_IF_ERROR(Entry(s, kind, table, bytes, &offset, &checksum));
  uint64_t total = 0;
  for (std::span<uint8_t> span : into) total += span.size();
  if (total != bytes) {
    return Status::Internal(path_ + ": section " + std::to_string(s) + " is read into " +
                            std::to_string(total) + " bytes, not " + std::to_string(bytes));
  }
  std::unique_ptr<XXH3_state_t, decltype(&XXH3_freeState)> state(XXH3_createState(),
                                                                 &XXH3_freeState);
  if (state == nullptr) throw std::bad_alloc();
  XXH3_64bits_reset(state.get());
  // A piece at a time, hashed while it is in the cache.
  for (std::span<uint8_t> span : into) {
    for (size_t done = 0; done < span.size();) {
      const size_t n = std::min(kPieceBytes, span.size() - done);
      NEARDUP_RETURN_IF_ERROR(ReadAt(offset, n, span.data() + done));
      XXH3_64bits_update(state.get(), span.data() + done, n);
      offset += n;
      done += n;
    }
  }
  if (XXH3_64bits_digest(state.get()) != checksum) {
    return Status::Corruption(path_ + ": section " + std::to_string(s) + ": checksum mismatch");
  }
  return Status::OK();
}

Status IndexFileReader::ReadInPieces(
    uint32_t s, uint32_t kind, uint32_t table, uint64_t bytes,
    const std::function<Status(std::span<const uint8_t>)>& piece) const {
  uint64_t offset = 0, checksum = 0;
  NEARDUP_RETURN_IF_ERROR(Entry(s, kind, table, bytes, &offset, &checksum));
  std::unique_ptr<XXH3_state_t, decltype(&XXH3_freeState)> state(XXH3_createState(),
                                                                 &XXH3_freeState);
  if (state == nullptr) throw std::bad_alloc();
  XXH3_64bits_reset(state.get());
  std::vector<uint8_t> buffer(static_cast<size_t>(std::min<uint64_t>(bytes, kPieceBytes)));
  for (uint64_t done = 0; done < bytes;) {
    const auto n = static_cast<size_t>(std::min<uint64_t>(kPieceBytes, bytes - done));
    NEARDUP_RETURN_IF_ERROR(ReadAt(offset + done, n, buffer.data()));
    XXH3_64bits_update(state.get(), buffer.data(), n);
    NEARDUP_RETURN_IF_ERROR(piece(std::span<const uint8_t>(buffer.data(), n)));
    done += n;
  }
  if (XXH3_64bits_digest(state.get()) != checksum) {
    return Status::Corruption(path_ + ": section " + std::to_string(s) + ": checksum mismatch");
  }
  return Status::OK();
}

}  // namespace neardup::index_internal
