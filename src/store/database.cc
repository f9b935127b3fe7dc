#include "store/database.h"

#include <rocksdb/table.h>

#include <algorithm>
#include <cstdarg>

#include "online/document_id.h"
#include "store/record.h"

namespace neardup::store {
namespace {

// RocksDB's diagnostics are dropped: with a logger of its own, RocksDB writes no LOG file, so that
// opening (or failing to open) a store renames and creates no file of its own accord.
class SilentLogger final : public rocksdb::Logger {
 public:
  using rocksdb::Logger::Logv;
  void Logv(const char* /*format*/, va_list /*ap*/) override {}
};

}  // namespace

Database::~Database() {
  if (db == nullptr) return;
  if (flush_on_close) {
    // Best effort: what a failed flush leaves is still in the log, replayed at the next open.
    db->Flush(rocksdb::FlushOptions(), handles).PermitUncheckedError();
  }
  for (rocksdb::ColumnFamilyHandle* handle : handles) db->DestroyColumnFamilyHandle(handle);
  db->Close().PermitUncheckedError();
}

rocksdb::Options DatabaseOptions(bool create) {
  rocksdb::Options options;
  options.create_if_missing = create;
  options.create_missing_column_families = create;
  options.error_if_exists = create;
  options.paranoid_checks = true;
  options.info_log = std::make_shared<SilentLogger>();
  // A torn last record of the log (a crash in the middle of a write) is dropped with everything
  // after it; the log before it is replayed. Acknowledged synced writes are never torn.
  options.wal_recovery_mode = rocksdb::WALRecoveryMode::kPointInTimeRecovery;
  options.keep_log_file_num = 1;
  return options;
}

Status OpenDatabase(const std::string& dir, bool read_only, bool create, Database* database,
                    bool tables, uint64_t cache_bytes) {
  rocksdb::Options options = DatabaseOptions(create);
  // A writable open makes the attachments' and removals' families when the store has none (stores
  // made before them).
  bool attachments = !read_only;
  bool removals = !read_only;
  if (!create) {
    std::vector<std::string> names;
    // A failure here (no store, a damaged MANIFEST) is reported by the open below.
    if (rocksdb::DB::ListColumnFamilies(options, dir, &names).ok()) {
      tables = std::find(names.begin(), names.end(), kTablesFamily) != names.end();
      if (std::find(names.begin(), names.end(), kAttachmentsFamily) != names.end())
        attachments = true;
      if (std::find(names.begin(), names.end(), kRemovalsFamily) != names.end()) removals = true;
    }
    if (!read_only) options.create_missing_column_families = true;
  }
  if (tables) {
    // The tables are read by queries: a block cache, every file's reader (and index block) open,
    // and no compression (the keys are random bits).
    database->cache = rocksdb::NewLRUCache(cache_bytes);
    rocksdb::BlockBasedTableOptions table;
    table.block_cache = database->cache;
    table.cache_index_and_filter_blocks = false;
    options.table_factory.reset(rocksdb::NewBlockBasedTableFactory(table));
    options.compression = rocksdb::kNoCompression;
    options.max_open_files = -1;
  }
  std::vector<rocksdb::ColumnFamilyDescriptor> families = {
      {rocksdb::kDefaultColumnFamilyName, rocksdb::ColumnFamilyOptions(options)},
      {kMetaFamily, rocksdb::ColumnFamilyOptions(options)},
      {kIdsFamily, rocksdb::ColumnFamilyOptions(options)},
      {kDocumentsFamily, rocksdb::ColumnFamilyOptions(options)},
  };
  if (tables) families.push_back({kTablesFamily, rocksdb::ColumnFamilyOptions(options)});
  if (attachments) families.push_back({kAttachmentsFamily, rocksdb::ColumnFamilyOptions(options)});
  if (removals) families.push_back({kRemovalsFamily, rocksdb::ColumnFamilyOptions(options)});
  rocksdb::DB* db = nullptr;
  const rocksdb::Status status =
      read_only ? rocksdb::DB::OpenForReadOnly(options, dir, families, &database->handles, &db)
                : rocksdb::DB::Open(options, dir, families, &database->handles, &db);
  if (!status.ok()) return ToStatus(status, dir, "open");
  database->db.reset(db);
  database->meta = database->handles[1];
  database->ids = database->handles[2];
  database->documents = database->handles[3];
  if (tables) database->tables = database->handles[4];
  size_t next = tables ? 5 : 4;
  if (attachments) database->attachments = database->handles[next++];
  if (removals) database->removals = database->handles[next++];
  return Status::OK();
}

uint64_t Database::memory_bytes() const {
  uint64_t total = cache != nullptr ? cache->GetUsage() : 0;
  uint64_t value = 0;
  for (rocksdb::ColumnFamilyHandle* handle : handles) {
    if (db->GetIntProperty(handle, "rocksdb.cur-size-all-mem-tables", &value)) total += value;
    if (db->GetIntProperty(handle, "rocksdb.estimate-table-readers-mem", &value)) total += value;
  }
  return total;
}

Result<std::optional<uint64_t>> ReadRowOfId(const Database& database, std::string_view dir,
                                            std::string_view id) {
  std::string value;
  const rocksdb::Status got =
      database.db->Get(rocksdb::ReadOptions(), database.ids, rocksdb::Slice(id), &value);
  if (got.IsNotFound()) return std::optional<uint64_t>();
  const std::string printable = online_internal::PrintableId(id);
  if (!got.ok()) return ToStatus(got, dir, "read the row of id " + printable);
  const std::optional<uint64_t> row = DecodeFixed64(value);
  if (!row) return Status::Corruption(std::string(dir) + ": malformed row of id " + printable);
  return row;
}

Status ReadRecord(const Database& database, std::string_view dir, uint64_t row,
                  std::string* record) {
  const rocksdb::Status got =
      database.db->Get(rocksdb::ReadOptions(), database.documents, RowKey(row), record);
  if (got.IsNotFound()) return Status::NotFound("row " + std::to_string(row));
  if (!got.ok()) return ToStatus(got, dir, "read row " + std::to_string(row));
  return Status::OK();
}

Status ToStatus(const rocksdb::Status& status, std::string_view dir, std::string_view doing) {
  const std::string where(dir);
  const std::string detail = status.ToString();
  if (status.IsIOError() && (detail.find("lock hold by current process") != std::string::npos ||
                             detail.find("While lock file") != std::string::npos)) {
    return Status::FailedPrecondition(where + " is in use by another process (" + detail + ")");
  }
  if (status.IsCorruption()) {
    return Status::Corruption(where + ": damaged store (" + detail + "); nothing was changed");
  }
  if (status.IsInvalidArgument()) {
    return Status::Corruption(where + ": not a neardup store, or a damaged one (" + detail +
                              "); nothing was changed");
  }
  return Status::IOError(where + ": " + std::string(doing) + ": " + detail);
}

}  // namespace neardup::store
