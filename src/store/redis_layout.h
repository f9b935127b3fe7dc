// The keys and values of an index kept in Redis, version 2 (doc/redis_layout.md is the
// specification; this file is its code). Every key starts with the index's prefix, and the part of
// the key Redis Cluster hashes (its {tag}) spreads the records, ids and buckets over the slots.
#ifndef NEARDUP_STORE_REDIS_LAYOUT_H_
#define NEARDUP_STORE_REDIS_LAYOUT_H_

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "neardup/method.h"
#include "neardup/status.h"

namespace neardup::store_internal {

inline constexpr std::string_view kRedisLayoutName = "neardup-redis";
inline constexpr int kRedisLayoutVersion = 2;

// The state of a record (the low 4 bits of its first byte).
enum class RecordState : uint8_t {
  kFree = 0,      // never written (a record chunk is created all zeros)
  kPending = 1,   // written by a check-and-insert still deciding; lease = its deadline
  kStored = 2,    // a stored document
  kRejected = 3,  // a check-and-insert that found a near-duplicate (or whose lease ran out)
  kRemoved = 4,   // removed
  kBlocked = 5,   // pending, held back by a lower-numbered near-duplicate (`blocker`)
};
inline constexpr uint8_t kRecordEmptyFlag = 0x80;  // a document without features: never matched
inline constexpr size_t kRecordHeaderBytes = 8;

// One entry of a bucket: the bits of the key it holds (kAccurate: the band key's low
// 32 - bucket_bits bits, the rest being the bucket; kSimhash: the whole fingerprint) and the
// document number.
struct BucketEntry {
  uint64_t value = 0;
  uint32_t docnum = 0;
  bool operator==(const BucketEntry&) const = default;
};

// The 8-byte header of a record: state | flags, blocker (u32 LE), lease deadline (u24 LE, seconds
// modulo 2^24).
struct RecordHeader {
  RecordState state = RecordState::kFree;
  bool empty = false;
  uint32_t blocker = 0;
  uint32_t lease = 0;

  std::string Encode() const;
  static RecordHeader Decode(std::string_view bytes);  // fewer than 8 bytes: a free record
  // Whether the lease ran out at `now` (seconds, LeaseClock()).
  bool Expired(uint32_t now) const;
};

// Seconds since the epoch modulo 2^24: the clock of leases (workers' clocks are assumed within a
// few seconds of each other).
uint32_t LeaseClock();

// The parameters of one index, read from (or written to) its meta hash.
struct RedisLayout {
  std::string prefix;
  std::string settings;  // SettingsLine of the method
  bool accurate = true;
  int tables = 20;       // kAccurate: bands; kSimhash: k + 1 blocks
  int bucket_bits = 12;  // buckets per table: 2^bucket_bits (kSimhash: at most the block's width)
  int id_bucket_bits = 14;
  size_t sketch_bytes = 132;  // kAccurate
  int k = 3;                  // kSimhash
  size_t record_bytes = 0;
  uint64_t chunk_documents = 0;

  // A new index's layout for `expected` documents (0: 1,000,000).
  static RedisLayout ForNewIndex(std::string prefix, const DocumentSigner& signer,
                                 uint64_t expected);
  // The meta hash's fields of a new index.
  std::vector<std::pair<std::string, std::string>> MetaFields() const;
  // Reads a meta hash (field -> value). Corruption naming what is missing or malformed;
  // FailedPrecondition for another layout version.
  static Result<RedisLayout> FromMeta(std::string prefix,
                                      const std::map<std::string, std::string>& meta);

  std::string MetaKey() const;
  std::string ChunkKey(uint64_t docnum) const;
  uint64_t RecordOffset(uint64_t docnum) const;
  std::string IdsKey(uint64_t docnum) const;          // docnum -> id
  std::string AttachmentsKey(uint64_t docnum) const;  // docnum -> attachment
  // The field of a document in its ids and attachments hashes: docnum modulo the documents a
  // hash holds (a small number, which a listpack keeps in one byte).
  static std::string IdField(uint64_t docnum);
  std::string NamesKey(std::string_view id) const;  // id -> docnum
  // The bucket key of table t for a band key (kAccurate) or a fingerprint (kSimhash).
  std::string BucketKey(int table, uint64_t value) const;
  // The bucket as a number (table << 32 | bucket), and its key.
  uint64_t BucketId(int table, uint64_t value) const;
  std::string BucketKeyOfId(uint64_t bucket_id) const;
  // The packed bucket beside it (same hash tag, so the same slot): what compaction wrote.
  std::string PackedKeyOfId(uint64_t bucket_id) const;
  // The bucket id of a bucket or packed bucket key of this index; false for another key.
  bool BucketIdOfKey(std::string_view key, uint64_t* bucket_id) const;

  // kSimhash: block t of a fingerprint (its bits, shifted down) and its width.
  uint64_t Block(int table, uint64_t fingerprint) const;
  int BlockBits(int table) const;

  size_t entry_bytes() const { return accurate ? 7 : 12; }
  // The bits of a packed entry's value: kAccurate 32 - bucket_bits, kSimhash 64.
  int value_bits() const { return accurate ? 32 - bucket_bits : 64; }
  // Appends the bucket entry of a document to `out`.
  void AppendEntry(int table, uint64_t value, uint32_t docnum, std::string* out) const;
  // Calls fn(docnum) for every entry of a bucket whose key (kAccurate: the whole band key;
  // kSimhash: within k bits of the fingerprint, block t equal) matches `value`; for kSimhash also
  // passes the distance.
  template <typename Fn>
  void ForEachMatch(int table, uint64_t value, std::string_view bucket, Fn fn) const;
  // The same for a packed bucket; Corruption if it does not decode (nothing is passed then).
  template <typename Fn>
  Status ForEachPackedMatch(int table, uint64_t value, std::string_view packed, Fn fn) const;

  // The entries of an appended bucket (whole entries only; kAccurate values cut to value_bits()).
  void UnpackAppended(std::string_view bucket, std::vector<BucketEntry>* out) const;
  // A packed bucket of entries with distinct document numbers in ascending order
  // (doc/redis_layout.md, "Packed entries"); empty for no entries.
  std::string Pack(std::span<const BucketEntry> entries) const;
  // Appends the entries of a packed bucket to `out`; Corruption naming what is wrong, with `out`
  // as it was.
  Status Unpack(std::string_view packed, std::vector<BucketEntry>* out) const;
  // The (docnum, distance) of ForEachPackedMatch in `out` (cleared; empty on Corruption).
  Status PackedMatches(int table, uint64_t value, std::string_view packed,
                       std::vector<std::pair<uint32_t, int>>* out) const;

  // The record of a document: header, then kAccurate: simhash (8 bytes LE) + sketch; kSimhash:
  // the fingerprint (8 bytes LE).
  std::string EncodeRecord(const RecordHeader& header, const Signature& signature) const;
};

template <typename Fn>
Status RedisLayout::ForEachPackedMatch(int table, uint64_t value, std::string_view packed,
                                       Fn fn) const {
  thread_local std::vector<std::pair<uint32_t, int>> matches;
  NEARDUP_RETURN_IF_ERROR(PackedMatches(table, value, packed, &matches));
  for (auto [docnum, distance] : matches) fn(docnum, distance);
  return Status::OK();
}

template <typename Fn>
void RedisLayout::ForEachMatch(int table, uint64_t value, std::string_view bucket, Fn fn) const {
  const auto* p = reinterpret_cast<const unsigned char*>(bucket.data());
  const size_t n = bucket.size() / entry_bytes();
  if (accurate) {
    const uint32_t residual = static_cast<uint32_t>(value) & 0xFFFFFF;
    for (size_t i = 0; i < n; ++i, p += 7) {
      const uint32_t r = p[0] | (p[1] << 8) | (uint32_t{p[2]} << 16);
      if (r != residual) continue;
      fn(uint32_t{p[3]} | (uint32_t{p[4]} << 8) | (uint32_t{p[5]} << 16) | (uint32_t{p[6]} << 24),
         0);
    }
    return;
  }
  const uint64_t block = Block(table, value);
  for (size_t i = 0; i < n; ++i, p += 12) {
    uint64_t fingerprint = 0;
    for (int b = 7; b >= 0; --b) fingerprint = (fingerprint << 8) | p[b];
    if (Block(table, fingerprint) != block) continue;
    const int distance = __builtin_popcountll(fingerprint ^ value);
    if (distance > k) continue;
    fn(uint32_t{p[8]} | (uint32_t{p[9]} << 8) | (uint32_t{p[10]} << 16) | (uint32_t{p[11]} << 24),
       distance);
  }
}

}  // namespace neardup::store_internal

#endif  // NEARDUP_STORE_REDIS_LAYOUT_H_
