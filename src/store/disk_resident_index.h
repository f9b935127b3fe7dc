// The index of a disk-resident store (simhash only): the permuted SimHash tables live in the
// store's own RocksDB database (the `tables` family, store/simhash_tables.h) rather than in memory,
// so a store may hold more documents than RAM. It answers the OnlineIndex calls the store's write
// queue makes, from the database plus an overlay of the group of writes being applied: the queue
// applies one group at a time to the overlay (so that each query of a group sees the writes before
// it), writes the group's batch (which also carries the table entries, PutEntries/DeleteEntries),
// then calls EndGroup, which drops the overlay.
//
// Thread safety: queries may run at any time on any thread; group calls come from one writer at a
// time (the store's queue).
#ifndef NEARDUP_SRC_STORE_DISK_RESIDENT_INDEX_H_
#define NEARDUP_SRC_STORE_DISK_RESIDENT_INDEX_H_

#include <rocksdb/write_batch.h>

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <shared_mutex>
#include <string>

#include "neardup/online_index.h"
#include "store/database.h"
#include "store/simhash_tables.h"

namespace neardup::store {

class DiskResidentIndex final : public OnlineIndex {
 public:
  // `database` (with its tables family) outlives the index; documents and empty_documents are the
  // stored counts (meta).
  DiskResidentIndex(std::unique_ptr<DocumentSigner> signer, const TableDesign& design,
                    const Database* database, std::string dir, uint64_t documents,
                    uint64_t empty_documents);

  const DocumentSigner& signer() const override { return *signer_; }
  Status Insert(std::string_view id, std::string_view text) override;
  Status InsertSigned(std::string_view id, const Signature& signature) override;
  Status InsertAll(const std::function<Result<bool>(std::string*, Signature*)>& next,
                   uint64_t size_hint) override;
  Status Remove(std::string_view id) override;
  Result<std::vector<OnlineMatch>> Query(std::string_view text) const override;
  Result<std::vector<OnlineMatch>> QuerySigned(const Signature& signature,
                                               OnlineQueryStats* stats) const override;
  Result<QueryAndInsertResult> QueryAndInsert(std::string_view id, std::string_view text,
                                              InsertPolicy policy) override;
  Result<QueryAndInsertResult> QueryAndInsertSigned(std::string_view id, const Signature& signature,
                                                    InsertPolicy policy) override;
  bool Contains(std::string_view id) const override;
  Result<Signature> Get(std::string_view id) const override;
  // In row order from the database, then the overlay's inserts.
  Status ForEach(const std::function<void(std::string_view, const Signature&)>& fn) const override;
  OnlineIndexStats Stats() const override;
  // NotSupported: the tables are in the database, not in memory.
  Status Save(OutputFile* out) const override;

  const SimhashTables& tables() const { return tables_; }

  // The group's batch: the table entries of a document inserted at `row` or removed from it
  // (none for a document without features), and the meta counts as they stand after the group.
  rocksdb::Status PutEntries(rocksdb::WriteBatch* batch, uint64_t row,
                             const Signature& signature) const;
  rocksdb::Status DeleteEntries(rocksdb::WriteBatch* batch, uint64_t row,
                                const Signature& signature) const;
  rocksdb::Status PutCounts(rocksdb::WriteBatch* batch) const;
  // The group's batch was written (the counts move on) or not; the overlay is dropped either way.
  void EndGroup(bool written);

 private:
  struct Pending {
    uint64_t simhash = 0;
    bool empty = false;
  };
  Status Decode(std::string_view record, uint64_t row, std::string_view* id,
                Signature* signature) const;
  Result<bool> ContainsLocked(std::string_view id) const;
  Result<std::vector<OnlineMatch>> QueryLocked(const Signature& signature,
                                               OnlineQueryStats* stats) const;
  // FailedPrecondition when the id is stored (or in the group); the database's errors.
  Status CheckNewLocked(std::string_view id) const;
  // Adds a document whose id CheckNewLocked accepted to the group.
  void AddLocked(std::string_view id, const Signature& signature);
  Status CheckSignature(const Signature& signature) const;

  const std::unique_ptr<DocumentSigner> signer_;
  const SimhashTables tables_;
  const Database* const database_;
  const std::string dir_;
  const uint32_t stamp_;

  // The overlay: the current group's inserts (id -> signature) and removes (of stored documents:
  // their ids and rows). Guarded by mutex_ (shared for queries).
  mutable std::shared_mutex mutex_;
  std::map<std::string, Pending, std::less<>> inserted_;
  std::set<std::string, std::less<>> removed_ids_;
  std::set<uint64_t> removed_rows_;
  int64_t documents_delta_ = 0, empty_delta_ = 0;
  uint64_t documents_ = 0, empty_documents_ = 0;  // stored
  uint64_t group_inserts_ = 0, group_removes_ = 0;
  uint64_t inserts_ = 0, removes_ = 0;  // by this process, written

  mutable std::mutex stats_mutex_;
  mutable OnlineQueryStats query_stats_;
};

}  // namespace neardup::store

#endif  // NEARDUP_SRC_STORE_DISK_RESIDENT_INDEX_H_
