#include "store/database.h"

#include <cstdarg>

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

Status OpenDatabase(const std::string& dir, bool read_only, bool create, Database* database) {
  const rocksdb::Options options = DatabaseOptions(create);
  std::vector<rocksdb::ColumnFamilyDescriptor> families = {
      {rocksdb::kDefaultColumnFamilyName, rocksdb::ColumnFamilyOptions(options)},
      {kMetaFamily, rocksdb::ColumnFamilyOptions(options)},
      {kIdsFamily, rocksdb::ColumnFamilyOptions(options)},
      {kDocumentsFamily, rocksdb::ColumnFamilyOptions(options)},
  };
  rocksdb::DB* db = nullptr;
  const rocksdb::Status status =
      read_only ? rocksdb::DB::OpenForReadOnly(options, dir, families, &database->handles, &db)
                : rocksdb::DB::Open(options, dir, families, &database->handles, &db);
  if (!status.ok()) return ToStatus(status, dir, "open");
  database->db.reset(db);
  database->meta = database->handles[1];
  database->ids = database->handles[2];
  database->documents = database->handles[3];
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
