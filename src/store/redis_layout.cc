#include "store/redis_layout.h"

#include <xxhash.h>

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <ctime>

namespace neardup::store_internal {
namespace {

// A record chunk is one Redis string of chunk_documents records, created whole (all zeros) and
// then written in place: it stays in one allocation of 128 KiB (the string's header included).
constexpr uint64_t kChunkBytes = (uint64_t{128} << 10) - 16;
constexpr uint64_t kIdsPerHash = 128;  // docnum -> id and attachment hashes (listpack-sized)

void PutLittleEndian(uint64_t value, int bytes, std::string* out) {
  for (int i = 0; i < bytes; ++i) out->push_back(static_cast<char>((value >> (8 * i)) & 0xFF));
}

uint64_t GetLittleEndian(std::string_view bytes, size_t offset, int n) {
  uint64_t value = 0;
  for (int i = n - 1; i >= 0; --i) {
    value = (value << 8) | static_cast<unsigned char>(bytes[offset + i]);
  }
  return value;
}

int BitsFor(uint64_t expected, uint64_t per_bucket, int low, int high) {
  const double buckets = std::max(1.0, static_cast<double>(expected) / per_bucket);
  const int bits = static_cast<int>(std::lround(std::log2(buckets)));
  return std::clamp(bits, low, high);
}

Result<int64_t> ParseField(const std::map<std::string, std::string>& meta, const std::string& name,
                           const std::string& prefix, int64_t low, int64_t high) {
  auto it = meta.find(name);
  if (it == meta.end()) {
    return Status::Corruption(prefix + ": the index's meta hash has no field '" + name + "'");
  }
  int64_t value = 0;
  const char* end = it->second.data() + it->second.size();
  auto [ptr, ec] = std::from_chars(it->second.data(), end, value);
  if (ec != std::errc() || ptr != end || value < low || value > high) {
    return Status::Corruption(prefix + ": the index's meta field '" + name + "' is '" + it->second +
                              "', not a number in " + std::to_string(low) + ".." +
                              std::to_string(high));
  }
  return value;
}

}  // namespace

std::string RecordHeader::Encode() const {
  std::string out;
  out.push_back(static_cast<char>(static_cast<uint8_t>(state) | (empty ? kRecordEmptyFlag : 0)));
  PutLittleEndian(blocker, 4, &out);
  PutLittleEndian(lease & 0xFFFFFF, 3, &out);
  return out;
}

RecordHeader RecordHeader::Decode(std::string_view bytes) {
  RecordHeader header;
  if (bytes.size() < kRecordHeaderBytes) return header;
  const auto first = static_cast<uint8_t>(bytes[0]);
  header.state = static_cast<RecordState>(first & 0x0F);
  header.empty = (first & kRecordEmptyFlag) != 0;
  header.blocker = static_cast<uint32_t>(GetLittleEndian(bytes, 1, 4));
  header.lease = static_cast<uint32_t>(GetLittleEndian(bytes, 5, 3));
  return header;
}

bool RecordHeader::Expired(uint32_t now) const {
  // The difference modulo 2^24, read as signed: leases are seconds, the clock wraps every 194 days.
  const int32_t left = static_cast<int32_t>(((lease - now) & 0xFFFFFF) << 8) >> 8;
  return left < 0;
}

uint32_t LeaseClock() { return static_cast<uint32_t>(std::time(nullptr)) & 0xFFFFFF; }

RedisLayout RedisLayout::ForNewIndex(std::string prefix, const DocumentSigner& signer,
                                     uint64_t expected) {
  if (expected == 0) expected = 1000000;
  RedisLayout layout;
  layout.prefix = std::move(prefix);
  layout.settings = signer.settings();
  layout.accurate = signer.method() == DedupMethod::kAccurate;
  if (layout.accurate) {
    layout.tables = static_cast<int>(signer.bands());
    layout.sketch_bytes = signer.sketch_bytes();
    // About 256 entries (1.75 KB) a bucket: a query reads one bucket a band.
    layout.bucket_bits = BitsFor(expected, 256, 8, 24);
    layout.record_bytes = kRecordHeaderBytes + 8 + layout.sketch_bytes;
  } else {
    layout.k = signer.options().k;
    layout.tables = layout.k + 1;
    layout.bucket_bits = BitsFor(expected, 256, 1, 24);
    layout.record_bytes = kRecordHeaderBytes + 8;
  }
  layout.id_bucket_bits = BitsFor(expected, 64, 4, 24);
  layout.chunk_documents = kChunkBytes / layout.record_bytes;
  return layout;
}

std::vector<std::pair<std::string, std::string>> RedisLayout::MetaFields() const {
  return {
      {"layout", std::string(kRedisLayoutName)},
      {"version", std::to_string(kRedisLayoutVersion)},
      {"settings", settings},
      {"bucket_bits", std::to_string(bucket_bits)},
      {"id_bucket_bits", std::to_string(id_bucket_bits)},
      {"record_bytes", std::to_string(record_bytes)},
      {"chunk_documents", std::to_string(chunk_documents)},
      {"created", std::to_string(std::time(nullptr))},
  };
}

Result<RedisLayout> RedisLayout::FromMeta(std::string prefix,
                                          const std::map<std::string, std::string>& meta) {
  auto layout_name = meta.find("layout");
  if (layout_name == meta.end() || layout_name->second != kRedisLayoutName) {
    return Status::Corruption(prefix + ": the keys under this prefix are not a neardup index (" +
                              prefix + ":{meta} has no layout '" + std::string(kRedisLayoutName) +
                              "')");
  }
  auto version = ParseField(meta, "version", prefix, 1, 1000000);
  if (!version.ok()) return version.status();
  if (*version != kRedisLayoutVersion) {
    return Status::FailedPrecondition(prefix + ": the index has layout version " +
                                      std::to_string(*version) + "; this neardup reads version " +
                                      std::to_string(kRedisLayoutVersion));
  }
  auto settings = meta.find("settings");
  if (settings == meta.end()) {
    return Status::Corruption(prefix + ": the index's meta hash has no field 'settings'");
  }
  auto options = ParseSettingsLine(settings->second);
  if (!options.ok()) return options.status().WithContext(prefix + ": the index's settings");
  auto signer = DocumentSigner::Create(*options);
  if (!signer.ok()) return signer.status().WithContext(prefix + ": the index's settings");
  auto bucket_bits = ParseField(meta, "bucket_bits", prefix, 1, 24);
  auto id_bucket_bits = ParseField(meta, "id_bucket_bits", prefix, 1, 24);
  if (!bucket_bits.ok()) return bucket_bits.status();
  if (!id_bucket_bits.ok()) return id_bucket_bits.status();
  RedisLayout layout = ForNewIndex(std::move(prefix), **signer, 0);
  layout.bucket_bits = static_cast<int>(*bucket_bits);
  layout.id_bucket_bits = static_cast<int>(*id_bucket_bits);
  if (layout.accurate && layout.bucket_bits < 8) {
    return Status::Corruption(layout.prefix + ": bucket_bits " + std::to_string(*bucket_bits) +
                              " is below 8 for the accurate method");
  }
  auto record_bytes = ParseField(meta, "record_bytes", layout.prefix, 1, 1 << 20);
  auto chunk_documents = ParseField(meta, "chunk_documents", layout.prefix, 1, 1 << 30);
  if (!record_bytes.ok()) return record_bytes.status();
  if (!chunk_documents.ok()) return chunk_documents.status();
  if (static_cast<size_t>(*record_bytes) != layout.record_bytes) {
    return Status::Corruption(layout.prefix + ": record_bytes " + std::to_string(*record_bytes) +
                              " does not fit the settings (" + std::to_string(layout.record_bytes) +
                              ")");
  }
  layout.chunk_documents = static_cast<uint64_t>(*chunk_documents);
  return layout;
}

std::string RedisLayout::MetaKey() const { return prefix + ":{meta}"; }

std::string RedisLayout::ChunkKey(uint64_t docnum) const {
  return prefix + ":r:{r" + std::to_string(docnum / chunk_documents) + "}";
}

uint64_t RedisLayout::RecordOffset(uint64_t docnum) const {
  return (docnum % chunk_documents) * record_bytes;
}

std::string RedisLayout::IdsKey(uint64_t docnum) const {
  return prefix + ":i:{i" + std::to_string(docnum / kIdsPerHash) + "}";
}

std::string RedisLayout::AttachmentsKey(uint64_t docnum) const {
  return prefix + ":a:{a" + std::to_string(docnum / kIdsPerHash) + "}";
}

std::string RedisLayout::NamesKey(std::string_view id) const {
  const uint64_t h = XXH3_64bits(id.data(), id.size()) >> (64 - id_bucket_bits);
  return prefix + ":n:{n" + std::to_string(h) + "}";
}

int RedisLayout::BlockBits(int table) const {
  const int base = 64 / tables;
  return base + (table < 64 % tables ? 1 : 0);
}

uint64_t RedisLayout::Block(int table, uint64_t fingerprint) const {
  int shift = 64;
  for (int t = 0; t <= table; ++t) shift -= BlockBits(t);
  const int bits = BlockBits(table);
  const uint64_t mask = bits == 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
  return (fingerprint >> shift) & mask;
}

uint64_t RedisLayout::BucketId(int table, uint64_t value) const {
  uint64_t bucket = 0;
  if (accurate) {
    bucket = static_cast<uint32_t>(value) >> (32 - bucket_bits);
  } else {
    const int bits = BlockBits(table);
    const int used = std::min(bucket_bits, bits);
    bucket = Block(table, value) >> (bits - used);
  }
  return (static_cast<uint64_t>(table) << 32) | bucket;
}

std::string RedisLayout::BucketKeyOfId(uint64_t bucket_id) const {
  return prefix + ":b:{b" + std::to_string(bucket_id >> 32) + "." +
         std::to_string(bucket_id & 0xFFFFFFFF) + "}";
}

std::string RedisLayout::BucketKey(int table, uint64_t value) const {
  return BucketKeyOfId(BucketId(table, value));
}

void RedisLayout::AppendEntry(int table, uint64_t value, uint32_t docnum, std::string* out) const {
  (void)table;
  if (accurate) {
    PutLittleEndian(value & 0xFFFFFF, 3, out);
  } else {
    PutLittleEndian(value, 8, out);
  }
  PutLittleEndian(docnum, 4, out);
}

std::string RedisLayout::EncodeRecord(const RecordHeader& header,
                                      const Signature& signature) const {
  std::string out = header.Encode();
  out.reserve(record_bytes);
  PutLittleEndian(signature.simhash, 8, &out);
  if (accurate) out.append(reinterpret_cast<const char*>(signature.sketch.data()), sketch_bytes);
  return out;
}

}  // namespace neardup::store_internal
