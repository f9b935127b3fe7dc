#include "store/redis_layout.h"

#include <xxhash.h>

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstring>
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

void PutVarint(uint64_t value, std::string* out) {
  while (value >= 0x80) {
    out->push_back(static_cast<char>((value & 0x7F) | 0x80));
    value >>= 7;
  }
  out->push_back(static_cast<char>(value));
}

bool GetVarint(std::string_view in, size_t* pos, uint64_t* value) {
  uint64_t v = 0;
  for (int shift = 0; shift < 64 && *pos < in.size(); shift += 7) {
    const auto byte = static_cast<unsigned char>(in[(*pos)++]);
    v |= uint64_t{byte & 0x7Fu} << shift;
    if ((byte & 0x80) == 0) {
      *value = v;
      return true;
    }
  }
  return false;
}

// Bits written and read least significant first.
class BitWriter {
 public:
  explicit BitWriter(std::string* out) : out_(out) {}
  void Put(uint64_t value, int bits) {
    for (int i = 0; i < bits; ++i) PutBit((value >> i) & 1);
  }
  void PutBit(uint64_t bit) {
    if (used_ == 0) out_->push_back(0);
    out_->back() = static_cast<char>(static_cast<unsigned char>(out_->back()) | (bit << used_));
    used_ = (used_ + 1) & 7;
  }

 private:
  std::string* out_;
  int used_ = 0;
};

// Reads bits through a 64-bit buffer whose bits above `avail_` are zero.
class BitReader {
 public:
  BitReader(std::string_view in, size_t pos)
      : p_(reinterpret_cast<const unsigned char*>(in.data()) + pos),
        end_(reinterpret_cast<const unsigned char*>(in.data()) + in.size()) {}
  // `bits` <= 64.
  bool Get(int bits, uint64_t* value) {
    if (bits > 32) {
      uint64_t low = 0;
      uint64_t high = 0;
      if (!GetShort(32, &low) || !GetShort(bits - 32, &high)) return false;
      *value = low | (high << 32);
      return true;
    }
    return GetShort(bits, value);
  }
  // `bits` <= 32.
  bool GetShort(int bits, uint64_t* value) {
    if (bits > avail_) {
      Refill();
      if (bits > avail_) return false;
    }
    *value = buf_ & ((uint64_t{1} << bits) - 1);
    Consume(bits);
    return true;
  }
  // A run of 1 bits ended by a 0 bit, at most `limit` long.
  bool GetUnary(uint64_t limit, uint64_t* count) {
    uint64_t n = 0;
    for (;;) {
      if (avail_ < 32) Refill();
      if (avail_ == 0) return false;
      const int ones = std::countr_one(buf_);  // <= avail_: the bits above are zero
      if (ones < avail_) {
        n += static_cast<uint64_t>(ones);
        Consume(ones + 1);
        *count = n;
        return n <= limit;
      }
      n += static_cast<uint64_t>(avail_);
      Consume(avail_);
      if (n > limit) return false;
    }
  }
  // A gap of the fast path: when the buffer holds a whole entry of a run of ones, a zero, `rice`
  // and `width` bits (rice + width <= 56), takes it and returns true.
  bool GetEntry(int rice, int width, uint64_t* q, uint64_t* r, uint64_t* value) {
    if (avail_ < 57) Refill();
    const int ones = std::countr_one(buf_);
    const int bits = rice + width;
    if (ones + 1 + bits > avail_) return false;
    const uint64_t x = buf_ >> (ones + 1);
    *q = static_cast<uint64_t>(ones);
    *r = x & ((uint64_t{1} << rice) - 1);
    *value = (x >> rice) & ((uint64_t{1} << width) - 1);
    Consume(ones + 1 + bits);
    return true;
  }
  size_t left() const { return static_cast<size_t>(end_ - p_) * 8 + static_cast<size_t>(avail_); }

 private:
  void Consume(int bits) {
    buf_ = bits >= 64 ? 0 : buf_ >> bits;
    avail_ -= bits;
  }
  void Refill() {
    if (avail_ > 56) return;
    if (end_ - p_ >= 8) {
      uint64_t word = 0;
      std::memcpy(&word, p_, 8);
      if constexpr (std::endian::native == std::endian::big) word = __builtin_bswap64(word);
      const int take = (64 - avail_) / 8;
      if (take < 8) word &= (uint64_t{1} << (8 * take)) - 1;
      buf_ |= word << avail_;
      p_ += take;
      avail_ += 8 * take;
      return;
    }
    while (avail_ <= 56 && p_ < end_) {
      buf_ |= uint64_t{*p_++} << avail_;
      avail_ += 8;
    }
  }

  const unsigned char* p_;
  const unsigned char* end_;
  uint64_t buf_ = 0;
  int avail_ = 0;
};

// The Rice parameter that codes the gaps in the fewest bits.
int RiceParameter(std::span<const BucketEntry> entries) {
  int best = 0;
  uint64_t best_bits = ~uint64_t{0};
  for (int k = 0; k < 32; ++k) {
    uint64_t bits = 0;
    for (size_t i = 1; i < entries.size(); ++i) {
      bits += ((uint64_t{entries[i].docnum} - entries[i - 1].docnum - 1) >> k) + 1 + k;
    }
    if (bits < best_bits) {
      best_bits = bits;
      best = k;
    }
  }
  return best;
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

std::string RedisLayout::IdField(uint64_t docnum) { return std::to_string(docnum % kIdsPerHash); }

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

std::string RedisLayout::PackedKeyOfId(uint64_t bucket_id) const {
  return prefix + ":c:{b" + std::to_string(bucket_id >> 32) + "." +
         std::to_string(bucket_id & 0xFFFFFFFF) + "}";
}

bool RedisLayout::BucketIdOfKey(std::string_view key, uint64_t* bucket_id) const {
  if (key.size() < prefix.size() + 6 || key.substr(0, prefix.size()) != prefix) return false;
  key.remove_prefix(prefix.size());
  if ((key.substr(0, 5) != ":b:{b" && key.substr(0, 5) != ":c:{b") || key.back() != '}') {
    return false;
  }
  key = key.substr(5, key.size() - 6);
  const size_t dot = key.find('.');
  if (dot == std::string_view::npos) return false;
  uint32_t table = 0;
  uint32_t bucket = 0;
  const char* end = key.data() + dot;
  auto [p1, e1] = std::from_chars(key.data(), end, table);
  if (e1 != std::errc() || p1 != end) return false;
  end = key.data() + key.size();
  auto [p2, e2] = std::from_chars(key.data() + dot + 1, end, bucket);
  if (e2 != std::errc() || p2 != end) return false;
  *bucket_id = (uint64_t{table} << 32) | bucket;
  return true;
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

void RedisLayout::UnpackAppended(std::string_view bucket, std::vector<BucketEntry>* out) const {
  const size_t bytes = entry_bytes();
  const uint64_t mask = accurate ? (uint64_t{1} << value_bits()) - 1 : ~uint64_t{0};
  for (size_t e = 0; e + bytes <= bucket.size(); e += bytes) {
    BucketEntry entry;
    entry.value = GetLittleEndian(bucket, e, accurate ? 3 : 8) & mask;
    entry.docnum = static_cast<uint32_t>(GetLittleEndian(bucket, e + bytes - 4, 4));
    out->push_back(entry);
  }
}

std::string RedisLayout::Pack(std::span<const BucketEntry> entries) const {
  std::string out;
  if (entries.empty()) return out;
  const int rice = RiceParameter(entries);
  PutVarint(entries.size(), &out);
  PutVarint(entries[0].docnum, &out);
  out.push_back(static_cast<char>(rice));
  BitWriter bits(&out);
  const int width = value_bits();
  for (size_t i = 0; i < entries.size(); ++i) {
    if (i > 0) {
      const uint64_t gap = uint64_t{entries[i].docnum} - entries[i - 1].docnum - 1;
      for (uint64_t q = gap >> rice; q > 0; --q) bits.PutBit(1);
      bits.PutBit(0);
      bits.Put(gap, rice);
    }
    bits.Put(entries[i].value, width);
  }
  return out;
}

namespace {

// Calls visit(value, docnum) for each entry of a packed bucket, in order; an error (Corruption
// without the key) when it does not decode, possibly after some calls.
template <typename Visit>
Status DecodePacked(std::string_view packed, int width, Visit visit) {
  auto corrupt = [&](const std::string& what) {
    return Status::Corruption("a packed bucket of " + std::to_string(packed.size()) +
                              " bytes: " + what);
  };
  size_t pos = 0;
  uint64_t n = 0;
  uint64_t first = 0;
  if (!GetVarint(packed, &pos, &n) || !GetVarint(packed, &pos, &first) || pos >= packed.size()) {
    return corrupt("its header is cut short");
  }
  const int rice = static_cast<unsigned char>(packed[pos++]);
  if (n == 0) return corrupt("it holds no entry");
  if (first > UINT32_MAX) return corrupt("its first document number is out of range");
  if (rice > 31) return corrupt("its gap parameter " + std::to_string(rice) + " is over 31");
  BitReader bits(packed, pos);
  // Every entry takes at least `width` bits: a count above that is damage, found before anything
  // is allocated.
  if (n > bits.left() / static_cast<size_t>(width)) return corrupt("its count is too large");
  uint64_t docnum = first;
  uint64_t value = 0;
  if (!bits.Get(width, &value)) return corrupt("an entry is cut short");
  visit(value, static_cast<uint32_t>(docnum));
  const bool fast = rice + width <= 56;
  for (uint64_t i = 1; i < n; ++i) {
    uint64_t q = 0;
    uint64_t r = 0;
    if (!fast || !bits.GetEntry(rice, width, &q, &r, &value)) {
      if (!bits.GetUnary(UINT32_MAX, &q) || !bits.Get(rice, &r) || !bits.Get(width, &value)) {
        return corrupt("an entry is cut short");
      }
    }
    docnum += ((q << rice) | r) + 1;
    if (docnum > UINT32_MAX) return corrupt("a document number is out of range");
    visit(value, static_cast<uint32_t>(docnum));
  }
  if (bits.left() >= 8) return corrupt("bytes follow its last entry");
  return Status::OK();
}

}  // namespace

Status RedisLayout::Unpack(std::string_view packed, std::vector<BucketEntry>* out) const {
  const size_t was = out->size();
  const Status status = DecodePacked(packed, value_bits(), [&](uint64_t value, uint32_t docnum) {
    out->push_back({value, docnum});
  });
  if (!status.ok()) out->resize(was);
  return status;
}

Status RedisLayout::PackedMatches(int table, uint64_t value, std::string_view packed,
                                  std::vector<std::pair<uint32_t, int>>* out) const {
  out->clear();
  Status status;
  if (accurate) {
    const uint64_t residual = value & ((uint64_t{1} << value_bits()) - 1);
    status = DecodePacked(packed, value_bits(), [&](uint64_t v, uint32_t docnum) {
      if (v == residual) out->push_back({docnum, 0});
    });
  } else {
    const uint64_t block = Block(table, value);
    status = DecodePacked(packed, value_bits(), [&](uint64_t v, uint32_t docnum) {
      if (Block(table, v) != block) return;
      const int distance = std::popcount(v ^ value);
      if (distance <= k) out->push_back({docnum, distance});
    });
  }
  if (!status.ok()) out->clear();
  return status;
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
