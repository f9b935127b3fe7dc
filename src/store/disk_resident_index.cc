#include "store/disk_resident_index.h"

#include <rocksdb/perf_context.h>

#include <algorithm>
#include <bit>

#include "online/document_id.h"
#include "store/record.h"

namespace neardup::store {

using online_internal::CheckId;
using online_internal::PrintableId;

DiskResidentIndex::DiskResidentIndex(std::unique_ptr<DocumentSigner> signer,
                                     const TableDesign& design, const Database* database,
                                     std::string dir, uint64_t documents, uint64_t empty_documents)
    : signer_(std::move(signer)),
      tables_(design),
      database_(database),
      dir_(std::move(dir)),
      stamp_(SettingsStamp(signer_->settings())),
      documents_(documents),
      empty_documents_(empty_documents) {}

Status DiskResidentIndex::CheckSignature(const Signature& signature) const {
  if (!signature.sketch.empty() || !signature.band_keys.empty()) {
    return Status::InvalidArgument("the signature has a sketch of " +
                                   std::to_string(signature.sketch.size()) + " bytes and " +
                                   std::to_string(signature.band_keys.size()) +
                                   " band keys; this index's method needs 0 and 0");
  }
  return Status::OK();
}

Status DiskResidentIndex::Decode(std::string_view record, uint64_t row, std::string_view* id,
                                 Signature* signature) const {
  DecodedDocument document;
  const Status status = DecodeDocument(record, stamp_, 0, 0, &document);
  if (!status.ok()) {
    return Status::Corruption(dir_ + ": row " + std::to_string(row) + ": " + status.message());
  }
  *id = document.id;
  *signature = std::move(document.signature);
  return Status::OK();
}

Result<bool> DiskResidentIndex::ContainsLocked(std::string_view id) const {
  if (inserted_.find(id) != inserted_.end()) return true;
  if (removed_ids_.find(id) != removed_ids_.end()) return false;
  auto row = ReadRowOfId(*database_, dir_, id);
  if (!row.ok()) return row.status();
  return row->has_value();
}

Result<std::vector<OnlineMatch>> DiskResidentIndex::QueryLocked(const Signature& signature,
                                                                OnlineQueryStats* stats) const {
  ++stats->queries;
  std::vector<OnlineMatch> out;
  if (signature.empty) return out;
  const int k = signer_->options().k;
  DiskQueryStats work;
  std::vector<Match> found;
  const rocksdb::Status read =
      tables_.Query(database_->db.get(), database_->tables, rocksdb::ReadOptions(),
                    signature.simhash, k, &found, &work);
  if (!read.ok()) return ToStatus(read, dir_, "query");
  stats->lookups += work.seeks;
  stats->candidates += work.entries_read;
  std::string record;
  for (const Match& match : found) {
    if (removed_rows_.count(match.id) != 0) continue;
    const Status status = ReadRecord(*database_, dir_, match.id, &record);
    if (status.code() == Status::Code::kNotFound) continue;  // removed while we read
    NEARDUP_RETURN_IF_ERROR(status);
    std::string_view id;
    Signature stored;
    NEARDUP_RETURN_IF_ERROR(Decode(record, match.id, &id, &stored));
    out.push_back({std::string(id), static_cast<double>(match.distance)});
  }
  // The group's own inserts; a query from outside the queue may find one of them in the database
  // too (its batch written, the overlay not yet dropped): it is reported once.
  for (const auto& entry : inserted_) {
    // Named rather than bound: clang 14 cannot capture a structured binding in a lambda.
    const std::string& id = entry.first;
    const auto& pending = entry.second;
    ++stats->candidates;
    if (pending.empty) continue;
    const int distance = std::popcount(pending.simhash ^ signature.simhash);
    if (distance > k) continue;
    if (std::any_of(out.begin(), out.end(), [&](const OnlineMatch& m) { return m.id == id; }))
      continue;
    out.push_back({id, static_cast<double>(distance)});
  }
  stats->matches += out.size();
  std::sort(out.begin(), out.end(), [](const OnlineMatch& a, const OnlineMatch& b) {
    return a.score != b.score ? a.score < b.score : a.id < b.id;
  });
  return out;
}

Status DiskResidentIndex::CheckNewLocked(std::string_view id) const {
  auto contains = ContainsLocked(id);
  if (!contains.ok()) return contains.status();
  if (*contains)
    return Status::FailedPrecondition("id '" + PrintableId(id) + "' is already stored");
  return Status::OK();
}

void DiskResidentIndex::AddLocked(std::string_view id, const Signature& signature) {
  inserted_.emplace(std::string(id), Pending{signature.simhash, signature.empty});
  ++group_inserts_;
  ++documents_delta_;
  empty_delta_ += signature.empty;
}

Status DiskResidentIndex::Insert(std::string_view id, std::string_view text) {
  NEARDUP_RETURN_IF_ERROR(CheckId(id));
  auto signature = signer_->Sign(text);
  if (!signature.ok()) return signature.status();
  return InsertSigned(id, *signature);
}

Status DiskResidentIndex::InsertSigned(std::string_view id, const Signature& signature) {
  NEARDUP_RETURN_IF_ERROR(CheckId(id));
  NEARDUP_RETURN_IF_ERROR(CheckSignature(signature));
  std::unique_lock lock(mutex_);
  NEARDUP_RETURN_IF_ERROR(CheckNewLocked(id));
  AddLocked(id, signature);
  return Status::OK();
}

Status DiskResidentIndex::InsertAll(
    const std::function<Result<bool>(std::string*, Signature*)>& next, uint64_t /*size_hint*/) {
  std::string id;
  Signature signature;
  for (uint64_t number = 1;; ++number) {
    auto more = next(&id, &signature);
    if (!more.ok()) return more.status();
    if (!*more) return Status::OK();
    NEARDUP_RETURN_IF_ERROR(
        InsertSigned(id, signature)
            .WithContext("document " + std::to_string(number) + " of the load"));
  }
}

Status DiskResidentIndex::Remove(std::string_view id) {
  std::unique_lock lock(mutex_);
  if (auto it = inserted_.find(id); it != inserted_.end()) {
    --documents_delta_;
    empty_delta_ -= it->second.empty;
    inserted_.erase(it);
    ++group_removes_;
    return Status::OK();
  }
  const Status not_found = Status::NotFound("no document with id '" + PrintableId(id) + "'");
  if (removed_ids_.find(id) != removed_ids_.end()) return not_found;
  auto row = ReadRowOfId(*database_, dir_, id);
  if (!row.ok()) return row.status();
  if (!row->has_value()) return not_found;
  std::string record;
  NEARDUP_RETURN_IF_ERROR(ReadRecord(*database_, dir_, **row, &record));
  std::string_view stored_id;
  Signature signature;
  NEARDUP_RETURN_IF_ERROR(Decode(record, **row, &stored_id, &signature));
  removed_ids_.emplace(id);
  removed_rows_.insert(**row);
  ++group_removes_;
  --documents_delta_;
  empty_delta_ -= signature.empty;
  return Status::OK();
}

Result<std::vector<OnlineMatch>> DiskResidentIndex::Query(std::string_view text) const {
  auto signature = signer_->Sign(text);
  if (!signature.ok()) return signature.status();
  return QuerySigned(*signature, nullptr);
}

Result<std::vector<OnlineMatch>> DiskResidentIndex::QuerySigned(const Signature& signature,
                                                                OnlineQueryStats* stats) const {
  NEARDUP_RETURN_IF_ERROR(CheckSignature(signature));
  std::shared_lock lock(mutex_);
  OnlineQueryStats local;
  auto matches = QueryLocked(signature, &local);
  if (!matches.ok()) return matches.status();
  {
    std::lock_guard stats_lock(stats_mutex_);
    query_stats_ += local;
  }
  if (stats != nullptr) *stats += local;
  return matches;
}

Result<QueryAndInsertResult> DiskResidentIndex::QueryAndInsert(std::string_view id,
                                                               std::string_view text,
                                                               InsertPolicy policy) {
  NEARDUP_RETURN_IF_ERROR(CheckId(id));
  auto signature = signer_->Sign(text);
  if (!signature.ok()) return signature.status();
  return QueryAndInsertSigned(id, *signature, policy);
}

Result<QueryAndInsertResult> DiskResidentIndex::QueryAndInsertSigned(std::string_view id,
                                                                     const Signature& signature,
                                                                     InsertPolicy policy) {
  NEARDUP_RETURN_IF_ERROR(CheckId(id));
  NEARDUP_RETURN_IF_ERROR(CheckSignature(signature));
  std::unique_lock lock(mutex_);
  NEARDUP_RETURN_IF_ERROR(CheckNewLocked(id));
  QueryAndInsertResult result;
  OnlineQueryStats local;
  auto matches = QueryLocked(signature, &local);
  if (!matches.ok()) return matches.status();
  {
    std::lock_guard stats_lock(stats_mutex_);
    query_stats_ += local;
  }
  result.matches = std::move(*matches);
  if (policy == InsertPolicy::kAlways || result.matches.empty()) {
    AddLocked(id, signature);  // checked above, under the same lock
    result.inserted = true;
  }
  return result;
}

bool DiskResidentIndex::Contains(std::string_view id) const {
  std::shared_lock lock(mutex_);
  auto contains = ContainsLocked(id);
  return contains.ok() && *contains;
}

Result<Signature> DiskResidentIndex::Get(std::string_view id) const {
  std::shared_lock lock(mutex_);
  const Status not_found = Status::NotFound("no document with id '" + PrintableId(id) + "'");
  Signature signature;
  if (auto it = inserted_.find(id); it != inserted_.end()) {
    signature.simhash = it->second.simhash;
    signature.empty = it->second.empty;
    return signature;
  }
  if (removed_ids_.find(id) != removed_ids_.end()) return not_found;
  auto row = ReadRowOfId(*database_, dir_, id);
  if (!row.ok()) return row.status();
  if (!row->has_value()) return not_found;
  std::string record;
  const Status read = ReadRecord(*database_, dir_, **row, &record);
  if (read.code() == Status::Code::kNotFound) return not_found;
  NEARDUP_RETURN_IF_ERROR(read);
  std::string_view stored_id;
  NEARDUP_RETURN_IF_ERROR(Decode(record, **row, &stored_id, &signature));
  return signature;
}

Status DiskResidentIndex::ForEach(
    const std::function<void(std::string_view, const Signature&)>& fn) const {
  std::shared_lock lock(mutex_);
  rocksdb::ReadOptions read;
  read.fill_cache = false;
  std::unique_ptr<rocksdb::Iterator> it(database_->db->NewIterator(read, database_->documents));
  std::string_view id;
  Signature signature;
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    const std::optional<uint64_t> row =
        ParseRowKey(std::string_view(it->key().data(), it->key().size()));
    if (!row || removed_rows_.count(*row) != 0) continue;
    NEARDUP_RETURN_IF_ERROR(
        Decode(std::string_view(it->value().data(), it->value().size()), *row, &id, &signature));
    if (inserted_.find(id) != inserted_.end()) continue;  // written, overlay not dropped yet
    fn(id, signature);
  }
  if (!it->status().ok()) return ToStatus(it->status(), dir_, "read");
  for (const auto& [pending_id, pending] : inserted_) {
    signature = Signature();
    signature.simhash = pending.simhash;
    signature.empty = pending.empty;
    fn(pending_id, signature);
  }
  return Status::OK();
}

Status DiskResidentIndex::Save(OutputFile*) const {
  return Status::NotSupported(dir_ + ": a disk-resident index keeps its tables in the database, " +
                              "not in memory: it has no snapshot to save");
}

OnlineIndexStats DiskResidentIndex::Stats() const {
  std::shared_lock lock(mutex_);
  OnlineIndexStats stats;
  stats.documents = documents_;
  stats.empty_documents = empty_documents_;
  stats.inserts = inserts_;
  stats.removes = removes_;
  stats.settings = signer_->settings();
  stats.memory_bytes = database_->memory_bytes();
  std::lock_guard stats_lock(stats_mutex_);
  stats.queries = query_stats_;
  return stats;
}

rocksdb::Status DiskResidentIndex::PutEntries(rocksdb::WriteBatch* batch, uint64_t row,
                                              const Signature& signature) const {
  if (signature.empty) return rocksdb::Status::OK();
  return tables_.Put(batch, database_->tables, row, signature.simhash);
}

rocksdb::Status DiskResidentIndex::DeleteEntries(rocksdb::WriteBatch* batch, uint64_t row,
                                                 const Signature& signature) const {
  if (signature.empty) return rocksdb::Status::OK();
  return tables_.Delete(batch, database_->tables, row, signature.simhash);
}

rocksdb::Status DiskResidentIndex::PutCounts(rocksdb::WriteBatch* batch) const {
  std::shared_lock lock(mutex_);
  rocksdb::Status status = batch->Put(
      database_->meta, kDocumentsKey,
      EncodeFixed64(static_cast<uint64_t>(static_cast<int64_t>(documents_) + documents_delta_)));
  if (status.ok()) {
    status = batch->Put(database_->meta, kEmptyDocumentsKey,
                        EncodeFixed64(static_cast<uint64_t>(static_cast<int64_t>(empty_documents_) +
                                                            empty_delta_)));
  }
  return status;
}

void DiskResidentIndex::EndGroup(bool written) {
  std::unique_lock lock(mutex_);
  if (written) {
    documents_ = static_cast<uint64_t>(static_cast<int64_t>(documents_) + documents_delta_);
    empty_documents_ = static_cast<uint64_t>(static_cast<int64_t>(empty_documents_) + empty_delta_);
    inserts_ += group_inserts_;
    removes_ += group_removes_;
  }
  group_inserts_ = group_removes_ = 0;
  inserted_.clear();
  removed_ids_.clear();
  removed_rows_.clear();
  documents_delta_ = empty_delta_ = 0;
}

}  // namespace neardup::store
