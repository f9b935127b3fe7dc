// Store's writes (the queue and its group commit), reads, stats and checkpoints. Open is in
// store_open.cc.
#include <rocksdb/utilities/checkpoint.h>
#include <rocksdb/write_batch.h>

#include <filesystem>
#include <unordered_map>

#include "online/document_id.h"
#include "store/disk_resident_index.h"
#include "store/record.h"
#include "store/store_internal.h"

namespace neardup {
namespace {

// The largest group a writer at the front of the queue takes with it (documents); larger
// QueryAndInsertBatch calls go alone.
constexpr size_t kMaxGroupDocuments = 4096;
// Groups applied to the index and not yet written when the next may be applied.
constexpr uint64_t kGroupsInFlight = 2;

// The index of a disk-resident store, else null.
store::DiskResidentIndex* DiskIndexOf(bool disk_resident, OnlineIndex* index) {
  return disk_resident ? static_cast<store::DiskResidentIndex*>(index) : nullptr;
}

}  // namespace

Result<FsyncMode> ParseFsyncMode(std::string_view name) {
  if (name == "always") return FsyncMode::kAlways;
  if (name == "batch") return FsyncMode::kBatch;
  if (name == "never") return FsyncMode::kNever;
  return Status::InvalidArgument("unknown fsync mode '" + std::string(name) +
                                 "' (always, batch or never)");
}

std::string_view FsyncModeName(FsyncMode mode) {
  switch (mode) {
    case FsyncMode::kAlways:
      return "always";
    case FsyncMode::kBatch:
      return "batch";
    case FsyncMode::kNever:
      return "never";
  }
  return "?";
}

Store::Store(std::string path, FsyncMode fsync, bool disk_resident)
    : path_(std::move(path)),
      fsync_(fsync),
      disk_resident_(disk_resident),
      queue_(std::make_unique<Queue>()),
      snapshot_(std::make_unique<SnapshotState>()) {}

Store::~Store() { db_.reset(); }

Status Store::Write(Writer* writer) {
  std::unique_lock lock(queue_->mutex);
  queue_->writers.push_back(writer);
  // The front writer applies the next group once at most one group is still being written: one
  // group written while the next is applied, and the writers arriving meanwhile join the group
  // after (bigger groups, fewer syncs; with more groups in flight, hundreds of concurrent writers
  // made groups of one or two, each a sync, and the waits for their turn a thundering herd).
  while (!writer->done && (writer != queue_->writers.front() || queue_->paused ||
                           queue_->tickets - queue_->written >= kGroupsInFlight))
    writer->wake.wait(lock);
  if (writer->done) return writer->status;
  // At the front: take the writers behind (kBatch only: the other modes sync, or not, per write).
  std::vector<Writer*> group = {writer};
  size_t documents = writer->documents.size();
  if (fsync_ == FsyncMode::kBatch) {
    for (auto it = queue_->writers.begin() + 1; it != queue_->writers.end(); ++it) {
      if (documents + (*it)->documents.size() > kMaxGroupDocuments) break;
      documents += (*it)->documents.size();
      group.push_back(*it);
    }
  }
  // A remove reads the row of its id from the database, and so does every query of a
  // disk-resident store: the writes before them must be there.
  bool removes = disk_resident_;
  for (const Writer* member : group) removes |= member->remove_id.has_value();
  if (removes) {
    while (queue_->written != queue_->tickets) queue_->turn.wait(lock);
  }
  queue_->applying = true;
  lock.unlock();
  PendingWrite pending = ApplyGroup(group);
  lock.lock();
  queue_->applying = false;
  // The next group may be applied while this one is written; writes keep the order of tickets.
  const uint64_t ticket = queue_->tickets++;
  for (size_t i = 0; i < group.size(); ++i) queue_->writers.pop_front();
  if (!queue_->writers.empty()) queue_->writers.front()->wake.notify_one();
  while (queue_->written != ticket) queue_->turn.wait(lock);
  lock.unlock();
  const Status written = CommitGroup(&pending);
  lock.lock();
  ++queue_->written;
  queue_->turn.notify_all();
  if (!queue_->writers.empty()) queue_->writers.front()->wake.notify_one();
  for (Writer* member : group) {
    if (!written.ok()) member->status = written;
    if (member != writer) {
      member->done = true;
      member->wake.notify_one();
    }
  }
  return writer->status;
}

// Applies the group to the in-memory index (so that each query sees what comes before it) and
// builds its batch.
Store::PendingWrite Store::ApplyGroup(std::span<Writer* const> group) {
  store::Database& rocks = db_->rocks;
  const uint32_t stamp = store::SettingsStamp(signer().settings());
  store::DiskResidentIndex* disk = DiskIndexOf(disk_resident_, index_.get());
  PendingWrite pending;
  rocksdb::WriteBatch& batch = pending.batch;
  std::vector<Undo>& undo = pending.undo;
  std::unordered_map<std::string, uint64_t> rows;  // ids inserted by this group
  uint64_t next_row = queue_->applied_row;
  const uint64_t first_removal = queue_->applied_removal;
  rocksdb::Status put;
  for (Writer* writer : group) {
    writer->status = Status::OK();
    if (writer->remove_id) {
      const std::string id(*writer->remove_id);
      auto signature = index_->Get(id);
      if (!signature.ok()) {
        writer->status = signature.status();
        continue;
      }
      std::optional<uint64_t> row;
      if (auto it = rows.find(id); it != rows.end()) {
        row = it->second;
      } else {
        auto stored = store::ReadRowOfId(rocks, path_, id);
        if (stored.ok() && !stored->has_value())
          stored = Status::Corruption(path_ + ": no row of id " + id + ", which the index holds");
        if (!stored.ok()) {
          writer->status = stored.status();
          continue;
        }
        row = **stored;
      }
      writer->status = index_->Remove(id);
      if (!writer->status.ok()) continue;
      if (put.ok()) put = batch.Delete(rocks.ids, id);
      if (put.ok()) put = batch.Delete(rocks.documents, store::RowKey(*row));
      if (put.ok()) put = batch.Delete(rocks.attachments, store::RowKey(*row));
      if (put.ok() && !disk_resident_)
        put = batch.Put(rocks.removals, store::RowKey(queue_->applied_removal++), id);
      if (put.ok() && disk != nullptr) put = disk->DeleteEntries(&batch, *row, *signature);
      rows.erase(id);
      undo.push_back({true, id, std::move(*signature)});
      continue;
    }
    writer->results->assign(writer->documents.size(), StoreInsertResult());
    for (size_t i = 0; i < writer->documents.size(); ++i) {
      const SignedDocument& document = writer->documents[i];
      StoreInsertResult& result = (*writer->results)[i];
      if (writer->query) {
        auto done = index_->QueryAndInsertSigned(document.id, document.signature, writer->policy);
        if (done.ok()) {
          result.matches = std::move(done->matches);
          result.inserted = done->inserted;
        } else {
          result.status = done.status();
        }
      } else {
        result.status = index_->InsertSigned(document.id, document.signature);
        result.inserted = result.status.ok();
      }
      if (!result.inserted) continue;
      const uint64_t row = next_row++;
      if (put.ok()) {
        put = batch.Put(rocks.documents, store::RowKey(row),
                        store::EncodeDocument(document.id, document.signature, stamp));
      }
      if (put.ok()) put = batch.Put(rocks.ids, document.id, store::EncodeFixed64(row));
      if (put.ok() && !document.attachment.empty())
        put = batch.Put(rocks.attachments, store::RowKey(row), document.attachment);
      if (put.ok() && disk != nullptr) put = disk->PutEntries(&batch, row, document.signature);
      rows[document.id] = row;
      undo.push_back({false, document.id, {}});
    }
  }
  queue_->applied_row = next_row;
  pending.next_row = next_row;
  if (!undo.empty() && put.ok())
    put = batch.Put(rocks.meta, store::kNextRowKey, store::EncodeFixed64(next_row));
  if (queue_->applied_removal != first_removal && put.ok()) {
    put = batch.Put(rocks.meta, store::kNextRemovalKey,
                    store::EncodeFixed64(queue_->applied_removal));
  }
  if (!undo.empty() && put.ok() && disk != nullptr) put = disk->PutCounts(&batch);
  if (!put.ok()) pending.status = store::ToStatus(put, path_, "write");
  return pending;
}

// Writes the batch durably; on failure takes its documents out of the index again.
Status Store::CommitGroup(PendingWrite* pending) {
  store::DiskResidentIndex* disk = DiskIndexOf(disk_resident_, index_.get());
  if (pending->undo.empty()) {
    if (disk != nullptr) disk->EndGroup(/*written=*/true);
    return Status::OK();
  }
  Status status = pending->status;
  if (status.ok()) {
    rocksdb::WriteOptions options;
    options.sync = fsync_ != FsyncMode::kNever;
    const rocksdb::Status put = db_->rocks.db->Write(options, &pending->batch);
    if (!put.ok()) status = store::ToStatus(put, path_, "write");
  }
  if (disk != nullptr) disk->EndGroup(status.ok());
  if (status.ok()) {
    queue_->next_row.store(pending->next_row);
    queue_->syncs.fetch_add(1);
    return status;
  }
  if (disk != nullptr) return status;  // nothing of the group reached the database
  for (auto it = pending->undo.rbegin(); it != pending->undo.rend(); ++it) {
    // The index took these writes a moment ago, so taking them back cannot fail.
    (it->reinsert ? index_->InsertSigned(it->id, it->signature) : index_->Remove(it->id)).ok();
  }
  return status;
}

Status Store::Insert(const SignedDocument& document, bool query, InsertPolicy policy,
                     StoreInsertResult* result) {
  std::vector<StoreInsertResult> results;
  Writer writer;
  writer.documents = std::span<const SignedDocument>(&document, 1);
  writer.query = query;
  writer.policy = policy;
  writer.results = &results;
  NEARDUP_RETURN_IF_ERROR(Write(&writer));
  *result = std::move(results[0]);
  return result->status;
}

Status Store::Insert(std::string_view id, std::string_view text) {
  auto signature = signer().Sign(text);
  if (!signature.ok()) return signature.status();
  return InsertSigned(id, *signature);
}

Status Store::InsertSigned(std::string_view id, const Signature& signature) {
  StoreInsertResult result;
  return Insert(SignedDocument{std::string(id), signature, {}}, /*query=*/false,
                InsertPolicy::kAlways, &result);
}

Status Store::Remove(std::string_view id) {
  Writer writer;
  writer.remove_id = id;
  return Write(&writer);
}

Result<QueryAndInsertResult> Store::QueryAndInsert(std::string_view id, std::string_view text,
                                                   InsertPolicy policy) {
  auto signature = signer().Sign(text);
  if (!signature.ok()) return signature.status();
  return QueryAndInsertSigned(id, *signature, policy);
}

Result<QueryAndInsertResult> Store::QueryAndInsertSigned(std::string_view id,
                                                         const Signature& signature,
                                                         InsertPolicy policy,
                                                         std::string_view attachment) {
  StoreInsertResult result;
  NEARDUP_RETURN_IF_ERROR(
      Insert(SignedDocument{std::string(id), signature, std::string(attachment)},
             /*query=*/true, policy, &result));
  return QueryAndInsertResult{std::move(result.matches), result.inserted};
}

Result<std::vector<StoreInsertResult>> Store::QueryAndInsertBatch(
    std::span<const SignedDocument> documents, InsertPolicy policy) {
  std::vector<StoreInsertResult> results;
  Writer writer;
  writer.documents = documents;
  writer.query = true;
  writer.policy = policy;
  writer.results = &results;
  NEARDUP_RETURN_IF_ERROR(Write(&writer));
  return results;
}

Result<std::vector<StoreInsertResult>> Store::InsertBatch(
    std::span<const SignedDocument> documents) {
  std::vector<StoreInsertResult> results;
  Writer writer;
  writer.documents = documents;
  writer.results = &results;
  NEARDUP_RETURN_IF_ERROR(Write(&writer));
  return results;
}

Result<std::vector<OnlineMatch>> Store::Query(std::string_view text) const {
  return index_->Query(text);
}

Result<std::vector<OnlineMatch>> Store::QuerySigned(const Signature& signature,
                                                    OnlineQueryStats* stats) const {
  return index_->QuerySigned(signature, stats);
}

bool Store::Contains(std::string_view id) const { return index_->Contains(id); }

Result<Signature> Store::Get(std::string_view id) const {
  // From the database: the in-memory index finds a merged row's band keys only by a scan of its
  // tables. A write in flight is not seen until it is acknowledged.
  if (disk_resident_) return index_->Get(id);
  const store::Database& rocks = db_->rocks;
  const Status not_found =
      Status::NotFound("no document with id '" + online_internal::PrintableId(id) + "'");
  auto row = store::ReadRowOfId(rocks, path_, id);
  if (!row.ok()) return row.status();
  if (!row->has_value()) return not_found;
  std::string value;
  const Status read = store::ReadRecord(rocks, path_, **row, &value);
  if (read.code() == Status::Code::kNotFound) return not_found;  // removed in between
  NEARDUP_RETURN_IF_ERROR(read);
  store::DecodedDocument document;
  const Status decoded =
      store::DecodeDocument(value, store::SettingsStamp(signer().settings()),
                            signer().sketch_bytes(), signer().bands(), &document);
  if (!decoded.ok()) return decoded.WithContext(path_ + ": row " + std::to_string(**row));
  return std::move(document.signature);
}

Result<std::string> Store::GetAttachment(std::string_view id) const {
  const store::Database& rocks = db_->rocks;
  auto row = store::ReadRowOfId(rocks, path_, id);
  if (!row.ok()) return row.status();
  if (!row->has_value())
    return Status::NotFound("no document with id '" + online_internal::PrintableId(id) + "'");
  std::string value;
  if (rocks.attachments == nullptr) return value;
  const rocksdb::Status got =
      rocks.db->Get(rocksdb::ReadOptions(), rocks.attachments, store::RowKey(**row), &value);
  if (got.IsNotFound()) return std::string();
  if (!got.ok())
    return store::ToStatus(got, path_, "read the attachment of row " + std::to_string(**row));
  return value;
}

Status Store::ForEach(const std::function<void(std::string_view, const Signature&)>& fn) const {
  return index_->ForEach(fn);
}

StoreStats Store::Stats() const {
  StoreStats stats;
  stats.index = index_->Stats();
  stats.format_version = store::kFormatVersion;
  stats.next_row = queue_->next_row.load();
  stats.fsync = fsync_;
  stats.syncs = queue_->syncs.load();
  stats.disk_resident = disk_resident_;
  if (disk_resident_)
    stats.table_design = DiskIndexOf(true, index_.get())->tables().design().ToString();
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(path_, error)) {
    if (!entry.is_regular_file(error)) continue;
    const uint64_t bytes = entry.file_size(error);
    stats.disk_bytes += bytes;
    if (entry.path().extension() == ".log") stats.log_bytes += bytes;
  }
  stats.snapshot_rows = snapshot_->rows.load();
  stats.snapshot_removals = snapshot_->removals.load();
  stats.snapshot_bytes = snapshot_->bytes.load();
  stats.snapshot_time = snapshot_->time.load();
  stats.snapshot_seconds = static_cast<double>(snapshot_->nanoseconds.load()) / 1e9;
  stats.snapshot_pause_seconds = static_cast<double>(snapshot_->pause_nanoseconds.load()) / 1e9;
  stats.loaded_from = snapshot_->loaded_from;
  stats.load_seconds = snapshot_->load_seconds;
  stats.snapshot_skipped = snapshot_->skipped;
  return stats;
}

Status Store::Checkpoint(const std::string& dir) const {
  // The snapshot the database points to goes with it (hard-linked, or copied), so that the copy
  // opens as fast; without it the copy rebuilds its index.
  std::lock_guard<std::mutex> hold(snapshot_->mutex);
  rocksdb::Checkpoint* checkpoint = nullptr;
  rocksdb::Status status = rocksdb::Checkpoint::Create(db_->rocks.db.get(), &checkpoint);
  if (status.ok()) status = checkpoint->CreateCheckpoint(dir);
  delete checkpoint;
  if (!status.ok()) return store::ToStatus(status, dir, "checkpoint");
  if (!snapshot_->file.empty()) {
    const std::filesystem::path from = std::filesystem::path(path_) / snapshot_->file;
    const std::filesystem::path to = std::filesystem::path(dir) / snapshot_->file;
    std::error_code error;
    std::filesystem::create_hard_link(from, to, error);
    if (error) {
      error.clear();
      std::filesystem::copy_file(from, to, error);
    }
    if (error) std::filesystem::remove(to, error);  // best effort: the copy rebuilds instead
  }
  return Status::OK();
}

}  // namespace neardup
