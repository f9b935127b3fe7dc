// The Redis backend: opening an index, queries, reads, removes, compaction and the shards'
// barrier. Queries read the buckets of the signature's band keys (or SimHash blocks), then the
// records of the candidates, then the ids of the matches: three pipelined rounds, whatever the
// number of nodes. The writes are in redis_writes.cc.
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
#include "store/redis_index_store.h"
#include "store/redis_layout.h"

namespace neardup::store_internal {

using online_internal::PrintableId;

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
                                    OnlineQueryStats* stats, double lowest) const {
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
      const uint64_t id = layout_.BucketId(t, value);
      std::string key = layout_.BucketKeyOfId(id);
      auto [it, added] = bucket_of.try_emplace(key, commands.size());
      // The appended entries and the packed ones: the same slot, one command.
      if (added) commands.push_back(Command({"MGET", std::move(key), layout_.PackedKeyOfId(id)}));
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
    if (r.elements.size() != 2) {
      return Status::Corruption(location_ + ": reading a bucket: not the reply of MGET");
    }
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
      auto take = [&](uint32_t docnum, int distance) {
        if (!seen.insert(docnum).second) return;
        found[i].push_back({docnum, distance});
        if (record_of.try_emplace(docnum, records.size()).second) records.push_back(docnum);
      };
      const RedisReply& bucket = (*buckets)[b];
      layout_.ForEachMatch(t, value, bucket.elements[0].str, take);
      if (!bucket.elements[1].str.empty()) {
        const Status packed = layout_.ForEachPackedMatch(t, value, bucket.elements[1].str, take);
        if (!packed.ok()) {
          return Status::Corruption(location_ + ": " +
                                    layout_.PackedKeyOfId(layout_.BucketId(t, value)) + ": " +
                                    packed.message());
        }
      }
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
  const double threshold = lowest >= 0 ? lowest : signer_->options().threshold;
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
    commands.push_back(Command({"HGET", layout_.IdsKey(d), RedisLayout::IdField(d)}));
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

Result<std::vector<std::vector<OnlineMatch>>> RedisIndexStore::QueryBatchAtLeast(
    std::span<const Signature> signatures, double lowest, OnlineQueryStats* stats) const {
  const double threshold = signer_->options().threshold;
  if (!(lowest <= threshold) || (!layout_.accurate && lowest < threshold)) {
    return Status::InvalidArgument(
        "queries below the threshold take the accurate method and a "
        "bound at most the threshold");
  }
  std::vector<const Signature*> pointers;
  for (const Signature& s : signatures) {
    NEARDUP_RETURN_IF_ERROR(CheckSignature(s));
    pointers.push_back(&s);
  }
  OnlineQueryStats local;
  std::vector<std::vector<Candidate>> found;
  NEARDUP_RETURN_IF_ERROR(
      FindMatches(pointers, &found, &local, layout_.accurate ? std::max(lowest, 0.0) : -1));
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
  auto reply =
      client_->Run(Script(kCountScript, layout_.MetaKey(), {"next", std::to_string(n)}, true));
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
  return end - n;
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
  commands.push_back(Command({"HDEL", layout_.IdsKey(d), RedisLayout::IdField(d)}, true));
  commands.push_back(Command({"HDEL", layout_.AttachmentsKey(d), RedisLayout::IdField(d)}, true));
  commands.push_back(Script(kCountScript, layout_.MetaKey(), {"documents", "-1"}, true));
  if (headers[0].empty)
    commands.push_back(Script(kCountScript, layout_.MetaKey(), {"empty", "-1"}, true));
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
  auto reply = client_->Run(
      Command({"HGET", layout_.AttachmentsKey(**docnum), RedisLayout::IdField(**docnum)}));
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
  const size_t at = member.rfind('@');
  const std::string_view group =
      at == std::string_view::npos ? std::string_view() : member.substr(at);
  for (;;) {
    auto members = client_->Run(Command({"SMEMBERS", key}));
    if (!members.ok()) return members.status();
    if (members->is_error()) return ReplyError(*members, location_ + ": reading " + key);
    for (const RedisReply& m : members->elements) {
      const size_t other_at = m.str.rfind('@');
      const std::string_view other_group = other_at == std::string::npos
                                               ? std::string_view()
                                               : std::string_view(m.str).substr(other_at);
      if (other_group != group) {
        return Status::FailedPrecondition(
            location_ + ": '" + m.str + "' arrived at '" + std::string(name) + "' too, not of '" +
            std::string(member) +
            "''s group: another job (or the same given another N) uses this "
            "index");
      }
    }
    const size_t count = members->elements.size();
    if (count >= parties) return Status::OK();
    if (cancel != nullptr && cancel->load()) return Status::Cancelled("interrupted");
    const double waited =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (waited > timeout_seconds) {
      return Status::Unavailable(location_ + ": " + std::to_string(count) + " of " +
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
  // Both kinds of bucket key: appended (b) and packed (c).
  const std::string pattern = layout_.prefix + ":[bc]:*";
  // Buckets done: a SCAN may return a key again, or a packed key this compaction wrote.
  const uint64_t per_table = uint64_t{1} << layout_.bucket_bits;
  std::vector<bool> done(static_cast<size_t>(layout_.tables) * per_table);
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
      std::vector<uint64_t> bucket_ids;
      for (const RedisReply& k : page->elements[1].elements) {
        uint64_t id = 0;
        if (!layout_.BucketIdOfKey(k.str, &id)) continue;
        const uint64_t table = id >> 32;
        const uint64_t bucket = id & 0xFFFFFFFF;
        if (table >= static_cast<uint64_t>(layout_.tables) || bucket >= per_table) continue;
        if (done[table * per_table + bucket]) continue;
        done[table * per_table + bucket] = true;
        bucket_ids.push_back(id);
      }
      if (bucket_ids.empty()) continue;
      // The buckets (appended and packed entries), then the states of their documents.
      std::vector<RedisCommand> commands;
      for (uint64_t id : bucket_ids) {
        commands.push_back(Command({"MGET", layout_.BucketKeyOfId(id), layout_.PackedKeyOfId(id)}));
      }
      auto values = Run(commands);
      if (!values.ok()) return values.status();
      std::vector<std::vector<BucketEntry>> entries(bucket_ids.size());
      std::vector<uint32_t> docnums;
      for (size_t i = 0; i < bucket_ids.size(); ++i) {
        const RedisReply& v = (*values)[i];
        if (v.is_error() || v.elements.size() != 2) {
          return ReplyError(v, location_ + ": reading a bucket");
        }
        layout_.UnpackAppended(v.elements[0].str, &entries[i]);
        if (!v.elements[1].str.empty()) {
          const Status unpacked = layout_.Unpack(v.elements[1].str, &entries[i]);
          if (!unpacked.ok()) {
            return Status::Corruption(location_ + ": " + layout_.PackedKeyOfId(bucket_ids[i]) +
                                      ": " + unpacked.message());
          }
        }
        for (const BucketEntry& e : entries[i]) docnums.push_back(e.docnum);
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
      for (size_t i = 0; i < bucket_ids.size(); ++i) {
        std::vector<BucketEntry>& kept = entries[i];
        stats.entries_before += kept.size();
        // Document order, each document once (a replayed APPEND's second copy goes too).
        std::stable_sort(kept.begin(), kept.end(), [](const BucketEntry& a, const BucketEntry& b) {
          return a.docnum < b.docnum;
        });
        kept.erase(std::unique(kept.begin(), kept.end(),
                               [](const BucketEntry& a, const BucketEntry& b) {
                                 return a.docnum == b.docnum;
                               }),
                   kept.end());
        std::erase_if(kept, [&](const BucketEntry& e) { return !live(e.docnum); });
        stats.entries_after += kept.size();
        const RedisReply& v = (*values)[i];
        commands.push_back(Script2(kPackIfScript, layout_.BucketKeyOfId(bucket_ids[i]),
                                   layout_.PackedKeyOfId(bucket_ids[i]),
                                   {v.elements[0].str, v.elements[1].str, layout_.Pack(kept)},
                                   true));
      }
      auto rewritten = Run(commands);
      if (!rewritten.ok()) return rewritten.status();
      for (const RedisReply& r : *rewritten) {
        if (r.is_error()) return ReplyError(r, location_ + ": rewriting a bucket");
        stats.rewritten += r.integer == 1 ? 1 : 0;
      }
      stats.buckets += bucket_ids.size();
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
    if (existing->str.starts_with("NOPERM")) {
      return Status::PermissionDenied(location_text + ": the Redis user may not read " + meta_key +
                                      " (" + existing->str + ")");
    }
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
