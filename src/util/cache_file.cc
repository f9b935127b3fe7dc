#include "util/cache_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <random>

#include "neardup/format.h"

namespace neardup::util_internal {
namespace {

constexpr char kMagic[8] = {'N', 'D', 'U', 'P', 'C', 'A', 'C', 'H'};
constexpr uint32_t kByteOrderMark = 0x01020304;
constexpr size_t kPrefixBytes = 16;

std::string EnvOrEmpty(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? std::string() : std::string(value);
}

// mkdir -p; false when some part cannot be created.
bool MakeDirectories(const std::string& path) {
  for (size_t slash = path.find('/', 1);; slash = path.find('/', slash + 1)) {
    const std::string part = path.substr(0, slash);
    if (!part.empty() && ::mkdir(part.c_str(), 0755) != 0 && errno != EEXIST) return false;
    if (slash == std::string::npos) return true;
  }
}

void AppendField(std::string* out, std::string_view field) {
  const uint64_t length = field.size();
  out->append(reinterpret_cast<const char*>(&length), sizeof length);
  out->append(field);
}

}  // namespace

std::string CacheDirectory() {
  if (std::string dir = EnvOrEmpty("NEARDUP_CACHE_DIR"); !dir.empty()) return dir;
  if (std::string xdg = EnvOrEmpty("XDG_CACHE_HOME"); !xdg.empty()) return xdg + "/neardup";
  if (std::string home = EnvOrEmpty("HOME"); !home.empty()) return home + "/.cache/neardup";
  return {};
}

CacheKey::CacheKey(std::string_view kind) : kind_(kind) {
  AppendField(&identity_, kind);
  AppendField(&material_, kind);
  AppendField(&material_, std::to_string(kCacheFormatVersion));
}

Status CacheKey::AddFile(const std::string& path) {
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) return Status::NotFound("cannot open " + path);
  XXH3_state_t* state = XXH3_createState();
  XXH3_64bits_reset(state);
  std::vector<char> buffer(1 << 16);
  uint64_t size = 0;
  size_t got;
  while ((got = std::fread(buffer.data(), 1, buffer.size(), file)) > 0) {
    XXH3_64bits_update(state, buffer.data(), got);
    size += got;
  }
  const bool failed = std::ferror(file) != 0;
  std::fclose(file);
  const uint64_t hash = XXH3_64bits_digest(state);
  XXH3_freeState(state);
  if (failed) return Status::IOError("cannot read " + path);
  AppendField(&identity_, path);
  AppendField(&material_, path);
  AppendField(&material_, std::string_view(reinterpret_cast<const char*>(&size), sizeof size));
  AppendField(&material_, std::string_view(reinterpret_cast<const char*>(&hash), sizeof hash));
  return Status::OK();
}

void CacheKey::AddText(std::string_view text) {
  AppendField(&identity_, text);
  AppendField(&material_, text);
}

std::string CacheKey::FileName() const {
  std::string name = kind_ + "-";
  AppendHex64(XXH3_64bits(identity_.data(), identity_.size()), &name);
  return name + ".bin";
}

CacheReader::CacheReader(std::FILE* file, uint64_t size)
    : file_(file), remaining_(size), hash_(XXH3_createState()) {
  XXH3_64bits_reset(hash_);
}

CacheReader::~CacheReader() {
  std::fclose(file_);
  XXH3_freeState(hash_);
}

std::unique_ptr<CacheReader> CacheReader::Open(const std::string& path, const CacheKey& key) {
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) return nullptr;
  struct stat info;
  if (::fstat(::fileno(file), &info) != 0 || !S_ISREG(info.st_mode)) {
    std::fclose(file);
    return nullptr;
  }
  std::unique_ptr<CacheReader> reader(new CacheReader(file, static_cast<uint64_t>(info.st_size)));
  char prefix[kPrefixBytes];
  uint32_t version, mark;
  if (!reader->ReadRaw(prefix, kPrefixBytes)) return nullptr;
  std::memcpy(&version, prefix + 8, 4);
  std::memcpy(&mark, prefix + 12, 4);
  if (std::memcmp(prefix, kMagic, 8) != 0 || version != kCacheFormatVersion ||
      mark != kByteOrderMark) {
    return nullptr;
  }
  std::string kind, material;
  if (!reader->ReadBytes(&kind) || kind != key.kind() || !reader->ReadBytes(&material) ||
      material != key.material()) {
    return nullptr;
  }
  return reader;
}

bool CacheReader::ReadRaw(void* out, uint64_t length) {
  if (!ok_ || length > remaining_ || (length > 0 && std::fread(out, 1, length, file_) != length)) {
    ok_ = false;
    return false;
  }
  XXH3_64bits_update(hash_, out, length);
  remaining_ -= length;
  return true;
}

bool CacheReader::ReadLength(uint64_t* length) {
  // A length beyond the end of the file is refused before anything is allocated for it.
  if (!ReadRaw(length, sizeof *length)) return false;
  if (*length > remaining_) ok_ = false;
  return ok_;
}

bool CacheReader::ReadBytes(std::string* out) {
  uint64_t length;
  if (!ReadLength(&length)) return false;
  out->resize(length);
  return ReadRaw(out->data(), length);
}

bool CacheReader::Finish() {
  const uint64_t expected = XXH3_64bits_digest(hash_);
  uint64_t stored;
  if (!ok_ || remaining_ != sizeof stored ||
      std::fread(&stored, 1, sizeof stored, file_) != sizeof stored) {
    return false;
  }
  return stored == expected;
}

CacheWriter::CacheWriter(std::FILE* file, std::string temporary_path, std::string final_path)
    : file_(file),
      temporary_path_(std::move(temporary_path)),
      final_path_(std::move(final_path)),
      hash_(XXH3_createState()) {
  XXH3_64bits_reset(hash_);
}

CacheWriter::~CacheWriter() {
  if (file_ != nullptr) std::fclose(file_);
  if (!committed_) ::unlink(temporary_path_.c_str());
  XXH3_freeState(hash_);
}

std::unique_ptr<CacheWriter> CacheWriter::Create(const std::string& directory,
                                                 const CacheKey& key) {
  if (directory.empty() || !MakeDirectories(directory)) return nullptr;
  const std::string final_path = directory + "/" + key.FileName();
  std::random_device random;
  const std::string temporary_path =
      final_path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(random());
  const int fd = ::open(temporary_path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return nullptr;
  std::FILE* file = ::fdopen(fd, "wb");
  if (file == nullptr) {
    ::close(fd);
    ::unlink(temporary_path.c_str());
    return nullptr;
  }
  std::unique_ptr<CacheWriter> writer(new CacheWriter(file, temporary_path, final_path));
  char prefix[kPrefixBytes];
  std::memcpy(prefix, kMagic, 8);
  std::memcpy(prefix + 8, &kCacheFormatVersion, 4);
  std::memcpy(prefix + 12, &kByteOrderMark, 4);
  writer->WriteRaw(prefix, kPrefixBytes);
  writer->WriteBytes(key.kind());
  writer->WriteBytes(key.material());
  return writer;
}

void CacheWriter::WriteRaw(const void* data, uint64_t length) {
  if (!ok_ || length == 0) return;
  XXH3_64bits_update(hash_, data, length);
  ok_ = std::fwrite(data, 1, length, file_) == length;
}

void CacheWriter::WriteBlob(const void* data, uint64_t length) {
  WriteRaw(&length, sizeof length);
  WriteRaw(data, length);
}

void CacheWriter::WriteBytes(std::string_view bytes) { WriteBlob(bytes.data(), bytes.size()); }

bool CacheWriter::Commit() {
  const uint64_t checksum = XXH3_64bits_digest(hash_);
  if (ok_) ok_ = std::fwrite(&checksum, 1, sizeof checksum, file_) == sizeof checksum;
  const bool closed = std::fclose(file_) == 0;
  file_ = nullptr;
  if (!ok_ || !closed || ::rename(temporary_path_.c_str(), final_path_.c_str()) != 0) return false;
  committed_ = true;
  return true;
}

void WriteStrings(const std::vector<std::string_view>& strings, CacheWriter* writer) {
  std::string joined;
  std::vector<uint32_t> lengths;
  lengths.reserve(strings.size());
  for (std::string_view s : strings) {
    joined.append(s);
    lengths.push_back(static_cast<uint32_t>(s.size()));
  }
  writer->WriteBytes(joined);
  writer->WriteVector(lengths);
}

bool ReadStrings(CacheReader* reader, std::vector<std::string>* strings) {
  std::string joined;
  std::vector<uint32_t> lengths;
  if (!reader->ReadBytes(&joined) || !reader->ReadVector(&lengths)) return false;
  strings->clear();
  strings->reserve(lengths.size());
  size_t offset = 0;
  for (uint32_t length : lengths) {
    if (length > joined.size() - offset) return false;
    strings->emplace_back(joined, offset, length);
    offset += length;
  }
  return offset == joined.size();
}

}  // namespace neardup::util_internal
