// Internal: what every index file shares (doc/index_format.md): the file's bytes, the common header
// fields (magic, version, kind, settings line, checksum), the section table and its tiling. The
// fingerprint files (index_file.cc, index_loader.cc) and the signature files (signature_file.cc)
// add their own header fields and sections.
#ifndef NEARDUP_INDEX_INDEX_FILE_IO_H_
#define NEARDUP_INDEX_INDEX_FILE_IO_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "neardup/status.h"

namespace neardup {
class OutputFile;
}

namespace neardup::index_internal {

template <typename T>
T GetLittleEndian(const uint8_t* in, size_t offset) {
  T value;
  std::memcpy(&value, in + offset, sizeof(T));
  return value;
}

template <typename T>
void PutLittleEndian(std::string* out, size_t offset, T value) {
  std::memcpy(out->data() + offset, &value, sizeof(T));
}

// The file's bytes: a private read-only mapping, or a heap copy aligned for uint64_t.
class FileBytes {
 public:
  FileBytes() = default;
  FileBytes(const FileBytes&) = delete;
  FileBytes& operator=(const FileBytes&) = delete;
  ~FileBytes();

  // NotFound / IOError naming the path; Corruption for an empty file.
  static Result<std::shared_ptr<FileBytes>> Open(const std::string& path, bool map);

  const uint8_t* data() const { return static_cast<const uint8_t*>(data_); }
  size_t size() const { return size_; }
  bool mapped() const { return mapped_; }

 private:
  Status Read(int fd, const std::string& path, bool map);

  void* data_ = nullptr;
  size_t size_ = 0;
  bool mapped_ = false;
  std::vector<uint64_t> heap_;
};

// The header fields every kind of file has, as read. A version-1 file is kIndexFingerprints with
// no settings.
struct CommonHeader {
  uint32_t version = 0;
  uint32_t kind = 0;     // IndexFileKindCode
  std::string settings;  // the settings line; empty when unknown
  uint64_t count = 0;    // documents (fingerprint files: fingerprints)
  uint32_t sections = 0;
  uint32_t header_size = 0;  // bytes before the first section's padding
};

// Checks the magic, the version, the header size, the header checksum, the kind and the settings
// line. Corruption naming the path (and a version this build does not read).
Result<CommonHeader> ParseCommonHeader(const FileBytes& file, const std::string& path);

// A section as written.
struct SectionToWrite {
  uint32_t kind = 0;
  uint32_t table = 0;
  const void* data = nullptr;
  size_t bytes = 0;
};

// Writes a version-2 file: `header_fields` receives the 128-byte header to fill bytes 16..39
// (kind-specific); the common fields, the section table, the settings line, the sections (64-byte
// aligned, zero padding) and the checksums are written here. Returns out->status().
Status WriteIndexFile(uint32_t kind, std::string_view settings, uint64_t count,
                      const std::function<void(std::string*)>& header_fields,
                      const std::vector<SectionToWrite>& sections, OutputFile* out);

// The bytes of section s, checked against its expected kind, table, size and (optionally) checksum.
Result<const uint8_t*> SectionData(const FileBytes& file, const std::string& path, uint32_t s,
                                   uint32_t kind, uint32_t table, uint64_t bytes, bool verify);

// The sections must tile the file after the header: in order, 64-byte aligned, zero padding between
// them, nothing after.
Status CheckTiling(const FileBytes& file, const std::string& path, const CommonHeader& header);

}  // namespace neardup::index_internal

#endif  // NEARDUP_INDEX_INDEX_FILE_IO_H_
