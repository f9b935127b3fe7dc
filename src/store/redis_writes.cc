// The Redis backend's writes: the three write rounds (records, ids, bucket entries) and
// check-and-insert with kIfNew, the protocol of doc/redis_layout.md ("Check-and-insert"): write the
// document as pending, query, and let the lower document number win every conflict between
// pending documents.
#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <thread>

#include "online/document_id.h"
#include "store/redis_index_store.h"

namespace neardup::store_internal {

using online_internal::PrintableId;

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
      ids.push_back(RedisLayout::IdField(docnum));
      ids.push_back(document.id);
      if (!document.attachment.empty()) {
        if (layout_.AttachmentsKey(docnum) != attachments[1]) {
          if (attachments.size() > 2) commands->push_back(Command(std::move(attachments), true));
          attachments = {"HSET", layout_.AttachmentsKey(docnum)};
        }
        attachments.push_back(RedisLayout::IdField(docnum));
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
    commands.push_back(
        Command({"HDEL", layout_.IdsKey(docnum), RedisLayout::IdField(docnum)}, true));
    (*docnums)[i] = 0;
  }
  uint64_t empty = 0;
  for (const auto& o : order) empty += documents[o.second].signature.empty ? 1 : 0;
  if (state == RecordState::kStored && !order.empty()) {
    commands.push_back(
        Script(kCountScript, layout_.MetaKey(), {"documents", std::to_string(order.size())}, true));
    if (empty > 0) {
      commands.push_back(
          Script(kCountScript, layout_.MetaKey(), {"empty", std::to_string(empty)}, true));
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
  commands.push_back(Command({"HDEL", layout_.IdsKey(docnum), RedisLayout::IdField(docnum)}, true));
  if (!document.attachment.empty()) {
    commands.push_back(
        Command({"HDEL", layout_.AttachmentsKey(docnum), RedisLayout::IdField(docnum)}, true));
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
    if (own.state == RecordState::kFree) {
      return Status::Unavailable(location_ + ": the record of document " + std::to_string(docnum) +
                                 " is gone while it was being inserted (Redis lost its data, or "
                                 "the keys were removed)");
    }
    if (own.state != RecordState::kPending) {
      char lease[32];
      std::snprintf(lease, sizeof(lease), "%g", options_.lease_seconds);
      return Status::Unavailable(location_ + ": the insert of document " + std::to_string(docnum) +
                                 " outlived its lease (" + lease +
                                 " s) and was given up by a worker that waited for it; insert it "
                                 "again");
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
      Script(kCountScript, layout_.MetaKey(), {"documents", std::to_string(stored)}, true));
  if (empty > 0) {
    commands.push_back(
        Script(kCountScript, layout_.MetaKey(), {"empty", std::to_string(empty)}, true));
  }
  auto replies = Run(commands);
  if (!replies.ok()) return replies.status();
  for (const RedisReply& r : *replies) {
    if (r.is_error()) return ReplyError(r, location_ + ": counting the documents stored");
  }
  counts_.inserts += stored;
  return Status::OK();
}

}  // namespace neardup::store_internal
