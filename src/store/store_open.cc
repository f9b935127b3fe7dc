// Store::Open: creating a store (in a sibling directory renamed into place, so that a crash leaves
// either no store or a whole one) and reopening one (verified read-only first, so that a damaged
// store is refused before anything in it is written).
#include <fcntl.h>
#include <rocksdb/env.h>
#include <rocksdb/write_batch.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "neardup/store.h"
#include "store/database.h"
#include "store/record.h"
#include "store/store_internal.h"

namespace neardup {
namespace {

namespace fs = std::filesystem;

enum class DirectoryKind { kMissing, kEmpty, kStore, kOther, kNotDirectory };

Result<DirectoryKind> Inspect(const std::string& dir) {
  std::error_code error;
  const fs::file_status status = fs::status(dir, error);
  if (status.type() == fs::file_type::not_found) return DirectoryKind::kMissing;
  if (error) return Status::IOError(dir + ": " + error.message());
  if (!fs::is_directory(status)) return DirectoryKind::kNotDirectory;
  if (fs::exists(fs::path(dir) / "CURRENT", error)) return DirectoryKind::kStore;
  const bool empty = fs::is_empty(dir, error);
  if (error) return Status::IOError(dir + ": " + error.message());
  return empty ? DirectoryKind::kEmpty : DirectoryKind::kOther;
}

Status SyncDirectory(const fs::path& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return Status::IOError(dir.string() + ": " + std::strerror(errno));
  const int synced = ::fsync(fd);
  const int error = errno;
  ::close(fd);
  if (synced != 0) return Status::IOError(dir.string() + ": fsync: " + std::strerror(error));
  return Status::OK();
}

// Creates the store in a fresh sibling directory, writes its meta record, then renames it to
// `dir` (replacing an empty directory). Losing a race to another creator is not an error: the
// caller then opens the other's store.
Status CreateStore(const std::string& dir, const std::string& settings) {
  fs::path target = fs::absolute(fs::path(dir)).lexically_normal();
  if (target.filename().empty()) target = target.parent_path();  // "store/" names "store"
  const fs::path parent = target.parent_path();
  std::string staging_name = target.filename().string();
  staging_name.insert(0, 1, '.');
  staging_name.append(".creating-").append(std::to_string(::getpid()));
  const fs::path staging = parent / staging_name;
  std::error_code error;
  fs::remove_all(staging, error);  // our own pid's leftover only
  {
    store::Database database;
    NEARDUP_RETURN_IF_ERROR(
        store::OpenDatabase(staging.string(), /*read_only=*/false, /*create=*/true, &database));
    rocksdb::WriteBatch batch;
    rocksdb::Status put = batch.Put(database.meta, store::kFormatVersionKey,
                                    store::EncodeFixed32(store::kFormatVersion));
    if (put.ok()) put = batch.Put(database.meta, store::kSettingsKey, settings);
    if (put.ok()) put = batch.Put(database.meta, store::kNextRowKey, store::EncodeFixed64(0));
    rocksdb::WriteOptions sync;
    sync.sync = true;
    if (put.ok()) put = database.db->Write(sync, &batch);
    if (put.ok()) put = database.db->FlushWAL(/*sync=*/true);
    if (!put.ok()) {
      Status status = store::ToStatus(put, dir, "create");
      fs::remove_all(staging, error);
      return status;
    }
  }
  NEARDUP_RETURN_IF_ERROR(SyncDirectory(staging));
  fs::rename(staging, target, error);
  if (error) {
    fs::remove_all(staging);
    if (error == std::errc::directory_not_empty || error == std::errc::file_exists)
      return Status::OK();
    return Status::IOError(dir + ": cannot create the store: " + error.message());
  }
  return SyncDirectory(parent);
}

// Holds RocksDB's LOCK file of `dir` (when there is one) while the store is verified read-only, so
// that a store in use is refused before it is read.
class LockHold {
 public:
  Status Acquire(const std::string& dir) {
    const std::string lock_path = (fs::path(dir) / "LOCK").string();
    std::error_code error;
    if (!fs::exists(lock_path, error))
      return Status::OK();  // never create a file in a store we refuse
    const rocksdb::Status status = rocksdb::Env::Default()->LockFile(lock_path, &lock_);
    if (!status.ok()) return store::ToStatus(status, dir, "lock");
    return Status::OK();
  }
  void Release() {
    if (lock_ != nullptr) rocksdb::Env::Default()->UnlockFile(lock_).PermitUncheckedError();
    lock_ = nullptr;
  }
  ~LockHold() { Release(); }

 private:
  rocksdb::FileLock* lock_ = nullptr;
};

Result<std::string> ReadMeta(const store::Database& database, const std::string& dir,
                             std::string_view key) {
  std::string value;
  const rocksdb::Status status =
      database.db->Get(rocksdb::ReadOptions(), database.meta, key, &value);
  if (status.IsNotFound()) {
    return Status::Corruption(
        dir + ": no " + std::string(key) +
        " in the meta record: not a neardup store, or a damaged one; nothing was changed");
  }
  if (!status.ok()) return store::ToStatus(status, dir, "read meta");
  return value;
}

struct StoredMeta {
  MethodOptions method;
  std::string settings;
  uint64_t next_row = 0;
};

Result<StoredMeta> ReadStoredMeta(const store::Database& database, const std::string& dir) {
  auto version_bytes = ReadMeta(database, dir, store::kFormatVersionKey);
  if (!version_bytes.ok()) return version_bytes.status();
  const std::optional<uint32_t> version = store::DecodeFixed32(*version_bytes);
  if (!version) return Status::Corruption(dir + ": malformed format_version in the meta record");
  if (*version != store::kFormatVersion) {
    return Status::Corruption(dir + ": store format version " + std::to_string(*version) +
                              " is not supported (this neardup reads version " +
                              std::to_string(store::kFormatVersion) + ")");
  }
  StoredMeta meta;
  auto settings = ReadMeta(database, dir, store::kSettingsKey);
  if (!settings.ok()) return settings.status();
  meta.settings = *settings;
  auto method = ParseSettingsLine(meta.settings);
  if (!method.ok()) return method.status().WithContext(dir + ": settings of the store");
  meta.method = *method;
  auto next_row_bytes = ReadMeta(database, dir, store::kNextRowKey);
  if (!next_row_bytes.ok()) return next_row_bytes.status();
  const std::optional<uint64_t> next_row = store::DecodeFixed64(*next_row_bytes);
  if (!next_row) return Status::Corruption(dir + ": malformed next_row in the meta record");
  meta.next_row = *next_row;
  return meta;
}

// Inserts every document record of the database into the index, in row order.
Status LoadDocuments(const store::Database& database, const std::string& dir, uint64_t next_row,
                     OnlineIndex* index) {
  const DocumentSigner& signer = index->signer();
  const uint32_t stamp = store::SettingsStamp(signer.settings());
  rocksdb::ReadOptions read;
  read.verify_checksums = true;
  read.fill_cache = false;
  std::unique_ptr<rocksdb::Iterator> it(database.db->NewIterator(read, database.documents));
  store::DecodedDocument document;
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    const std::optional<uint64_t> row =
        store::ParseRowKey(std::string_view(it->key().data(), it->key().size()));
    if (!row || *row >= next_row) {
      return Status::Corruption(
          dir + ": a document key outside the rows handed out; nothing was changed");
    }
    Status status = store::DecodeDocument(std::string_view(it->value().data(), it->value().size()),
                                          stamp, signer.sketch_bytes(), signer.bands(), &document);
    if (status.ok()) status = index->InsertSigned(document.id, document.signature);
    if (!status.ok()) {
      return Status::Corruption(dir + ": row " + std::to_string(*row) + ": " + status.message() +
                                "; nothing was changed");
    }
  }
  if (!it->status().ok()) return store::ToStatus(it->status(), dir, "read documents");
  return Status::OK();
}

}  // namespace

Result<std::unique_ptr<Store>> Store::Open(const std::string& dir, const StoreOptions& options) {
  std::optional<MethodOptions> given;
  if (options.method) {
    auto resolved = ResolveMethodOptions(*options.method);
    if (!resolved.ok()) return resolved.status();
    given = *resolved;
  }
  auto kind = Inspect(dir);
  if (!kind.ok()) return kind.status();
  switch (*kind) {
    case DirectoryKind::kNotDirectory:
      return Status::FailedPrecondition(dir + " is not a directory (a store is a directory)");
    case DirectoryKind::kOther:
      return Status::Corruption(dir +
                                " is not a neardup store (no CURRENT file); nothing was changed");
    case DirectoryKind::kMissing:
    case DirectoryKind::kEmpty:
      if (!options.create_if_missing) return Status::NotFound(dir + ": no store there");
      NEARDUP_RETURN_IF_ERROR(
          CreateStore(dir, SettingsLine(given ? *given : *ResolveMethodOptions(MethodOptions{}))));
      break;
    case DirectoryKind::kStore:
      break;
  }

  // Verified read-only first: a damaged store is refused before anything in it is written.
  LockHold lock;
  NEARDUP_RETURN_IF_ERROR(lock.Acquire(dir));
  std::unique_ptr<OnlineIndex> index;
  uint64_t next_row = 0;
  {
    store::Database database;
    NEARDUP_RETURN_IF_ERROR(
        store::OpenDatabase(dir, /*read_only=*/true, /*create=*/false, &database));
    auto meta = ReadStoredMeta(database, dir);
    if (!meta.ok()) return meta.status();
    if (given) {
      const std::string difference =
          DescribeSettingsDifference(SettingsLine(*given), meta->settings, "given", "in the store");
      if (!difference.empty())
        return Status::FailedPrecondition(dir + ": settings differ: " + difference);
    }
    OnlineIndexOptions index_options;
    index_options.method = meta->method;
    index_options.expected_documents = options.expected_documents;
    auto created = OnlineIndex::Create(index_options);
    if (!created.ok()) return created.status().WithContext(dir);
    index = std::move(*created);
    if (index->signer().settings() != meta->settings) {
      return Status::Corruption(
          dir + ": the settings line does not read back as written: " + meta->settings);
    }
    NEARDUP_RETURN_IF_ERROR(LoadDocuments(database, dir, meta->next_row, index.get()));
    next_row = meta->next_row;
  }
  lock.Release();

  std::unique_ptr<Store> store(new Store(dir, options.fsync));
  store->db_ = std::make_unique<Database>();
  NEARDUP_RETURN_IF_ERROR(
      store::OpenDatabase(dir, /*read_only=*/false, /*create=*/false, &store->db_->rocks));
  store->index_ = std::move(index);
  store->queue_->next_row = next_row;
  store->queue_->applied_row = next_row;
  return store;
}

}  // namespace neardup
