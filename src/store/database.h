// The RocksDB side of the store: the open database with its column families, the options every
// open uses, and the translation of RocksDB's statuses into neardup's (messages naming the store).
// Only src/store/ includes RocksDB.
#ifndef NEARDUP_SRC_STORE_DATABASE_H_
#define NEARDUP_SRC_STORE_DATABASE_H_

#include <rocksdb/cache.h>
#include <rocksdb/db.h>
#include <rocksdb/options.h>
#include <rocksdb/status.h>

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "neardup/status.h"

namespace neardup::store {

// An open database and its handles (meta, ids, documents, and tables for a disk-resident store),
// closed and released together.
struct Database {
  Database() = default;
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;
  ~Database();

  std::unique_ptr<rocksdb::DB> db;
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::ColumnFamilyHandle* meta = nullptr;
  rocksdb::ColumnFamilyHandle* ids = nullptr;
  rocksdb::ColumnFamilyHandle* documents = nullptr;
  rocksdb::ColumnFamilyHandle* tables = nullptr;  // disk-resident stores only
  // Null in a read-only open of a store that has none yet.
  rocksdb::ColumnFamilyHandle* attachments = nullptr;
  rocksdb::ColumnFamilyHandle* removals = nullptr;
  std::shared_ptr<rocksdb::Cache> cache;  // disk-resident stores only: the block cache
  // Flush the memtables into table files at close, so that the next open has no log to replay
  // (set for the store's own read-write open).
  bool flush_on_close = false;

  // RocksDB's memory: block cache in use, memtables, table readers (index blocks).
  uint64_t memory_bytes() const;
};

// The options of every open: paranoid checks, no LOG file (a refused directory is left exactly as
// it was), nothing created unless `create` is set.
rocksdb::Options DatabaseOptions(bool create);

// Opens the database in `dir` with the store's column families (read-only: nothing is written, no
// lock is taken). An existing store's tables family is opened when it has one; `create` with
// `tables` creates a store that has one. A store with tables reads through a block cache of
// cache_bytes. Errors as ToStatus.
Status OpenDatabase(const std::string& dir, bool read_only, bool create, Database* database,
                    bool tables = false, uint64_t cache_bytes = uint64_t{256} << 20);

// The row of `id` in the ids family, nullopt when there is none. Errors name `dir`.
Result<std::optional<uint64_t>> ReadRowOfId(const Database& database, std::string_view dir,
                                            std::string_view id);
// The document record of `row` into *record. NotFound ("row N") when there is none.
Status ReadRecord(const Database& database, std::string_view dir, uint64_t row,
                  std::string* record);

// A RocksDB status as neardup's, naming the store: a held lock becomes FailedPrecondition "DIR is
// in use by another process", damage becomes Corruption, other failures IOError.
Status ToStatus(const rocksdb::Status& status, std::string_view dir, std::string_view doing);

}  // namespace neardup::store

#endif  // NEARDUP_SRC_STORE_DATABASE_H_
