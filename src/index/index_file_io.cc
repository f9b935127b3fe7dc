// The parts every index file shares (index_file_io.h, doc/index_format.md).
#include "index/index_file_io.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include <cerrno>

#include "index/index_format.h"
#include "index/layout.h"
#include "neardup/output.h"

namespace neardup::index_internal {
namespace {

size_t AlignUp(size_t n) {
  return (n + kIndexSectionAlignment - 1) / kIndexSectionAlignment * kIndexSectionAlignment;
}

// The most sections any kind of file has: ids, codes and three per table of the largest design.
constexpr uint32_t kMaxSections = 2 + 3 * kMaxTables;

uint64_t HeaderChecksum(const uint8_t* p, size_t header_size) {
  return XXH3_64bits(p, kIndexChecksumOffset) ^
         XXH3_64bits(p + kIndexHeaderBytes, header_size - kIndexHeaderBytes);
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
  auto corrupt = [&](const std::string& what) { return Status::Corruption(path + ": " + what); };
  const uint8_t* p = file.data();
  if (file.size() < kIndexHeaderBytes || std::memcmp(p, kIndexMagic, sizeof(kIndexMagic)) != 0) {
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
  if (h.sections > kMaxSections || settings_size > kIndexMaxSettingsBytes ||
      h.header_size != kIndexHeaderBytes + h.sections * kIndexSectionEntryBytes + settings_size ||
      h.header_size > file.size()) {
    return corrupt("header size " + std::to_string(h.header_size) + " inconsistent (truncated?)");
  }
  if (HeaderChecksum(p, h.header_size) != GetLittleEndian<uint64_t>(p, kIndexChecksumOffset)) {
    return corrupt("header checksum mismatch");
  }
  h.kind = h.version == 1 ? kIndexFingerprints : GetLittleEndian<uint32_t>(p, kIndexKindOffset);
  if (h.kind != kIndexFingerprints && h.kind != kIndexSignatures) {
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
    PutLittleEndian<uint64_t>(&header, at + 24, XXH3_64bits(section.data, section.bytes));
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
    zeros.assign(offsets[s] - position, '\0');
    out->Write(zeros);
    out->Write(std::string_view(static_cast<const char*>(sections[s].data), sections[s].bytes));
    position = offsets[s] + sections[s].bytes;
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
  const uint8_t* p = file.data();
  uint64_t position = header.header_size;
  for (uint32_t s = 0; s < header.sections; ++s) {
    const size_t at = kIndexHeaderBytes + s * kIndexSectionEntryBytes;
    const uint64_t offset = GetLittleEndian<uint64_t>(p, at + 8);
    const uint64_t size = GetLittleEndian<uint64_t>(p, at + 16);
    if (offset < position || offset - position >= kIndexSectionAlignment || offset > file.size() ||
        size > file.size() - offset) {
      return Status::Corruption(path + ": section " + std::to_string(s) + " at byte " +
                                std::to_string(offset) +
                                " is misplaced or runs past the end (truncated?)");
    }
    for (uint64_t b = position; b < offset; ++b) {
      if (p[b] != 0) {
        return Status::Corruption(path + ": non-zero padding at byte " + std::to_string(b));
      }
    }
    position = offset + size;
  }
  if (position != file.size()) {
    return Status::Corruption(path + ": " + std::to_string(file.size() - position) +
                              " unexpected bytes after the last section");
  }
  return Status::OK();
}

}  // namespace neardup::index_internal
