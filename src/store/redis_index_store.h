// The Redis backend's class (redis_index.h opens it), shared by its two files: redis_index.cc
// (opening, queries, reads, removes, compaction) and redis_writes.cc (the write rounds and
// check-and-insert). doc/redis_layout.md is the layout and the protocol.
#ifndef NEARDUP_STORE_REDIS_INDEX_STORE_H_
#define NEARDUP_STORE_REDIS_INDEX_STORE_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include "neardup/index_store.h"
#include "store/redis_client.h"
#include "store/redis_layout.h"

namespace neardup::store_internal {

// Creates the meta hash unless it exists, and returns it: the first worker's layout wins.
inline constexpr std::string_view kInitMetaScript = R"(
if redis.call('EXISTS', KEYS[1]) == 0 then redis.call('HSET', KEYS[1], unpack(ARGV)) end
return redis.call('HGETALL', KEYS[1]))";

// Creates a record chunk whole (zeros) unless it exists, then writes one record.
inline constexpr std::string_view kWriteRecordScript = R"(
if redis.call('EXISTS', KEYS[1]) == 0 then
  redis.call('SET', KEYS[1], string.rep('\0', tonumber(ARGV[1])))
end
redis.call('SETRANGE', KEYS[1], ARGV[2], ARGV[3])
return 1)";

// Compare-and-set of a record header: replaces the 8 bytes at ARGV[1] by ARGV[3] when they are
// ARGV[2]; returns the bytes found.
inline constexpr std::string_view kCasScript = R"(
local found = redis.call('GETRANGE', KEYS[1], ARGV[1], ARGV[1] + 7)
if found == ARGV[2] then redis.call('SETRANGE', KEYS[1], ARGV[1], ARGV[3]) end
return found)";

// HSET of a field only while it holds the value given (ARGV: field, expected, new); 1 when set.
inline constexpr std::string_view kReplaceIfScript = R"(
if redis.call('HGET', KEYS[1], ARGV[1]) == ARGV[2] then redis.call('HSET', KEYS[1], ARGV[1], ARGV[3]) return 1 end
return 0)";

// Replaces a bucket's appended and packed entries by a packed bucket, only while they hold the
// values given (KEYS: appended, packed; ARGV: appended, packed, new packed; a missing key reads
// as empty, an empty new value deletes the packed key); 1 when replaced. SET allocates the new
// value at its exact size.
inline constexpr std::string_view kPackIfScript = R"(
if (redis.call('GET', KEYS[1]) or '') ~= ARGV[1] then return 0 end
if (redis.call('GET', KEYS[2]) or '') ~= ARGV[2] then return 0 end
redis.call('DEL', KEYS[1])
if ARGV[3] == '' then redis.call('DEL', KEYS[2]) else redis.call('SET', KEYS[2], ARGV[3]) end
return 1)";

// HINCRBY of a counter of the meta hash (ARGV: field, increment) while the hash is an index's:
// HINCRBY alone would make a new hash of a meta key Redis lost (a restart without persistence,
// keys removed), and the writes after it would go to an index nothing can open.
inline constexpr std::string_view kCountScript = R"(
if redis.call('HEXISTS', KEYS[1], 'layout') == 0 then
  return redis.error_reply('NOINDEX ' .. KEYS[1] .. ' is gone')
end
return redis.call('HINCRBY', KEYS[1], ARGV[1], ARGV[2]))";

// HDEL of a field only while it holds the value given.
inline constexpr std::string_view kDeleteIfScript = R"(
if redis.call('HGET', KEYS[1], ARGV[1]) == ARGV[2] then return redis.call('HDEL', KEYS[1], ARGV[1]) end
return 0)";

inline RedisCommand Command(std::vector<std::string> args, bool write = false, int key_index = 1) {
  return RedisCommand{std::move(args), key_index, write};
}

inline RedisCommand Script(std::string_view script, std::string key, std::vector<std::string> argv,
                           bool write) {
  std::vector<std::string> args = {"EVAL", std::string(script), "1", std::move(key)};
  for (std::string& a : argv) args.push_back(std::move(a));
  return RedisCommand{std::move(args), 3, write};
}

// A script on two keys of one slot.
inline RedisCommand Script2(std::string_view script, std::string key1, std::string key2,
                            std::vector<std::string> argv, bool write) {
  std::vector<std::string> args = {"EVAL", std::string(script), "2", std::move(key1),
                                   std::move(key2)};
  for (std::string& a : argv) args.push_back(std::move(a));
  return RedisCommand{std::move(args), 3, write};
}

inline Status ReplyError(const RedisReply& reply, std::string_view what) {
  if (reply.str.starts_with("NOINDEX ")) {
    return Status::Unavailable(std::string(what) + ": the index's meta key " + reply.str.substr(8) +
                               " (Redis lost its data, or the keys were removed): nothing is "
                               "written until the index is opened again");
  }
  return Status::IOError(std::string(what) + ": Redis answered " + reply.str);
}

inline bool ParseUnsigned(std::string_view text, uint64_t* value) {
  if (text.empty() || text.size() > 19) return false;
  uint64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  *value = v;
  return true;
}

// A stored document a query compared with, and its record as read.
struct Candidate {
  uint32_t docnum = 0;
  double score = 0;
  RecordHeader header;
};

struct Counts {
  std::atomic<uint64_t> queries{0}, lookups{0}, candidates{0}, matches{0};
  std::atomic<uint64_t> inserts{0}, removes{0};
};

class RedisIndexStore final : public IndexStore {
 public:
  RedisIndexStore(std::unique_ptr<RedisClient> client, RedisLayout layout,
                  std::unique_ptr<DocumentSigner> signer, std::string location,
                  RedisStoreOptions options)
      : client_(std::move(client)),
        layout_(std::move(layout)),
        signer_(std::move(signer)),
        location_(std::move(location)),
        options_(std::move(options)),
        backend_(client_->cluster() ? "redis-cluster" : "redis") {}

  const DocumentSigner& signer() const override { return *signer_; }
  std::string_view backend() const override { return backend_; }
  const std::string& location() const override { return location_; }

  Result<QueryAndInsertResult> QueryAndInsertSigned(std::string_view id, const Signature& signature,
                                                    InsertPolicy policy,
                                                    std::string_view attachment) override {
    SignedDocument document{std::string(id), signature, std::string(attachment)};
    auto results = QueryAndInsertBatch(std::span(&document, 1), policy);
    if (!results.ok()) return results.status();
    StoreInsertResult& r = (*results)[0];
    if (!r.status.ok()) return r.status;
    return QueryAndInsertResult{std::move(r.matches), r.inserted};
  }

  Result<std::vector<StoreInsertResult>> QueryAndInsertBatch(
      std::span<const SignedDocument> documents, InsertPolicy policy) override {
    return InsertDocuments(documents, policy, /*query=*/true);
  }

  Result<std::vector<StoreInsertResult>> InsertBatch(
      std::span<const SignedDocument> documents) override {
    return InsertDocuments(documents, InsertPolicy::kAlways, /*query=*/false);
  }

  Status Remove(std::string_view id) override;

  Result<std::vector<OnlineMatch>> QuerySigned(const Signature& signature,
                                               OnlineQueryStats* stats) const override {
    auto batch = QueryBatch(std::span(&signature, 1), stats);
    if (!batch.ok()) return batch.status();
    return std::move((*batch)[0]);
  }

  Result<std::vector<std::vector<OnlineMatch>>> QueryBatch(std::span<const Signature> signatures,
                                                           OnlineQueryStats* stats) const override {
    return QueryBatchAtLeast(signatures, signer_->options().threshold, stats);
  }
  Result<std::vector<std::vector<OnlineMatch>>> QueryBatchAtLeast(
      std::span<const Signature> signatures, double lowest, OnlineQueryStats* stats) const override;

  Result<Signature> Get(std::string_view id) const override;
  Result<std::string> GetAttachment(std::string_view id) const override;
  // Whether a stored document has the id (not one being decided, nor a stale claim).
  Result<bool> Contains(std::string_view id) const override {
    auto docnum = DocnumOf(id);
    if (!docnum.ok()) return docnum.status();
    if (!docnum->has_value()) return false;
    std::vector<RecordHeader> headers;
    NEARDUP_RETURN_IF_ERROR(ReadHeaders({static_cast<uint32_t>(**docnum)}, &headers));
    return headers[0].state == RecordState::kStored;
  }

  Status Check() const override {
    for (const RedisEndpoint& node : client_->Masters()) {
      auto pong = client_->RunOn(node, Command({"PING"}, false, -1));
      if (!pong.ok()) return pong.status();
      if (pong->is_error()) return ReplyError(*pong, location_ + ": " + node.ToString());
    }
    auto meta = client_->Run(Command({"EXISTS", layout_.MetaKey()}));
    if (!meta.ok()) return meta.status();
    if (meta->integer != 1) {
      return Status::NotFound(location_ + ": the index's meta key is gone (" + layout_.MetaKey() +
                              ")");
    }
    return Status::OK();
  }

  StoreStats Stats() const override;
  Status Arrive(std::string_view name, std::string_view member, size_t parties,
                double timeout_seconds, const std::atomic<bool>* cancel) override;
  Result<CompactStats> Compact() override;
  Status Snapshot() override {
    return Status::NotSupported(
        "a Redis index has no snapshots of its own: its servers persist it (RDB or AOF)");
  }

 private:
  Status CheckSignature(const Signature& signature) const;
  Result<std::vector<RedisReply>> Run(std::vector<RedisCommand>& commands) const {
    return client_->Execute(commands);
  }
  // id -> docnum (nullopt: no such id).
  Result<std::optional<uint64_t>> DocnumOf(std::string_view id) const;
  // The candidates of each signature that match it by the method's rule, with their records'
  // headers (every state but free: callers filter by state). kAccurate: estimates at least
  // `lowest` (-1: the threshold).
  Status FindMatches(std::span<const Signature* const> signatures,
                     std::vector<std::vector<Candidate>>* out, OnlineQueryStats* stats,
                     double lowest = -1) const;
  // The ids of the docnums (missing ones are left out of the map).
  Status ResolveIds(const std::vector<uint32_t>& docnums,
                    std::unordered_map<uint32_t, std::string>* ids) const;
  // Headers of records, read again.
  Status ReadHeaders(const std::vector<uint32_t>& docnums, std::vector<RecordHeader>* out) const;
  // CAS of a record header: true when `expected` was found and replaced.
  Result<bool> CompareAndSet(uint32_t docnum, const RecordHeader& expected,
                             const RecordHeader& desired, RecordHeader* found) const;
  // The first of n new document numbers, from the meta hash's counter; Unavailable when the meta
  // hash is gone. Every write reserves its own (no numbers are kept ahead in the process): the
  // call is the check that the index is still there before anything of the write is made.
  Result<uint64_t> ReserveDocnums(uint64_t n);
  Result<std::vector<StoreInsertResult>> InsertDocuments(std::span<const SignedDocument> documents,
                                                         InsertPolicy policy, bool query);
  // kIfNew: decides the pending documents `writing` (in order), storing or rejecting each.
  Status DecideAll(std::span<const SignedDocument> documents, const std::vector<size_t>& writing,
                   const std::vector<uint32_t>& docnums, std::vector<StoreInsertResult>* results);
  void SortMatches(std::vector<OnlineMatch>* matches) const;
  // Writes the documents `which` (their docnums in `docnums`) as `state` (stored, or pending for a
  // check-and-insert), in three rounds: records, id claims, bucket entries. Documents whose id is
  // held by another get FailedPrecondition in results and docnum 0 (their records rejected).
  void AppendRecords(std::span<const SignedDocument> documents,
                     const std::vector<std::pair<uint32_t, size_t>>& order, RecordState state,
                     bool with_ids, std::vector<RedisCommand>* commands);
  void AppendEntries(std::span<const SignedDocument> documents,
                     const std::vector<std::pair<uint32_t, size_t>>& order,
                     std::vector<RedisCommand>* commands) const;
  Status ClaimIds(std::span<const SignedDocument> documents,
                  const std::vector<std::pair<uint32_t, size_t>>& order,
                  std::vector<StoreInsertResult>* results);
  Status WriteDocuments(std::span<const SignedDocument> documents, const std::vector<size_t>& which,
                        RecordState state, std::vector<uint32_t>* docnums,
                        std::vector<StoreInsertResult>* results);
  // The kIfNew decision of a pending document: stored (true) or a near-duplicate (false, the
  // stored matches in *matches).
  Result<bool> Decide(const Signature& signature, uint32_t docnum, std::vector<Candidate>* matches);
  // Takes a written document out: rejected, its id released.
  Status Reject(const SignedDocument& document, uint32_t docnum, bool empty);
  // Appends the candidates with their ids to *out, sorted as the embedded index sorts them.
  Status FillMatches(const std::vector<Candidate>& candidates, std::vector<OnlineMatch>* out) const;
  RecordHeader PendingHeader(bool empty) const {
    RecordHeader h;
    h.state = RecordState::kPending;
    h.empty = empty;
    h.lease =
        (LeaseClock() + static_cast<uint32_t>(std::max(1.0, options_.lease_seconds))) & 0xFFFFFF;
    return h;
  }

  std::unique_ptr<RedisClient> client_;
  const RedisLayout layout_;
  std::unique_ptr<DocumentSigner> signer_;
  const std::string location_;
  const RedisStoreOptions options_;
  const std::string backend_;

  mutable Counts counts_;
  std::mutex chunks_mutex_;
  std::unordered_set<uint64_t> known_chunks_;
};

}  // namespace neardup::store_internal

#endif  // NEARDUP_STORE_REDIS_INDEX_STORE_H_
