// The RocksDB side of the store: the open database with its column families, the options every
// open uses, and the translation of RocksDB's statuses into neardup's (messages naming the store).
// Only src/store/ includes RocksDB.
#ifndef NEARDUP_SRC_STORE_DATABASE_H_
#define NEARDUP_SRC_STORE_DATABASE_H_

#include <rocksdb/db.h>
#include <rocksdb/options.h>
#include <rocksdb/status.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "neardup/status.h"

namespace neardup::store {

// An open database and its handles (meta, ids, documents), closed and released together.
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
};

// The options of every open: paranoid checks, no LOG file (a refused directory is left exactly as
// it was), nothing created unless `create` is set.
rocksdb::Options DatabaseOptions(bool create);

// Opens the database in `dir` with the store's column families (read-only: nothing is written, no
// lock is taken). Errors as ToStatus.
Status OpenDatabase(const std::string& dir, bool read_only, bool create, Database* database);

// A RocksDB status as neardup's, naming the store: a held lock becomes FailedPrecondition "DIR is
// in use by another process", damage becomes Corruption, other failures IOError.
Status ToStatus(const rocksdb::Status& status, std::string_view dir, std::string_view doing);

}  // namespace neardup::store

#endif  // NEARDUP_SRC_STORE_DATABASE_H_
