// Internal: cache files of parsed data (doc/segment.md, "Cache files").
//
// A cache file holds an object built from source files (e.g. jieba's dictionary) so that a later
// process can load it with a few large reads instead of parsing. It is used only when its key,
// which covers the path, size and XXH3-64 of every source file and the format version, matches the
// sources exactly, and when its checksum is right; anything else (missing, truncated, damaged, of
// another version, written for other sources) makes the reader give up, and the caller parses the
// sources. Files are written to a temporary name and renamed into place, so concurrent readers and
// writers never see a partial file.
//
// Layout: the 16-byte prefix (magic "NDUPCACH", u32 version, u32 byte-order mark), then blobs (u64
// length + bytes): the kind, the key, then the object's own blobs; then the u64 XXH3-64 of every
// byte before it. Integers are in the host's byte order; the mark rejects a file of another order.
#ifndef NEARDUP_UTIL_CACHE_FILE_H_
#define NEARDUP_UTIL_CACHE_FILE_H_

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "neardup/status.h"

struct XXH3_state_s;

namespace neardup::util_internal {

inline constexpr uint32_t kCacheFormatVersion = 1;

// The cache directory: $NEARDUP_CACHE_DIR, else $XDG_CACHE_HOME/neardup, else $HOME/.cache/neardup
// (a variable set to the empty string counts as unset). Empty when none of them is set.
std::string CacheDirectory();

// What a cached object was built from. The file name depends on the kind and the paths only, so a
// changed source replaces its old cache file instead of adding one.
class CacheKey {
 public:
  explicit CacheKey(std::string_view kind);

  // Adds a source file: its path, size and the XXH3-64 of its bytes. Errors when it cannot be read.
  Status AddFile(const std::string& path);
  // Adds any other text that the object depends on (e.g. the key of an object it was joined with).
  void AddText(std::string_view text);

  const std::string& kind() const { return kind_; }
  // Everything the key covers, compared byte for byte with the key stored in a cache file.
  const std::string& material() const { return material_; }
  // "<kind>-<16 hex digits>.bin".
  std::string FileName() const;

 private:
  std::string kind_;
  std::string identity_;  // kind and paths
  std::string material_;  // kind, version, paths, sizes and content hashes
};

// Reads a cache file. Every Read* returns false once anything is wrong (short file, a length beyond
// the end); the data read is trustworthy only after Finish() returns true.
class CacheReader {
 public:
  // Opens `path` and checks the prefix, the kind and the key; nullptr when they do not match or the
  // file cannot be read.
  static std::unique_ptr<CacheReader> Open(const std::string& path, const CacheKey& key);
  ~CacheReader();

  bool ReadBytes(std::string* out);
  template <typename T>
  bool ReadVector(std::vector<T>* out) {
    static_assert(std::is_trivially_copyable_v<T>);
    uint64_t length;
    if (!ReadLength(&length) || length % sizeof(T) != 0) return false;
    out->resize(length / sizeof(T));
    return ReadRaw(out->data(), length);
  }
  template <typename T>
  bool ReadValue(T* out) {
    static_assert(std::is_trivially_copyable_v<T>);
    uint64_t length;
    return ReadLength(&length) && length == sizeof(T) && ReadRaw(out, sizeof(T));
  }
  // Checks the checksum and that the file ends there.
  bool Finish();

 private:
  CacheReader(std::FILE* file, uint64_t size);
  bool ReadLength(uint64_t* length);
  bool ReadRaw(void* out, uint64_t length);

  std::FILE* file_;
  uint64_t remaining_;
  XXH3_state_s* hash_;
  bool ok_ = true;
};

// Writes a cache file under a temporary name; Commit() renames it into place. Failures are silent
// (Commit returns false): a cache is an optimisation.
class CacheWriter {
 public:
  // nullptr when the directory cannot be created or written.
  static std::unique_ptr<CacheWriter> Create(const std::string& directory, const CacheKey& key);
  ~CacheWriter();  // removes the temporary file unless committed

  void WriteBytes(std::string_view bytes);
  template <typename T>
  void WriteVector(const std::vector<T>& values) {
    static_assert(std::is_trivially_copyable_v<T>);
    WriteBlob(values.data(), values.size() * sizeof(T));
  }
  template <typename T>
  void WriteValue(const T& value) {
    static_assert(std::is_trivially_copyable_v<T>);
    WriteBlob(&value, sizeof(T));
  }
  bool Commit();

 private:
  CacheWriter(std::FILE* file, std::string temporary_path, std::string final_path);
  void WriteBlob(const void* data, uint64_t length);
  void WriteRaw(const void* data, uint64_t length);

  std::FILE* file_;
  std::string temporary_path_;
  std::string final_path_;
  XXH3_state_s* hash_;
  bool ok_ = true;
  bool committed_ = false;
};

// Strings stored as two blobs (their bytes joined, and their lengths), for lists of words.
void WriteStrings(const std::vector<std::string_view>& strings, CacheWriter* writer);
bool ReadStrings(CacheReader* reader, std::vector<std::string>* strings);

}  // namespace neardup::util_internal

#endif  // NEARDUP_UTIL_CACHE_FILE_H_
