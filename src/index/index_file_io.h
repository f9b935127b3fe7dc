// Internal: what every index file shares (doc/index_format.md): the file's bytes, the common header
// fields (magic, version, kind, settings line, checksum), the section table and its tiling. The
// fingerprint files (index_file.cc, index_loader.cc), the signature files (signature_file.cc) and
// the online index files (online/index_snapshot.cc) add their own header fields and sections.
//
// Two ways to read: FileBytes holds the whole file (mapped), for files used in place;
// IndexFileReader reads one section at a time into the caller's memory, for files whose contents
// are copied into structures of their own.
#ifndef NEARDUP_INDEX_INDEX_FILE_IO_H_
#define NEARDUP_INDEX_INDEX_FILE_IO_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <span>
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

// What a fingerprints file records at bytes 60..67 (doc/index_format.md): zero in files of earlier
// builds, which record neither.
struct FingerprintFileFields {
  uint32_t id_names = 0;  // IndexIdNames as a number: 0 not recorded, 1 in the index, 2 INDEX.ids
  int query_k = -1;       // -1: not recorded
};

// The fields of the header at p (of a fingerprints file). Corruption naming the path for values no
// writer gives.
Result<FingerprintFileFields> ParseFingerprintFileFields(const uint8_t* p,
                                                         const CommonHeader& header,
                                                         const std::string& path);

// Receives a section's bytes in pieces, in order.
using SectionSink = std::function<void(std::string_view piece)>;

// A section as written: `bytes` bytes at `data`, or, when `produce` is set, the bytes it hands to
// its sink (for sections not held in memory at once). produce is called twice, once for the
// checksum and once to write, and must hand on the same `bytes` bytes both times; its error stops
// the file.
struct SectionToWrite {
  uint32_t kind = 0;
  uint32_t table = 0;
  const void* data = nullptr;
  size_t bytes = 0;
  std::function<Status(const SectionSink&)> produce = nullptr;
};

// Writes a version-2 file: `header_fields` receives the 128-byte header to fill bytes 16..39
// (kind-specific); the common fields, the section table, the settings line, the sections (64-byte
// aligned, zero padding) and the checksums are written here. Returns out->status(), or the error of
// a section's produce (Internal when it handed on another number of bytes than it said).
Status WriteIndexFile(uint32_t kind, std::string_view settings, uint64_t count,
                      const std::function<void(std::string*)>& header_fields,
                      const std::vector<SectionToWrite>& sections, OutputFile* out);

// The bytes of section s, checked against its expected kind, table, size and (optionally) checksum.
Result<const uint8_t*> SectionData(const FileBytes& file, const std::string& path, uint32_t s,
                                   uint32_t kind, uint32_t table, uint64_t bytes, bool verify);

// The sections must tile the file after the header: in order, 64-byte aligned, zero padding between
// them, nothing after.
Status CheckTiling(const FileBytes& file, const std::string& path, const CommonHeader& header);

// An index file read with pread(), section by section, into the caller's memory: each section's
// entry is checked and its checksum verified as its bytes arrive (while they are in the cache). The
// header and the tiling are checked at Open.
//
// Thread safety: the const methods may be called from several threads at once.
class IndexFileReader {
 public:
  // Opens `path` and checks its common header (ParseCommonHeader) and the tiling of its sections
  // (CheckTiling). NotFound / IOError naming the path; Corruption as those functions give it.
  static Result<std::unique_ptr<IndexFileReader>> Open(const std::string& path);
  ~IndexFileReader();
  IndexFileReader(const IndexFileReader&) = delete;
  IndexFileReader& operator=(const IndexFileReader&) = delete;

  const std::string& path() const { return path_; }
  const CommonHeader& header() const { return header_; }
  // The header, section table and settings line: header().header_size bytes.
  const uint8_t* header_bytes() const { return header_bytes_.data(); }

  // Corruption naming the path and section s unless it is of `kind` and `table` and `bytes` long
  // (at most the file's size): a check before making room for the section.
  Status Expect(uint32_t s, uint32_t kind, uint32_t table, uint64_t bytes) const {
    uint64_t offset = 0, checksum = 0;
    return Entry(s, kind, table, bytes, &offset, &checksum);
  }
  // Reads section s, which must be of `kind` and `table` and `bytes` long, into `into`: spans
  // filled in turn whose sizes add up to `bytes`. Corruption naming the path and the section for
  // another kind, table or size, or a checksum mismatch (the spans then hold the bytes read);
  // IOError when a read fails.
  Status Read(uint32_t s, uint32_t kind, uint32_t table, uint64_t bytes,
              std::span<const std::span<uint8_t>> into) const;
  Status Read(uint32_t s, uint32_t kind, uint32_t table, uint64_t bytes, void* into) const;
  // The same, handing the bytes to `piece` in order, in pieces of at most kPieceBytes read into a
  // buffer of its own; piece's error stops the read. The checksum is known only after the last
  // piece: a Corruption then means the pieces handed on were not the file's.
  static constexpr size_t kPieceBytes = size_t{1} << 20;
  Status ReadInPieces(uint32_t s, uint32_t kind, uint32_t table, uint64_t bytes,
                      const std::function<Status(std::span<const uint8_t>)>& piece) const;

 private:
  IndexFileReader(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  // The entry of section s checked against kind, table and bytes: its offset and checksum.
  Status Entry(uint32_t s, uint32_t kind, uint32_t table, uint64_t bytes, uint64_t* offset,
               uint64_t* checksum) const;
  Status ReadAt(uint64_t offset, size_t size, uint8_t* out) const;

  const int fd_;
  const std::string path_;
  uint64_t size_ = 0;
  CommonHeader header_;
  std::vector<uint8_t> header_bytes_;
};

}  // namespace neardup::index_internal

#endif  // NEARDUP_INDEX_INDEX_FILE_IO_H_
