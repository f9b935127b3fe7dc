#include "store/record.h"

#include <xxhash.h>

#include <cstring>

namespace neardup::store {
namespace {

void PutLittleEndian(uint64_t value, int bytes, std::string* out) {
  for (int i = 0; i < bytes; ++i) out->push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

uint64_t GetLittleEndian(const char* p, int bytes) {
  uint64_t value = 0;
  for (int i = 0; i < bytes; ++i) value |= uint64_t{static_cast<uint8_t>(p[i])} << (8 * i);
  return value;
}

// Reads the fields of a record front to back; any read past the end marks it failed.
class RecordReader {
 public:
  explicit RecordReader(std::string_view bytes) : rest_(bytes) {}
  uint64_t Fixed(int bytes) {
    if (!Has(static_cast<size_t>(bytes))) return 0;
    const uint64_t value = GetLittleEndian(rest_.data(), bytes);
    rest_.remove_prefix(static_cast<size_t>(bytes));
    return value;
  }
  std::string_view Bytes(size_t size) {
    if (!Has(size)) return {};
    std::string_view value = rest_.substr(0, size);
    rest_.remove_prefix(size);
    return value;
  }
  bool failed() const { return failed_; }
  size_t remaining() const { return rest_.size(); }

 private:
  bool Has(size_t size) {
    if (failed_ || rest_.size() < size) failed_ = true;
    return !failed_;
  }
  std::string_view rest_;
  bool failed_ = false;
};

constexpr uint8_t kEmptyFlag = 1;

}  // namespace

std::string RowKey(uint64_t row) {
  std::string key(8, '\0');
  for (int i = 0; i < 8; ++i)
    key[static_cast<size_t>(i)] = static_cast<char>((row >> (56 - 8 * i)) & 0xff);
  return key;
}

std::optional<uint64_t> ParseRowKey(std::string_view key) {
  if (key.size() != 8) return std::nullopt;
  uint64_t row = 0;
  for (char c : key) row = (row << 8) | static_cast<uint8_t>(c);
  return row;
}

std::string EncodeFixed64(uint64_t value) {
  std::string out;
  PutLittleEndian(value, 8, &out);
  return out;
}

std::string EncodeFixed32(uint32_t value) {
  std::string out;
  PutLittleEndian(value, 4, &out);
  return out;
}

std::optional<uint64_t> DecodeFixed64(std::string_view bytes) {
  if (bytes.size() != 8) return std::nullopt;
  return GetLittleEndian(bytes.data(), 8);
}

std::optional<uint32_t> DecodeFixed32(std::string_view bytes) {
  if (bytes.size() != 4) return std::nullopt;
  return static_cast<uint32_t>(GetLittleEndian(bytes.data(), 4));
}

std::string EncodeSnapshotRef(const SnapshotRef& ref) {
  return EncodeFixed64(ref.rows) + EncodeFixed64(ref.removals) + ref.file;
}

std::optional<SnapshotRef> DecodeSnapshotRef(std::string_view bytes) {
  if (bytes.size() < 17) return std::nullopt;
  SnapshotRef ref;
  ref.rows = *DecodeFixed64(bytes.substr(0, 8));
  ref.removals = *DecodeFixed64(bytes.substr(8, 8));
  ref.file = std::string(bytes.substr(16));
  if (ref.file != SnapshotFileName(ref.rows, ref.removals)) return std::nullopt;
  return ref;
}

std::string SnapshotFileName(uint64_t rows, uint64_t removals) {
  return std::string(kSnapshotPrefix) + std::to_string(rows) + "-" + std::to_string(removals) +
         ".ndx";
}

uint32_t SettingsStamp(std::string_view settings_line) {
  return XXH32(settings_line.data(), settings_line.size(), 0);
}

std::string EncodeDocument(std::string_view id, const Signature& signature,
                           uint32_t settings_stamp) {
  std::string out;
  out.reserve(24 + id.size() + signature.sketch.size() + 4 * signature.band_keys.size());
  out.push_back(static_cast<char>(kRecordVersion));
  out.push_back(static_cast<char>(signature.empty ? kEmptyFlag : 0));
  PutLittleEndian(settings_stamp, 4, &out);
  PutLittleEndian(id.size(), 2, &out);
  out.append(id);
  PutLittleEndian(signature.simhash, 8, &out);
  PutLittleEndian(signature.sketch.size(), 4, &out);
  out.append(reinterpret_cast<const char*>(signature.sketch.data()), signature.sketch.size());
  PutLittleEndian(signature.band_keys.size(), 4, &out);
  for (uint32_t key : signature.band_keys) PutLittleEndian(key, 4, &out);
  return out;
}

Status DecodeDocument(std::string_view record, uint32_t stamp, size_t sketch_bytes, size_t bands,
                      DecodedDocument* document) {
  RecordReader reader(record);
  const uint64_t version = reader.Fixed(1);
  const uint64_t flags = reader.Fixed(1);
  const uint64_t record_stamp = reader.Fixed(4);
  if (reader.failed())
    return Status::Corruption("document record of " + std::to_string(record.size()) + " bytes");
  if (version != kRecordVersion) {
    return Status::Corruption("document record version " + std::to_string(version) + " (expected " +
                              std::to_string(kRecordVersion) + ")");
  }
  if ((flags & ~uint64_t{kEmptyFlag}) != 0) {
    return Status::Corruption("document record with unknown flags " + std::to_string(flags));
  }
  if (record_stamp != stamp) {
    return Status::Corruption("document record written under other settings (stamp " +
                              std::to_string(record_stamp) + ", the store's is " +
                              std::to_string(stamp) + ")");
  }
  document->id = reader.Bytes(reader.Fixed(2));
  Signature& signature = document->signature;
  signature.empty = (flags & kEmptyFlag) != 0;
  signature.simhash = reader.Fixed(8);
  const uint64_t sketch_size = reader.Fixed(4);
  if (!reader.failed() && sketch_size != sketch_bytes) {
    return Status::Corruption("document record with a sketch of " + std::to_string(sketch_size) +
                              " bytes (expected " + std::to_string(sketch_bytes) + ")");
  }
  const std::string_view sketch = reader.Bytes(sketch_size);
  signature.sketch.assign(sketch.begin(), sketch.end());
  const uint64_t band_count = reader.Fixed(4);
  if (!reader.failed() && band_count != bands) {
    return Status::Corruption("document record with " + std::to_string(band_count) +
                              " band keys (expected " + std::to_string(bands) + ")");
  }
  signature.band_keys.resize(reader.failed() ? 0 : band_count);
  for (uint32_t& key : signature.band_keys) key = static_cast<uint32_t>(reader.Fixed(4));
  if (reader.failed()) return Status::Corruption("document record cut short");
  if (document->id.empty()) return Status::Corruption("document record with an empty id");
  if (reader.remaining() != 0) {
    return Status::Corruption("document record with " + std::to_string(reader.remaining()) +
                              " trailing bytes");
  }
  return Status::OK();
}

}  // namespace neardup::store
