// The Redis backend: queries read the buckets of the signature's band keys (or SimHash blocks),
// then the records of the candidates, then the ids of the matches: three pipelined rounds, whatever
// the number of nodes. Writes are pipelined the same way. Check-and-insert with kIfNew follows the
// protocol of doc/redis_layout.md ("Check-and-insert"): write the document as pending, query, and
// let the lower document number win every conflict between pending documents.
#include "store/redis_index.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "online/document_id.h"
#include "store/redis_client.h"
#include "store/redis_layout.h"

namespace neardup::store_internal {
namespace {

using online_internal::PrintableId;

// Creates the meta hash unless it exists, and returns it: the first worker's layout wins.
constexpr std::string_view kInitMetaScript = R"(
if redis.call('EXISTS', KEYS[1]) == 0 then redis.call('HSET', KEYS[1], unpack(ARGV)) end
return redis.call('HGETALL', KEYS[1]))";

// Creates a record chunk whole (zeros) unless it exists, then writes one record.
constexpr std::string_view kWriteRecordScript = R"(
if redis.call('EXISTS', KEYS[1]) == 0 then
  redis.call('SET', KEYS[1], string.rep('\0', tonumber(ARGV[1])))
end
redis.call('SETRANGE', KEYS[1], ARGV[2], ARGV[3])
return 1)";

// Compare-and-set of a record header: replaces the 8 bytes at ARGV[1] by ARGV[3] when they are
// ARGV[2]; returns the bytes found.
constexpr std::string_view kCasScript = R"(
local found = redis.call('GETRANGE', KEYS[1], ARGV[1], ARGV[1] + 7)
if found == ARGV[2] then redis.call('SETRANGE', KEYS[1], ARGV[1], ARGV[3]) end
return found)";

// HSET of a field only while it holds the value given (ARGV: field, expected, new); 1 when set.
constexpr std::string_view kReplaceIfScript = R"(
if redis.call('HGET', KEYS[1], ARGV[1]) == ARGV[2] then redis.call('HSET', KEYS[1], ARGV[1], ARGV[3]) return 1 end
return 0)";

// Replaces a string only while it holds the value given (ARGV: expected, new; an empty new value
// deletes the key); 1 when replaced. SET allocates the new value at its exact size.
constexpr std::string_view kRewriteIfScript = R"(
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
if ARGV[2] == '' then redis.call('DEL', KEYS[1]) else redis.call('SET', KEYS[1], ARGV[2]) end
return 1)";

// HDEL of a field only while it holds the value given.
constexpr std::string_view kDeleteIfScript = R"(
if redis.call('HGET', KEYS[1], ARGV[1]) == ARGV[2] then return redis.call('HDEL', KEYS[1], ARGV[1]) end
return 0)";

RedisCommand Command(std::vector<std::string> args, bool write = false, int key_index = 1) {
  return RedisCommand{std::move(args), key_index, write};
}

RedisCommand Script(std::string_view script, std::string key, std::vector<std::string> argv,
                    bool write) {
  std::vector<std::string> args = {"EVAL", std::string(script), "1", std::move(key)};
  for (std::string& a : argv) args.push_back(std::move(a));
  return RedisCommand{std::move(args), 3, write};
}

Status ReplyError(const RedisReply& reply, std::string_view what) {
  return Status::IOError(std::string(what) + ": Redis answered " + reply.str);
}

bool ParseUnsigned(std::string_view text, uint64_t* value) {
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
                                                           OnlineQueryStats* stats) const override;

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
  // headers (every state but free: callers filter by state).
  Status FindMatches(std::span<const Signature* const> signatures,
                     std::vector<std::vector<Candidate>>* out, OnlineQueryStats* stats) const;
  // The ids of the docnums (missing ones are left out of the map).
  Status ResolveIds(const std::vector<uint32_t>& docnums,
                    std::unordered_map<uint32_t, std::string>* ids) const;
  // Headers of records, read again.
  Status ReadHeaders(const std::vector<uint32_t>& docnums, std::vector<RecordHeader>* out) const;
  // CAS of a record header: true when `expected` was found and replaced.
  Result<bool> CompareAndSet(uint32_t docnum, const RecordHeader& expected,
                             const RecordHeader& desired, RecordHeader* found) const;
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
  std::mutex reserve_mutex_;
  uint64_t reserved_next_ = 0, reserved_end_ = 0;
  std::mutex chunks_mutex_;
  std::unordered_set<uint64_t> known_chunks_;
};

Status RedisIndexStore::CheckSignature(const Signature& signature) const {
  if (signature.sketch.size() != signer_->sketch_bytes() ||
      signature.band_keys.size() != signer_->bands()) {
    return Status::InvalidArgument(
        "the signature has a sketch of " + std::to_string(signature.sketch.size()) + " bytes and " +
        std::to_string(signature.band_keys.size()) + " band keys; this index's method needs " +
        std::to_string(signer_->sketch_bytes()) + " and " + std::to_string(signer_->bands()));
  }
  return Status::OK();
}

Result<std::optional<uint64_t>> RedisIndexStore::DocnumOf(std::string_view id) const {
  NEARDUP_RETURN_IF_ERROR(online_internal::CheckId(id));
  auto reply = client_->Run(Command({"HGET", layout_.NamesKey(id), std::string(id)}));
  if (!reply.ok()) return reply.status();
  if (reply->is_nil()) return std::optional<uint64_t>();
  uint64_t docnum = 0;
  if (reply->type != RedisReply::Type::kString || !ParseUnsigned(reply->str, &docnum)) {
    return Status::Corruption(location_ + ": the document number of id '" + PrintableId(id) +
                              "' is not a number");
  }
  return std::optional<uint64_t>(docnum);
}

Status RedisIndexStore::FindMatches(std::span<const Signature* const> signatures,
                                    std::vector<std::vector<Candidate>>* out,
                                    OnlineQueryStats* stats) const {
  out->assign(signatures.size(), {});
  // Round 1: the buckets, each key fetched once for the whole batch.
  std::vector<RedisCommand> commands;
  std::unordered_map<std::string, size_t> bucket_of;
  std::vector<std::vector<std::pair<int, size_t>>> probes(signatures.size());
  for (size_t i = 0; i < signatures.size(); ++i) {
    const Signature& s = *signatures[i];
    if (s.empty) continue;
    for (int t = 0; t < layout_.tables; ++t) {
      const uint64_t value = layout_.accurate ? s.band_keys[t] : s.simhash;
      std::string key = layout_.BucketKey(t, value);
      auto [it, added] = bucket_of.try_emplace(key, commands.size());
      if (added) commands.push_back(Command({"GET", std::move(key)}));
      probes[i].push_back({t, it->second});
    }
  }
  if (stats != nullptr) {
    stats->queries += signatures.size();
    for (const auto& p : probes) stats->lookups += p.size();
  }
  if (commands.empty()) return Status::OK();
  auto buckets = Run(commands);
  if (!buckets.ok()) return buckets.status();
  for (const RedisReply& r : *buckets) {
    if (r.is_error()) return ReplyError(r, location_ + ": reading a bucket");
  }
  // Candidates of each signature (distinct), and the records to read.
  std::vector<std::vector<std::pair<uint32_t, int>>> found(signatures.size());
  std::unordered_map<uint32_t, size_t> record_of;
  std::vector<uint32_t> records;
  for (size_t i = 0; i < signatures.size(); ++i) {
    const Signature& s = *signatures[i];
    std::unordered_set<uint32_t> seen;
    for (auto [t, b] : probes[i]) {
      const uint64_t value = layout_.accurate ? s.band_keys[t] : s.simhash;
      layout_.ForEachMatch(t, value, (*buckets)[b].str, [&](uint32_t docnum, int distance) {
        if (!seen.insert(docnum).second) return;
        found[i].push_back({docnum, distance});
        if (record_of.try_emplace(docnum, records.size()).second) records.push_back(docnum);
      });
    }
  }
  if (records.empty()) return Status::OK();
  // Round 2: the records (header, then the signature).
  commands.clear();
  const size_t read_bytes = layout_.accurate ? layout_.record_bytes : kRecordHeaderBytes;
  for (uint32_t d : records) {
    const uint64_t offset = layout_.RecordOffset(d);
    commands.push_back(Command({"GETRANGE", layout_.ChunkKey(d), std::to_string(offset),
                                std::to_string(offset + read_bytes - 1)}));
  }
  auto read = Run(commands);
  if (!read.ok()) return read.status();
  const Sketcher* sketcher = signer_->sketcher();
  const double threshold = signer_->options().threshold;
  for (size_t i = 0; i < signatures.size(); ++i) {
    for (auto [docnum, distance] : found[i]) {
      const RedisReply& r = (*read)[record_of[docnum]];
      if (r.is_error()) return ReplyError(r, location_ + ": reading a record");
      Candidate c;
      c.docnum = docnum;
      c.header = RecordHeader::Decode(r.str);
      if (c.header.state == RecordState::kFree || c.header.empty) continue;
      if (stats != nullptr) ++stats->candidates;
      if (layout_.accurate) {
        if (r.str.size() < layout_.record_bytes) continue;
        const auto* stored =
            reinterpret_cast<const uint8_t*>(r.str.data()) + kRecordHeaderBytes + 8;
        c.score = sketcher->EstimateIfAtLeast(signatures[i]->sketch.data(), stored, threshold);
        if (c.score < threshold) continue;
      } else {
        c.score = distance;
      }
      (*out)[i].push_back(c);
    }
  }
  return Status::OK();
}

Status RedisIndexStore::ResolveIds(const std::vector<uint32_t>& docnums,
                                   std::unordered_map<uint32_t, std::string>* ids) const {
  std::vector<RedisCommand> commands;
  std::vector<uint32_t> asked;
  for (uint32_t d : docnums) {
    if (ids->count(d) != 0) continue;
    (*ids)[d];
    asked.push_back(d);
    commands.push_back(Command({"HGET", layout_.IdsKey(d), std::to_string(d)}));
  }
  for (uint32_t d : asked) ids->erase(d);
  if (commands.empty()) return Status::OK();
  auto replies = Run(commands);
  if (!replies.ok()) return replies.status();
  for (size_t i = 0; i < asked.size(); ++i) {
    const RedisReply& r = (*replies)[i];
    if (r.is_error()) return ReplyError(r, location_ + ": reading an id");
    if (r.type == RedisReply::Type::kString) (*ids)[asked[i]] = r.str;
  }
  return Status::OK();
}

Status RedisIndexStore::FillMatches(const std::vector<Candidate>& candidates,
                                    std::vector<OnlineMatch>* out) const {
  std::vector<uint32_t> docnums;
  for (const Candidate& c : candidates) docnums.push_back(c.docnum);
  std::unordered_map<uint32_t, std::string> ids;
  NEARDUP_RETURN_IF_ERROR(ResolveIds(docnums, &ids));
  for (const Candidate& c : candidates) {
    auto it = ids.find(c.docnum);
    // A document removed between the reads has no id any more: it is not a match.
    if (it == ids.end()) continue;
    out->push_back({it->second, c.score});
  }
  SortMatches(out);
  return Status::OK();
}

void RedisIndexStore::SortMatches(std::vector<OnlineMatch>* out) const {
  if (layout_.accurate) {
    std::sort(out->begin(), out->end(), [](const OnlineMatch& a, const OnlineMatch& b) {
      return a.score != b.score ? a.score > b.score : a.id < b.id;
    });
  } else {
    std::sort(out->begin(), out->end(), [](const OnlineMatch& a, const OnlineMatch& b) {
      return a.score != b.score ? a.score < b.score : a.id < b.id;
    });
  }
}

Result<std::vector<std::vector<OnlineMatch>>> RedisIndexStore::QueryBatch(
    std::span<const Signature> signatures, OnlineQueryStats* stats) const {
  std::vector<const Signature*> pointers;
  for (const Signature& s : signatures) {
    NEARDUP_RETURN_IF_ERROR(CheckSignature(s));
    pointers.push_back(&s);
  }
  OnlineQueryStats local;
  std::vector<std::vector<Candidate>> found;
  NEARDUP_RETURN_IF_ERROR(FindMatches(pointers, &found, &local));
  std::vector<std::vector<OnlineMatch>> out(signatures.size());
  for (size_t i = 0; i < found.size(); ++i) {
    std::erase_if(found[i],
                  [](const Candidate& c) { return c.header.state != RecordState::kStored; });
    NEARDUP_RETURN_IF_ERROR(FillMatches(found[i], &out[i]));
    local.matches += out[i].size();
  }
  counts_.queries += local.queries;
  counts_.lookups += local.lookups;
  counts_.candidates += local.candidates;
  counts_.matches += local.matches;
  if (stats != nullptr) *stats += local;
  return out;
}

Status RedisIndexStore::ReadHeaders(const std::vector<uint32_t>& docnums,
                                    std::vector<RecordHeader>* out) const {
  std::vector<RedisCommand> commands;
  for (uint32_t d : docnums) {
    const uint64_t offset = layout_.RecordOffset(d);
    commands.push_back(Command({"GETRANGE", layout_.ChunkKey(d), std::to_string(offset),
                                std::to_string(offset + kRecordHeaderBytes - 1)}));
  }
  out->clear();
  if (commands.empty()) return Status::OK();
  auto replies = Run(commands);
  if (!replies.ok()) return replies.status();
  for (const RedisReply& r : *replies) {
    if (r.is_error()) return ReplyError(r, location_ + ": reading a record");
    out->push_back(RecordHeader::Decode(r.str));
  }
  return Status::OK();
}

Result<bool> RedisIndexStore::CompareAndSet(uint32_t docnum, const RecordHeader& expected,
                                            const RecordHeader& desired,
                                            RecordHeader* found) const {
  auto reply = client_->Run(Script(
      kCasScript, layout_.ChunkKey(docnum),
      {std::to_string(layout_.RecordOffset(docnum)), expected.Encode(), desired.Encode()}, true));
  if (!reply.ok()) return reply.status();
  if (reply->is_error()) return ReplyError(*reply, location_ + ": updating a record");
  const std::string want = expected.Encode();
  // A replayed CAS finds its own result: count it as done.
  if (reply->str == want || reply->str == desired.Encode()) {
    if (found != nullptr) *found = desired;
    return true;
  }
  if (found != nullptr) *found = RecordHeader::Decode(reply->str);
  return false;
}

Result<uint64_t> RedisIndexStore::ReserveDocnums(uint64_t n) {
  std::lock_guard lock(reserve_mutex_);
  if (n == 1 && reserved_next_ < reserved_end_) return reserved_next_++;
  const uint64_t ask = n == 1 ? 16 : n;
  auto reply = client_->Run(Command({"HINCRBY", layout_.MetaKey(), "next", std::to_string(ask)},
                                    /*write=*/true));
  if (!reply.ok()) return reply.status();
  if (reply->type != RedisReply::Type::kInteger) {
    return ReplyError(*reply, location_ + ": reserving document numbers");
  }
  const auto end = static_cast<uint64_t>(reply->integer);
  if (end >= UINT32_MAX) {
    return Status::ResourceExhausted(location_ +
                                     ": the index has handed out 2^32 - 1 document "
                                     "numbers, its limit");
  }
  const uint64_t first = end - ask;
  if (n == 1) {
    reserved_next_ = first + 1;
    reserved_end_ = end;
  }
  return first;
}

void RedisIndexStore::AppendRecords(std::span<const SignedDocument> documents,
                                    const std::vector<std::pair<uint32_t, size_t>>& order,
                                    RecordState state, bool with_ids,
                                    std::vector<RedisCommand>* commands) {
  for (size_t x = 0; x < order.size();) {
    // A run of consecutive document numbers in one chunk: one SETRANGE.
    const uint32_t first_docnum = order[x].first;
    const uint64_t chunk = first_docnum / layout_.chunk_documents;
    std::string records;
    std::vector<std::string> ids = {"HSET", layout_.IdsKey(first_docnum)};
    std::vector<std::string> attachments = {"HSET", layout_.AttachmentsKey(first_docnum)};
    size_t y = x;
    for (; y < order.size(); ++y) {
      const uint32_t docnum = order[y].first;
      if (docnum != first_docnum + (y - x) || docnum / layout_.chunk_documents != chunk) break;
      const SignedDocument& document = documents[order[y].second];
      RecordHeader header = state == RecordState::kPending
                                ? PendingHeader(document.signature.empty)
                                : RecordHeader{state, document.signature.empty, 0, 0};
      records += layout_.EncodeRecord(header, document.signature);
      if (!with_ids) continue;
      if (layout_.IdsKey(docnum) != ids[1]) {
        commands->push_back(Command(std::move(ids), true));
        ids = {"HSET", layout_.IdsKey(docnum)};
      }
      ids.push_back(std::to_string(docnum));
      ids.push_back(document.id);
      if (!document.attachment.empty()) {
        if (layout_.AttachmentsKey(docnum) != attachments[1]) {
          if (attachments.size() > 2) commands->push_back(Command(std::move(attachments), true));
          attachments = {"HSET", layout_.AttachmentsKey(docnum)};
        }
        attachments.push_back(std::to_string(docnum));
        attachments.push_back(document.attachment);
      }
    }
    if (with_ids) commands->push_back(Command(std::move(ids), true));
    if (attachments.size() > 2) commands->push_back(Command(std::move(attachments), true));
    bool known = false;
    {
      std::lock_guard lock(chunks_mutex_);
      known = !known_chunks_.insert(chunk).second;
    }
    const std::string offset = std::to_string(layout_.RecordOffset(first_docnum));
    if (known) {
      commands->push_back(
          Command({"SETRANGE", layout_.ChunkKey(first_docnum), offset, std::move(records)}, true));
    } else {
      commands->push_back(Script(kWriteRecordScript, layout_.ChunkKey(first_docnum),
                                 {std::to_string(layout_.chunk_documents * layout_.record_bytes),
                                  offset, std::move(records)},
                                 true));
    }
    x = y;
  }
}

void RedisIndexStore::AppendEntries(std::span<const SignedDocument> documents,
                                    const std::vector<std::pair<uint32_t, size_t>>& order,
                                    std::vector<RedisCommand>* commands) const {
  std::vector<std::pair<uint64_t, std::array<char, 12>>> entries;  // (bucket, entry)
  std::string entry;
  for (const auto& [docnum, i] : order) {
    const Signature& signature = documents[i].signature;
    if (signature.empty) continue;
    for (int t = 0; t < layout_.tables; ++t) {
      const uint64_t value = layout_.accurate ? signature.band_keys[t] : signature.simhash;
      entry.clear();
      layout_.AppendEntry(t, value, docnum, &entry);
      std::array<char, 12> packed{};
      std::copy(entry.begin(), entry.end(), packed.begin());
      entries.push_back({layout_.BucketId(t, value), packed});
    }
  }
  // Entries in document order within each bucket, each bucket appended once.
  std::stable_sort(entries.begin(), entries.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  const size_t entry_bytes = layout_.entry_bytes();
  for (size_t x = 0; x < entries.size();) {
    std::string packed;
    size_t y = x;
    for (; y < entries.size() && entries[y].first == entries[x].first; ++y) {
      packed.append(entries[y].second.data(), entry_bytes);
    }
    commands->push_back(
        Command({"APPEND", layout_.BucketKeyOfId(entries[x].first), std::move(packed)}, true));
    x = y;
  }
}

Status RedisIndexStore::ClaimIds(std::span<const SignedDocument> documents,
                                 const std::vector<std::pair<uint32_t, size_t>>& order,
                                 std::vector<StoreInsertResult>* results) {
  std::vector<RedisCommand> commands;
  for (const auto& [docnum, i] : order) {
    const std::string& id = documents[i].id;
    commands.push_back(
        Command({"HSETNX", layout_.NamesKey(id), id, std::to_string(docnum)}, /*write=*/true));
  }
  auto claimed = Run(commands);
  if (!claimed.ok()) return claimed.status();
  std::vector<size_t> recheck;
  for (size_t x = 0; x < order.size(); ++x) {
    const RedisReply& r = (*claimed)[x];
    if (r.is_error()) return ReplyError(r, location_ + ": claiming an id");
    if (r.integer == 0) recheck.push_back(x);
  }
  if (recheck.empty()) return Status::OK();
  // The id has an owner: ours (a replayed HSETNX), a document that holds it (stored, or being
  // decided within its lease), or one that does not any more (rejected, removed, or written by a
  // worker that went away), whose claim is taken over.
  commands.clear();
  for (size_t x : recheck) {
    const std::string& id = documents[order[x].second].id;
    commands.push_back(Command({"HGET", layout_.NamesKey(id), id}));
  }
  auto owners = Run(commands);
  if (!owners.ok()) return owners.status();
  std::vector<size_t> contested;
  std::vector<uint32_t> owner_docnums;
  for (size_t k = 0; k < recheck.size(); ++k) {
    uint64_t owner = 0;
    const RedisReply& r = (*owners)[k];
    if (r.type == RedisReply::Type::kString && ParseUnsigned(r.str, &owner) &&
        owner == order[recheck[k]].first) {
      continue;
    }
    contested.push_back(recheck[k]);
    owner_docnums.push_back(static_cast<uint32_t>(owner));
  }
  std::vector<RecordHeader> headers;
  NEARDUP_RETURN_IF_ERROR(ReadHeaders(owner_docnums, &headers));
  const uint32_t now = LeaseClock();
  commands.clear();
  std::vector<size_t> taking;
  for (size_t k = 0; k < contested.size(); ++k) {
    const RecordHeader& h = headers[k];
    const bool held =
        h.state == RecordState::kStored ||
        ((h.state == RecordState::kPending || h.state == RecordState::kBlocked) && !h.Expired(now));
    const auto& [docnum, i] = order[contested[k]];
    if (held) {
      (*results)[i].status =
          Status::FailedPrecondition("id '" + PrintableId(documents[i].id) + "' is already stored");
      continue;
    }
    taking.push_back(contested[k]);
    commands.push_back(
        Script(kReplaceIfScript, layout_.NamesKey(documents[i].id),
               {documents[i].id, std::to_string(owner_docnums[k]), std::to_string(docnum)}, true));
  }
  if (commands.empty()) return Status::OK();
  auto taken = Run(commands);
  if (!taken.ok()) return taken.status();
  for (size_t k = 0; k < taking.size(); ++k) {
    const size_t i = order[taking[k]].second;
    if ((*taken)[k].is_error()) return ReplyError((*taken)[k], location_ + ": claiming an id");
    if ((*taken)[k].integer == 1) continue;
    (*results)[i].status =
        Status::FailedPrecondition("id '" + PrintableId(documents[i].id) + "' is already stored");
  }
  return Status::OK();
}

Status RedisIndexStore::WriteDocuments(std::span<const SignedDocument> documents,
                                       const std::vector<size_t>& which, RecordState state,
                                       std::vector<uint32_t>* docnums,
                                       std::vector<StoreInsertResult>* results) {
  if (which.empty()) return Status::OK();
  auto first = ReserveDocnums(which.size());
  if (!first.ok()) return first.status();
  std::vector<std::pair<uint32_t, size_t>> order;  // (docnum, document), by docnum
  for (size_t j = 0; j < which.size(); ++j) {
    (*docnums)[which[j]] = static_cast<uint32_t>(*first + j);
    order.push_back({static_cast<uint32_t>(*first + j), which[j]});
  }
  // Round 1: the records, pending, with the ids and attachments of their numbers. Written before
  // the ids are claimed, so that a claim whose record is not held (free, rejected, removed, or
  // pending past its lease) belongs to no one and can be taken over.
  std::vector<RedisCommand> commands;
  AppendRecords(documents, order, RecordState::kPending, /*with_ids=*/true, &commands);
  auto written = Run(commands);
  if (!written.ok()) return written.status();
  for (const RedisReply& r : *written) {
    if (r.is_error()) return ReplyError(r, location_ + ": writing a document");
  }
  // Round 2: the ids.
  NEARDUP_RETURN_IF_ERROR(ClaimIds(documents, order, results));
  std::vector<std::pair<uint32_t, size_t>> refused;
  std::erase_if(order, [&](const std::pair<uint32_t, size_t>& o) {
    if ((*results)[o.second].status.ok()) return false;
    refused.push_back(o);
    return true;
  });
  // Round 3: the bucket entries of the documents that own their ids; for a plain insert, their
  // records again as stored; the refused ones are rejected.
  commands.clear();
  if (state == RecordState::kStored) {
    AppendRecords(documents, order, RecordState::kStored, /*with_ids=*/false, &commands);
  }
  AppendEntries(documents, order, &commands);
  for (const auto& [docnum, i] : refused) {
    RecordHeader rejected{RecordState::kRejected, documents[i].signature.empty, 0, 0};
    commands.push_back(Command({"SETRANGE", layout_.ChunkKey(docnum),
                                std::to_string(layout_.RecordOffset(docnum)), rejected.Encode()},
                               true));
    commands.push_back(Command({"HDEL", layout_.IdsKey(docnum), std::to_string(docnum)}, true));
    (*docnums)[i] = 0;
  }
  uint64_t empty = 0;
  for (const auto& o : order) empty += documents[o.second].signature.empty ? 1 : 0;
  if (state == RecordState::kStored && !order.empty()) {
    commands.push_back(
        Command({"HINCRBY", layout_.MetaKey(), "documents", std::to_string(order.size())}, true));
    if (empty > 0) {
      commands.push_back(
          Command({"HINCRBY", layout_.MetaKey(), "empty", std::to_string(empty)}, true));
    }
  }
  if (commands.empty()) return Status::OK();
  written = Run(commands);
  if (!written.ok()) return written.status();
  for (const RedisReply& r : *written) {
    if (r.is_error()) return ReplyError(r, location_ + ": writing a document");
  }
  if (state == RecordState::kStored) counts_.inserts += order.size();
  return Status::OK();
}

Status RedisIndexStore::Reject(const SignedDocument& document, uint32_t docnum, bool empty) {
  RecordHeader rejected;
  rejected.state = RecordState::kRejected;
  rejected.empty = empty;
  std::vector<RedisCommand> commands;
  commands.push_back(Command({"SETRANGE", layout_.ChunkKey(docnum),
                              std::to_string(layout_.RecordOffset(docnum)), rejected.Encode()},
                             true));
  commands.push_back(Script(kDeleteIfScript, layout_.NamesKey(document.id),
                            {document.id, std::to_string(docnum)}, true));
  commands.push_back(Command({"HDEL", layout_.IdsKey(docnum), std::to_string(docnum)}, true));
  if (!document.attachment.empty()) {
    commands.push_back(
        Command({"HDEL", layout_.AttachmentsKey(docnum), std::to_string(docnum)}, true));
  }
  auto replies = Run(commands);
  if (!replies.ok()) return replies.status();
  for (const RedisReply& r : *replies) {
    if (r.is_error()) return ReplyError(r, location_ + ": rejecting a document");
  }
  return Status::OK();
}

// Waits a little longer at every turn (1 ms doubling to 20 ms).
class Backoff {
 public:
  void Wait() {
    std::this_thread::sleep_for(std::chrono::microseconds(delay_));
    delay_ = std::min(delay_ * 2, 20000);
  }

 private:
  int delay_ = 1000;
};

Result<bool> RedisIndexStore::Decide(const Signature& signature, uint32_t docnum,
                                     std::vector<Candidate>* matches) {
  const Signature* pointer = &signature;
  Backoff backoff;
  for (;;) {
    std::vector<RecordHeader> headers;
    NEARDUP_RETURN_IF_ERROR(ReadHeaders({docnum}, &headers));
    RecordHeader own = headers[0];
    if (own.state == RecordState::kBlocked) {
      // A lower near-duplicate holds us back: wait for its decision, then look again.
      for (;;) {
        NEARDUP_RETURN_IF_ERROR(ReadHeaders({own.blocker}, &headers));
        const RecordState s = headers[0].state;
        if (s != RecordState::kPending && s != RecordState::kBlocked) break;
        if (headers[0].Expired(LeaseClock())) break;
        backoff.Wait();
      }
      auto again = CompareAndSet(docnum, own, PendingHeader(signature.empty), nullptr);
      if (!again.ok()) return again.status();
      continue;  // read our header again, whatever happened
    }
    if (own.state != RecordState::kPending) {
      return Status::Unavailable(location_ + ": the insert of document " + std::to_string(docnum) +
                                 " outlived its lease (" + std::to_string(options_.lease_seconds) +
                                 " s) and was given up by another worker; insert it again");
    }
    if (!own.Expired(LeaseClock() + static_cast<uint32_t>(options_.lease_seconds / 2))) {
      // Renew a lease half gone (we may have waited).
    } else {
      auto renewed = CompareAndSet(docnum, own, PendingHeader(signature.empty), nullptr);
      if (!renewed.ok()) return renewed.status();
      continue;
    }
    std::vector<std::vector<Candidate>> found;
    NEARDUP_RETURN_IF_ERROR(FindMatches(std::span(&pointer, 1), &found, nullptr));
    std::erase_if(found[0], [&](const Candidate& c) { return c.docnum == docnum; });
    bool wait = false;
    matches->clear();
    for (Candidate& c : found[0]) {
      for (;;) {
        const RecordState s = c.header.state;
        if (s == RecordState::kStored) {
          matches->push_back(c);
          break;
        }
        if (s != RecordState::kPending && s != RecordState::kBlocked) break;  // out of the game
        if (c.header.Expired(LeaseClock())) {
          // Its worker went away: it was never stored.
          RecordHeader gone = c.header;
          gone.state = RecordState::kRejected;
          auto done = CompareAndSet(c.docnum, c.header, gone, &c.header);
          if (!done.ok()) return done.status();
          if (*done) break;
          continue;
        }
        if (c.docnum < docnum) {
          wait = true;  // a lower pending document decides first
          break;
        }
        // A higher pending document: hold it back until we are decided.
        if (s == RecordState::kBlocked && c.header.blocker <= docnum) break;
        RecordHeader blocked = c.header;
        blocked.state = RecordState::kBlocked;
        blocked.blocker = docnum;
        auto done = CompareAndSet(c.docnum, c.header, blocked, &c.header);
        if (!done.ok()) return done.status();
        if (*done) break;
      }
    }
    if (!matches->empty()) return false;
    if (wait) {
      backoff.Wait();
      continue;
    }
    // Stored, unless a lower near-duplicate blocked us (or our lease was taken) meanwhile: then
    // the loop reads our header again.
    RecordHeader stored{RecordState::kStored, own.empty, 0, 0};
    auto done = CompareAndSet(docnum, own, stored, nullptr);
    if (!done.ok()) return done.status();
    if (*done) return true;
  }
}

Result<std::vector<StoreInsertResult>> RedisIndexStore::InsertDocuments(
    std::span<const SignedDocument> documents, InsertPolicy policy, bool query) {
  std::vector<StoreInsertResult> results(documents.size());
  std::vector<size_t> remaining;
  for (size_t i = 0; i < documents.size(); ++i) {
    Status s = online_internal::CheckId(documents[i].id);
    if (s.ok()) s = CheckSignature(documents[i].signature);
    results[i].status = s;
    if (s.ok()) remaining.push_back(i);
  }
  std::vector<uint32_t> docnums(documents.size(), 0);
  if (!query) {
    NEARDUP_RETURN_IF_ERROR(
        WriteDocuments(documents, remaining, RecordState::kStored, &docnums, &results));
    for (size_t i : remaining) results[i].inserted = results[i].status.ok();
    return results;
  }
  const Sketcher* sketcher = signer_->sketcher();
  const double threshold = signer_->options().threshold;
  const int k = signer_->options().k;
  // Whether two documents of the batch match by the method's rule, and the score.
  auto local_match = [&](const Signature& a, const Signature& b, double* score) {
    if (a.empty || b.empty) return false;
    if (!layout_.accurate) {
      const int d = __builtin_popcountll(a.simhash ^ b.simhash);
      *score = d;
      return d <= k;
    }
    bool shared = false;
    for (size_t t = 0; t < a.band_keys.size() && !shared; ++t) {
      shared = a.band_keys[t] == b.band_keys[t];
    }
    if (!shared) return false;
    *score = sketcher->EstimateIfAtLeast(a.sketch.data(), b.sketch.data(), threshold);
    return *score >= threshold;
  };
  while (!remaining.empty()) {
    // Documents already stored decide most documents without writing anything.
    std::vector<const Signature*> signatures;
    for (size_t i : remaining) signatures.push_back(&documents[i].signature);
    std::vector<std::vector<Candidate>> pre;
    OnlineQueryStats counted;
    NEARDUP_RETURN_IF_ERROR(FindMatches(signatures, &pre, &counted));
    counts_.queries += counted.queries;
    counts_.lookups += counted.lookups;
    counts_.candidates += counted.candidates;
    std::vector<size_t> writing, deferred;
    for (size_t x = 0; x < remaining.size(); ++x) {
      const size_t i = remaining[x];
      std::erase_if(pre[x],
                    [](const Candidate& c) { return c.header.state != RecordState::kStored; });
      NEARDUP_RETURN_IF_ERROR(FillMatches(pre[x], &results[i].matches));
      if (policy == InsertPolicy::kIfNew) {
        // A near-duplicate earlier in the batch goes first: look again once it is decided (its
        // answer names the documents before it in the batch that were stored).
        bool wait = false;
        double score = 0;
        for (size_t j : writing)
          wait = wait || local_match(documents[i].signature, documents[j].signature, &score);
        for (size_t j : deferred)
          wait = wait || local_match(documents[i].signature, documents[j].signature, &score);
        if (wait) {
          results[i].matches.clear();
          deferred.push_back(i);
          continue;
        }
        if (!results[i].matches.empty()) continue;
      }
      writing.push_back(i);
    }
    const RecordState state =
        policy == InsertPolicy::kIfNew ? RecordState::kPending : RecordState::kStored;
    NEARDUP_RETURN_IF_ERROR(WriteDocuments(documents, writing, state, &docnums, &results));
    std::erase_if(writing, [&](size_t i) { return !results[i].status.ok(); });
    if (policy == InsertPolicy::kAlways) {
      // Each document's query sees the documents before it in the batch.
      for (size_t x = 0; x < writing.size(); ++x) {
        const size_t i = writing[x];
        results[i].inserted = true;
        for (size_t y = 0; y < x; ++y) {
          double score = 0;
          if (local_match(documents[i].signature, documents[writing[y]].signature, &score)) {
            results[i].matches.push_back({documents[writing[y]].id, score});
          }
        }
        SortMatches(&results[i].matches);
      }
      break;
    }
    NEARDUP_RETURN_IF_ERROR(DecideAll(documents, writing, docnums, &results));
    remaining = std::move(deferred);
  }
  for (StoreInsertResult& r : results) {
    if (!r.status.ok()) r.matches.clear();
    counts_.matches += r.matches.size();
  }
  return results;
}

Status RedisIndexStore::DecideAll(std::span<const SignedDocument> documents,
                                  const std::vector<size_t>& writing,
                                  const std::vector<uint32_t>& docnums,
                                  std::vector<StoreInsertResult>* results) {
  // The usual case first, for the whole batch at once: no other document in play.
  std::vector<const Signature*> signatures;
  for (size_t i : writing) signatures.push_back(&documents[i].signature);
  std::vector<std::vector<Candidate>> post;
  NEARDUP_RETURN_IF_ERROR(FindMatches(signatures, &post, nullptr));
  std::vector<size_t> clean, contested;
  for (size_t x = 0; x < writing.size(); ++x) {
    const uint32_t self = docnums[writing[x]];
    const bool alone = std::all_of(post[x].begin(), post[x].end(), [&](const Candidate& c) {
      return c.docnum == self ||
             (c.header.state != RecordState::kStored && c.header.state != RecordState::kPending &&
              c.header.state != RecordState::kBlocked);
    });
    (alone ? clean : contested).push_back(writing[x]);
  }
  std::vector<RecordHeader> headers;
  std::vector<uint32_t> clean_docnums;
  for (size_t i : clean) clean_docnums.push_back(docnums[i]);
  NEARDUP_RETURN_IF_ERROR(ReadHeaders(clean_docnums, &headers));
  // A record held back (blocked) since the query is contested after all.
  for (size_t x = 0; x < clean.size();) {
    if (headers[x].state == RecordState::kPending) {
      ++x;
      continue;
    }
    contested.push_back(clean[x]);
    clean.erase(clean.begin() + static_cast<std::ptrdiff_t>(x));
    clean_docnums.erase(clean_docnums.begin() + static_cast<std::ptrdiff_t>(x));
    headers.erase(headers.begin() + static_cast<std::ptrdiff_t>(x));
  }
  std::vector<RedisCommand> commands;
  for (size_t x = 0; x < clean.size(); ++x) {
    RecordHeader stored = headers[x];
    stored.state = RecordState::kStored;
    stored.blocker = 0;
    stored.lease = 0;
    commands.push_back(Script(kCasScript, layout_.ChunkKey(clean_docnums[x]),
                              {std::to_string(layout_.RecordOffset(clean_docnums[x])),
                               headers[x].Encode(), stored.Encode()},
                              true));
  }
  std::vector<bool> inserted(documents.size(), false);
  if (!commands.empty()) {
    auto replies = Run(commands);
    if (!replies.ok()) return replies.status();
    for (size_t x = 0; x < clean.size(); ++x) {
      const RedisReply& r = (*replies)[x];
      if (r.is_error()) return ReplyError(r, location_ + ": storing a document");
      if (r.str == commands[x].args[5] || r.str == commands[x].args[6]) {
        inserted[clean[x]] = true;
      } else {
        contested.push_back(clean[x]);  // held back meanwhile
      }
    }
  }
  std::sort(contested.begin(), contested.end());
  for (size_t i : contested) {
    std::vector<Candidate> matches;
    auto stored = Decide(documents[i].signature, docnums[i], &matches);
    if (!stored.ok()) return stored.status();
    if (*stored) {
      inserted[i] = true;
    } else {
      NEARDUP_RETURN_IF_ERROR(FillMatches(matches, &(*results)[i].matches));
      NEARDUP_RETURN_IF_ERROR(Reject(documents[i], docnums[i], documents[i].signature.empty));
    }
  }
  uint64_t stored = 0, empty = 0;
  for (size_t i : writing) {
    if (!inserted[i]) continue;
    (*results)[i].inserted = true;
    ++stored;
    if (documents[i].signature.empty) ++empty;
  }
  if (stored == 0) return Status::OK();
  commands.clear();
  commands.push_back(
      Command({"HINCRBY", layout_.MetaKey(), "documents", std::to_string(stored)}, true));
  if (empty > 0) {
    commands.push_back(
        Command({"HINCRBY", layout_.MetaKey(), "empty", std::to_string(empty)}, true));
  }
  auto replies = Run(commands);
  if (!replies.ok()) return replies.status();
  counts_.inserts += stored;
  return Status::OK();
}

Status RedisIndexStore::Remove(std::string_view id) {
  auto docnum = DocnumOf(id);
  if (!docnum.ok()) return docnum.status();
  const Status not_found = Status::NotFound("no document with id '" + PrintableId(id) + "'");
  if (!docnum->has_value()) return not_found;
  const auto d = static_cast<uint32_t>(**docnum);
  std::vector<RecordHeader> headers;
  NEARDUP_RETURN_IF_ERROR(ReadHeaders({d}, &headers));
  if (headers[0].state != RecordState::kStored) return not_found;
  RecordHeader removed = headers[0];
  removed.state = RecordState::kRemoved;
  auto done = CompareAndSet(d, headers[0], removed, nullptr);
  if (!done.ok()) return done.status();
  if (!*done) return not_found;
  std::vector<RedisCommand> commands;
  commands.push_back(
      Script(kDeleteIfScript, layout_.NamesKey(id), {std::string(id), std::to_string(d)}, true));
  commands.push_back(Command({"HDEL", layout_.IdsKey(d), std::to_string(d)}, true));
  commands.push_back(Command({"HDEL", layout_.AttachmentsKey(d), std::to_string(d)}, true));
  commands.push_back(Command({"HINCRBY", layout_.MetaKey(), "documents", "-1"}, true));
  if (headers[0].empty)
    commands.push_back(Command({"HINCRBY", layout_.MetaKey(), "empty", "-1"}, true));
  auto replies = Run(commands);
  if (!replies.ok()) return replies.status();
  ++counts_.removes;
  return Status::OK();
}

Result<Signature> RedisIndexStore::Get(std::string_view id) const {
  auto docnum = DocnumOf(id);
  if (!docnum.ok()) return docnum.status();
  const Status not_found = Status::NotFound("no document with id '" + PrintableId(id) + "'");
  if (!docnum->has_value()) return not_found;
  const auto d = static_cast<uint32_t>(**docnum);
  const uint64_t offset = layout_.RecordOffset(d);
  auto reply = client_->Run(Command({"GETRANGE", layout_.ChunkKey(d), std::to_string(offset),
                                     std::to_string(offset + layout_.record_bytes - 1)}));
  if (!reply.ok()) return reply.status();
  if (reply->is_error()) return ReplyError(*reply, location_ + ": reading a record");
  const RecordHeader header = RecordHeader::Decode(reply->str);
  if (header.state != RecordState::kStored) return not_found;
  if (reply->str.size() < layout_.record_bytes) {
    return Status::Corruption(location_ + ": the record of id '" + PrintableId(id) +
                              "' is cut short");
  }
  Signature signature;
  signature.empty = header.empty;
  for (int b = 7; b >= 0; --b) {
    signature.simhash =
        (signature.simhash << 8) | static_cast<unsigned char>(reply->str[kRecordHeaderBytes + b]);
  }
  if (layout_.accurate) {
    const auto* sketch =
        reinterpret_cast<const uint8_t*>(reply->str.data()) + kRecordHeaderBytes + 8;
    signature.sketch.assign(sketch, sketch + layout_.sketch_bytes);
  }
  return signature;
}

Result<std::string> RedisIndexStore::GetAttachment(std::string_view id) const {
  auto docnum = DocnumOf(id);
  if (!docnum.ok()) return docnum.status();
  if (!docnum->has_value()) {
    return Status::NotFound("no document with id '" + PrintableId(id) + "'");
  }
  auto reply =
      client_->Run(Command({"HGET", layout_.AttachmentsKey(**docnum), std::to_string(**docnum)}));
  if (!reply.ok()) return reply.status();
  if (reply->is_error()) return ReplyError(*reply, location_ + ": reading an attachment");
  return reply->is_nil() ? std::string() : reply->str;
}

Status RedisIndexStore::Arrive(std::string_view name, std::string_view member, size_t parties,
                               double timeout_seconds, const std::atomic<bool>* cancel) {
  const std::string key = layout_.MetaKey() + ":barrier:" + std::string(name);
  auto added = client_->Run(Command({"SADD", key, std::string(member)}, true));
  if (!added.ok()) return added.status();
  if (added->is_error()) return ReplyError(*added, location_ + ": arriving at " + key);
  const auto start = std::chrono::steady_clock::now();
  int delay_ms = 10;
  for (;;) {
    auto count = client_->Run(Command({"SCARD", key}));
    if (!count.ok()) return count.status();
    if (count->is_error()) return ReplyError(*count, location_ + ": reading " + key);
    if (static_cast<size_t>(count->integer) >= parties) return Status::OK();
    if (cancel != nullptr && cancel->load()) return Status::Cancelled("interrupted");
    const double waited =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (waited > timeout_seconds) {
      return Status::Unavailable(location_ + ": " + std::to_string(count->integer) + " of " +
                                 std::to_string(parties) + " arrived at '" + std::string(name) +
                                 "' after " + std::to_string(static_cast<int>(waited)) + " s");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
    delay_ms = std::min(delay_ms * 2, 500);
  }
}

Result<IndexStore::CompactStats> RedisIndexStore::Compact() {
  const auto start = std::chrono::steady_clock::now();
  CompactStats stats;
  stats.memory_before = Stats().remote_memory_bytes;
  const std::string pattern = layout_.prefix + ":b:*";
  const size_t entry_bytes = layout_.entry_bytes();
  for (const RedisEndpoint& node : client_->Masters()) {
    std::string cursor = "0";
    do {
      auto page = client_->RunOn(
          node, Command({"SCAN", cursor, "MATCH", pattern, "COUNT", "2000"}, false, -1));
      if (!page.ok()) return page.status();
      if (page->is_error() || page->elements.size() != 2) {
        return ReplyError(*page, location_ + ": scanning " + node.ToString());
      }
      cursor = page->elements[0].str;
      std::vector<std::string> keys;
      for (const RedisReply& k : page->elements[1].elements) keys.push_back(k.str);
      if (keys.empty()) continue;
      // The buckets, then the states of their documents.
      std::vector<RedisCommand> commands;
      for (const std::string& k : keys) commands.push_back(Command({"GET", k}));
      auto values = Run(commands);
      if (!values.ok()) return values.status();
      std::vector<uint32_t> docnums;
      for (const RedisReply& v : *values) {
        const auto* p = reinterpret_cast<const unsigned char*>(v.str.data());
        for (size_t e = 0; e + entry_bytes <= v.str.size(); e += entry_bytes) {
          const unsigned char* d = p + e + entry_bytes - 4;
          docnums.push_back(uint32_t{d[0]} | (uint32_t{d[1]} << 8) | (uint32_t{d[2]} << 16) |
                            (uint32_t{d[3]} << 24));
        }
      }
      std::sort(docnums.begin(), docnums.end());
      docnums.erase(std::unique(docnums.begin(), docnums.end()), docnums.end());
      std::vector<RecordHeader> headers;
      NEARDUP_RETURN_IF_ERROR(ReadHeaders(docnums, &headers));
      auto live = [&](uint32_t docnum) {
        const size_t at = static_cast<size_t>(
            std::lower_bound(docnums.begin(), docnums.end(), docnum) - docnums.begin());
        const RecordState s = headers[at].state;
        return s == RecordState::kStored || s == RecordState::kPending ||
               s == RecordState::kBlocked;
      };
      commands.clear();
      for (size_t i = 0; i < keys.size(); ++i) {
        const std::string& old_value = (*values)[i].str;
        std::string kept;
        std::unordered_set<uint32_t> seen;  // a replayed APPEND's second copy goes too
        for (size_t e = 0; e + entry_bytes <= old_value.size(); e += entry_bytes) {
          const auto* d =
              reinterpret_cast<const unsigned char*>(old_value.data()) + e + entry_bytes - 4;
          const uint32_t docnum = uint32_t{d[0]} | (uint32_t{d[1]} << 8) | (uint32_t{d[2]} << 16) |
                                  (uint32_t{d[3]} << 24);
          ++stats.entries_before;
          if (!live(docnum) || !seen.insert(docnum).second) continue;
          kept.append(old_value, e, entry_bytes);
          ++stats.entries_after;
        }
        commands.push_back(Script(kRewriteIfScript, keys[i], {old_value, std::move(kept)}, true));
      }
      auto rewritten = Run(commands);
      if (!rewritten.ok()) return rewritten.status();
      for (const RedisReply& r : *rewritten) {
        if (r.is_error()) return ReplyError(r, location_ + ": rewriting a bucket");
        stats.rewritten += r.integer == 1 ? 1 : 0;
      }
      stats.buckets += keys.size();
    } while (cursor != "0");
  }
  stats.memory_after = Stats().remote_memory_bytes;
  stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return stats;
}

StoreStats RedisIndexStore::Stats() const {
  StoreStats stats;
  stats.backend = backend_;
  stats.index.settings = signer_->settings();
  stats.index.inserts = counts_.inserts;
  stats.index.removes = counts_.removes;
  stats.index.queries.queries = counts_.queries;
  stats.index.queries.lookups = counts_.lookups;
  stats.index.queries.candidates = counts_.candidates;
  stats.index.queries.matches = counts_.matches;
  stats.format_version = kRedisLayoutVersion;
  stats.loaded_from = "redis";
  auto meta = client_->Run(Command({"HMGET", layout_.MetaKey(), "documents", "empty", "next"}));
  if (meta.ok() && meta->elements.size() == 3) {
    uint64_t v = 0;
    if (ParseUnsigned(meta->elements[0].str, &v)) stats.index.documents = v;
    if (ParseUnsigned(meta->elements[1].str, &v)) stats.index.empty_documents = v;
    if (ParseUnsigned(meta->elements[2].str, &v)) stats.next_row = v;
  }
  for (const RedisEndpoint& node : client_->Masters()) {
    auto info = client_->RunOn(node, Command({"INFO", "memory"}, false, -1));
    if (!info.ok()) continue;
    const std::string& text = info->str;
    const size_t at = text.find("used_memory:");
    if (at == std::string::npos) continue;
    uint64_t v = 0;
    const size_t end = text.find_first_of("\r\n", at);
    if (ParseUnsigned(text.substr(at + 12, end - at - 12), &v)) stats.remote_memory_bytes += v;
  }
  return stats;
}

}  // namespace

Result<std::unique_ptr<IndexStore>> OpenRedisIndex(const StoreLocation& location,
                                                   std::string location_text,
                                                   const IndexStoreOptions& options) {
  RedisClientOptions client_options;
  for (const auto& [host, port] : location.endpoints) client_options.seeds.push_back({host, port});
  client_options.cluster = location.kind == StoreLocation::Kind::kRedisCluster;
  client_options.user = options.redis.user;
  client_options.password = options.redis.password;
  client_options.connect_timeout_seconds = options.redis.timeout_seconds;
  client_options.command_timeout_seconds = options.redis.timeout_seconds;
  client_options.retry_seconds = options.redis.retry_seconds;
  client_options.wait_replicas = options.redis.wait_replicas;
  auto client = RedisClient::Connect(client_options);
  if (!client.ok()) return client.status().WithContext(location_text);
  const std::string& prefix = location.prefix;
  const std::string meta_key = prefix + ":{meta}";
  auto existing = (*client)->Run(Command({"HGETALL", meta_key}));
  if (!existing.ok()) return existing.status().WithContext(location_text);
  if (existing->is_error()) {
    return Status::Corruption(location_text + ": " + meta_key +
                              " is not a neardup index's meta hash (" + existing->str + ")");
  }
  std::unique_ptr<DocumentSigner> signer;
  if (options.store.method.has_value()) {
    auto s = DocumentSigner::Create(*options.store.method);
    if (!s.ok()) return s.status();
    signer = std::move(*s);
  }
  RedisReply meta_reply = std::move(*existing);
  if (meta_reply.elements.empty()) {
    if (!options.store.create_if_missing) {
      return Status::NotFound(location_text + ": there is no index under the prefix '" + prefix +
                              "'");
    }
    if (signer == nullptr) {
      auto s = DocumentSigner::Create(MethodOptions{});
      if (!s.ok()) return s.status();
      signer = std::move(*s);
    }
    const RedisLayout fresh =
        RedisLayout::ForNewIndex(prefix, *signer, options.store.expected_documents);
    std::vector<std::string> argv;
    for (auto& [field, value] : fresh.MetaFields()) {
      argv.push_back(field);
      argv.push_back(value);
    }
    auto created = (*client)->Run(Script(kInitMetaScript, meta_key, std::move(argv), true));
    if (!created.ok()) return created.status().WithContext(location_text);
    if (created->is_error()) return ReplyError(*created, location_text + ": creating the index");
    meta_reply = std::move(*created);
  }
  std::map<std::string, std::string> meta;
  for (size_t i = 0; i + 1 < meta_reply.elements.size(); i += 2) {
    meta[meta_reply.elements[i].str] = meta_reply.elements[i + 1].str;
  }
  auto layout = RedisLayout::FromMeta(prefix, meta);
  if (!layout.ok()) return layout.status().WithContext(location_text);
  if (signer != nullptr) {
    const std::string difference =
        DescribeSettingsDifference(signer->settings(), layout->settings, "here", "in the index");
    if (!difference.empty()) {
      return Status::FailedPrecondition(location_text +
                                        ": the index was made with other settings: " + difference);
    }
  } else {
    auto parsed = ParseSettingsLine(layout->settings);
    if (!parsed.ok()) return parsed.status().WithContext(location_text);
    auto s = DocumentSigner::Create(*parsed);
    if (!s.ok()) return s.status().WithContext(location_text);
    signer = std::move(*s);
  }
  return std::unique_ptr<IndexStore>(new RedisIndexStore(std::move(*client), std::move(*layout),
                                                         std::move(signer),
                                                         std::move(location_text), options.redis));
}

}  // namespace neardup::store_internal
