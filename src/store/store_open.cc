// Store::Open: creating a store (in a sibling directory renamed into place, so that a crash leaves
// either no store or a whole one) and reopening one (verified read-only first, so that a damaged
// store is refused before anything in it is written).
#include <fcntl.h>
#include <rocksdb/env.h>
#include <rocksdb/write_batch.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "neardup/store.h"
#include "store/database.h"
#include "store/disk_resident_index.h"
#include "store/record.h"
#include "store/simhash_tables.h"
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

// Where a store named `dir` is made: its absolute path, with a symbolic link (to an empty
// directory, or dangling) followed to what it names, so that the store is made there and the link
// stays a link.
fs::path StoreTarget(const std::string& dir) {
  fs::path target = fs::absolute(fs::path(dir)).lexically_normal();
  if (target.filename().empty()) target = target.parent_path();  // "store/" names "store"
  std::error_code error;
  for (int links = 0; links < 40 && fs::is_symlink(fs::symlink_status(target, error)); ++links) {
    const fs::path next = fs::read_symlink(target, error);
    if (error) break;
    target = (next.is_absolute() ? next : target.parent_path() / next).lexically_normal();
    if (target.filename().empty()) target = target.parent_path();
  }
  return target;
}

// OK when a store can be made at `target` (named `dir` in messages): its parent is a directory
// that can be written, and `target`, when there (an empty directory), can be written too: a
// read-only directory is refused rather than replaced by a writable one. The messages name the
// store and the real reason, never the staging directory.
Status CheckCreatable(const std::string& dir, const fs::path& target) {
  const fs::path parent = target.parent_path();
  auto refused = [&](const fs::path& path, const std::string& reason) {
    return Status::IOError(dir + ": cannot create the store: " + path.string() + ": " + reason);
  };
  struct stat info;
  if (::stat(parent.c_str(), &info) != 0) return refused(parent, std::strerror(errno));
  if (!S_ISDIR(info.st_mode)) return refused(parent, "not a directory");
  if (::access(parent.c_str(), W_OK | X_OK) != 0) return refused(parent, std::strerror(errno));
  if (::stat(target.c_str(), &info) == 0 && ::access(target.c_str(), W_OK | X_OK) != 0)
    return refused(target, std::strerror(errno));
  return Status::OK();
}

// Creates the store in a fresh sibling directory, writes its meta record, then renames it to
// `dir` (replacing an empty directory, whose mode, owner and group it takes as far as the process
// may set them). A symbolic link is followed: the store is made where it points. Losing a race to
// another creator is not an error: the caller then opens the other's store. A disk-resident store
// (`design` given) gets its tables family and their design.
Status CreateStore(const std::string& dir, const std::string& settings,
                   const std::optional<TableDesign>& design) {
  const fs::path target = StoreTarget(dir);
  NEARDUP_RETURN_IF_ERROR(CheckCreatable(dir, target));
  const fs::path parent = target.parent_path();
  std::string staging_name = target.filename().string();
  staging_name.insert(0, 1, '.');
  staging_name.append(".creating-").append(std::to_string(::getpid()));
  const fs::path staging = parent / staging_name;
  // Messages of the database name the store, not the staging directory.
  auto named = [&](const Status& status) {
    std::string message = status.message();
    for (size_t at = message.find(staging.string()); at != std::string::npos;
         at = message.find(staging.string(), at + dir.size()))
      message.replace(at, staging.string().size(), dir);
    if (!message.starts_with(dir)) message = dir + ": " + message;
    return Status::IOError(message);
  };
  std::error_code error;
  fs::remove_all(staging, error);  // our own pid's leftover only
  {
    store::Database database;
    if (Status opened = store::OpenDatabase(staging.string(), /*read_only=*/false,
                                            /*create=*/true, &database, design.has_value());
        !opened.ok()) {
      fs::remove_all(staging, error);
      return named(opened);
    }
    rocksdb::WriteBatch batch;
    rocksdb::Status put = batch.Put(database.meta, store::kFormatVersionKey,
                                    store::EncodeFixed32(store::kFormatVersion));
    if (put.ok()) put = batch.Put(database.meta, store::kSettingsKey, settings);
    if (put.ok()) put = batch.Put(database.meta, store::kNextRowKey, store::EncodeFixed64(0));
    if (design) {
      if (put.ok()) put = batch.Put(database.meta, store::kIndexKey, store::kDiskIndex);
      if (put.ok()) put = batch.Put(database.meta, store::kDesignKey, store::DesignText(*design));
      for (std::string_view key : {store::kDocumentsKey, store::kEmptyDocumentsKey}) {
        if (put.ok()) put = batch.Put(database.meta, key, store::EncodeFixed64(0));
      }
    }
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
  // An empty directory given as the store keeps its mode, owner and group.
  struct stat replaced;
  if (::stat(target.c_str(), &replaced) == 0 && S_ISDIR(replaced.st_mode)) {
    // Not permitted (another owner, a group the process is not in): those stay the process's.
    if (::chown(staging.c_str(), replaced.st_uid, replaced.st_gid) != 0 &&
        ::chown(staging.c_str(), static_cast<uid_t>(-1), replaced.st_gid) != 0) {
      errno = 0;
    }
    if (::chmod(staging.c_str(), replaced.st_mode & 07777) != 0) {
      const Status status = Status::IOError(
          dir + ": cannot create the store: chmod: " + std::string(std::strerror(errno)));
      fs::remove_all(staging, error);
      return status;
    }
  }
  if (Status synced = SyncDirectory(staging); !synced.ok()) return named(synced);
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
  uint64_t next_removal = 0;
  // The snapshot the database points to, if any (a malformed pointer is treated as none).
  std::optional<store::SnapshotRef> snapshot;
  // Disk-resident stores: the tables' design and the counts.
  std::optional<TableDesign> design;
  uint64_t documents = 0, empty_documents = 0;
};

Result<uint64_t> ReadMeta64(const store::Database& database, const std::string& dir,
                            std::string_view key) {
  auto bytes = ReadMeta(database, dir, key);
  if (!bytes.ok()) return bytes.status();
  const std::optional<uint64_t> value = store::DecodeFixed64(*bytes);
  if (!value) {
    return Status::Corruption(dir + ": malformed " + std::string(key) +
                              " in the meta record; nothing was changed");
  }
  return *value;
}

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
  auto next_row = ReadMeta64(database, dir, store::kNextRowKey);
  if (!next_row.ok()) return next_row.status();
  meta.next_row = *next_row;
  std::string value;
  rocksdb::Status read =
      database.db->Get(rocksdb::ReadOptions(), database.meta, store::kNextRemovalKey, &value);
  if (read.ok()) {
    const std::optional<uint64_t> next_removal = store::DecodeFixed64(value);
    if (!next_removal)
      return Status::Corruption(dir + ": malformed next_removal in the meta record");
    meta.next_removal = *next_removal;
  } else if (!read.IsNotFound()) {
    return store::ToStatus(read, dir, "read meta");
  }
  read = database.db->Get(rocksdb::ReadOptions(), database.meta, store::kSnapshotKey, &value);
  if (read.ok()) {
    meta.snapshot = store::DecodeSnapshotRef(value);
  } else if (!read.IsNotFound()) {
    return store::ToStatus(read, dir, "read meta");
  }
  std::string index;
  const rocksdb::Status got =
      database.db->Get(rocksdb::ReadOptions(), database.meta, store::kIndexKey, &index);
  if (!got.ok() && !got.IsNotFound()) return store::ToStatus(got, dir, "read meta");
  const bool disk = got.ok();
  if (disk && index != store::kDiskIndex) {
    return Status::Corruption(dir + ": unknown index kind '" + index +
                              "' in the meta record; nothing was changed");
  }
  if (disk != (database.tables != nullptr)) {
    return Status::Corruption(dir +
                              (disk ? ": a disk-resident store without its tables"
                                    : ": tables in a store that is not disk-resident") +
                              "; nothing was changed");
  }
  if (!disk) return meta;
  if (meta.method.method != DedupMethod::kSimhash) {
    return Status::Corruption(dir +
                              ": a disk-resident store of another method than simhash; nothing "
                              "was changed");
  }
  auto design_text = ReadMeta(database, dir, store::kDesignKey);
  if (!design_text.ok()) return design_text.status();
  auto design = store::ParseDesign(*design_text);
  if (!design.ok()) return design.status().WithContext(dir);
  if (design->max_exact_k() < meta.method.k) {
    return Status::Corruption(
        dir + ": the tables' design answers k <= " + std::to_string(design->max_exact_k()) +
        ", the settings ask for " + std::to_string(meta.method.k) + "; nothing was changed");
  }
  meta.design = *design;
  auto documents = ReadMeta64(database, dir, store::kDocumentsKey);
  if (!documents.ok()) return documents.status();
  auto empty = ReadMeta64(database, dir, store::kEmptyDocumentsKey);
  if (!empty.ok()) return empty.status();
  meta.documents = *documents;
  meta.empty_documents = *empty;
  return meta;
}

// Inserts every document record of the database from row `first_row` on into the index, in row
// order, in one load.
Status LoadDocuments(const store::Database& database, const std::string& dir, uint64_t next_row,
                     OnlineIndex* index, uint64_t first_row = 0) {
  const DocumentSigner& signer = index->signer();
  const uint32_t stamp = store::SettingsStamp(signer.settings());
  rocksdb::ReadOptions read;
  read.verify_checksums = true;
  read.fill_cache = false;
  std::unique_ptr<rocksdb::Iterator> it(database.db->NewIterator(read, database.documents));
  it->Seek(store::RowKey(first_row));
  bool started = false;
  uint64_t row = 0;  // of the record read last
  store::DecodedDocument document;
  const Status loaded = index->InsertAll(
      [&](std::string* id, Signature* signature) -> Result<bool> {
        if (started) it->Next();
        started = true;
        if (!it->Valid()) {
          if (!it->status().ok()) return store::ToStatus(it->status(), dir, "read documents");
          return false;
        }
        const std::optional<uint64_t> parsed =
            store::ParseRowKey(std::string_view(it->key().data(), it->key().size()));
        if (!parsed || *parsed >= next_row) {
          return Status::Corruption(
              dir + ": a document key outside the rows handed out; nothing was changed");
        }
        row = *parsed;
        NEARDUP_RETURN_IF_ERROR(
            store::DecodeDocument(std::string_view(it->value().data(), it->value().size()), stamp,
                                  signer.sketch_bytes(), signer.bands(), &document));
        id->assign(document.id);
        *signature = std::move(document.signature);
        return true;
      },
      next_row);
  if (loaded.ok() || loaded.message().starts_with(dir)) return loaded;
  return Status::Corruption(dir + ": row " + std::to_string(row) + ": " + loaded.message() +
                            "; nothing was changed");
}

// The index of the snapshot the database points to, with the removals and then the documents
// written after it applied (doc/store.md, "Snapshots"). A snapshot that cannot be used gives a null
// index and *skipped the reason (the caller rebuilds from the records); a failure to read the
// database fails the open.
Result<std::unique_ptr<OnlineIndex>> LoadSnapshot(const store::Database& database,
                                                  const std::string& dir, const StoredMeta& meta,
                                                  const OnlineIndexOptions& options,
                                                  std::string* skipped) {
  const store::SnapshotRef& ref = *meta.snapshot;
  if (ref.rows > meta.next_row || ref.removals > meta.next_removal) {
    *skipped = ref.file + " is newer than the database";
    return std::unique_ptr<OnlineIndex>();
  }
  if (database.removals == nullptr) {
    *skipped = "the store has no removal log";
    return std::unique_ptr<OnlineIndex>();
  }
  auto loaded = OnlineIndex::Load((fs::path(dir) / ref.file).string(), options);
  if (!loaded.ok()) {
    *skipped = loaded.status().ToString();
    return std::unique_ptr<OnlineIndex>();
  }
  std::unique_ptr<OnlineIndex> index = std::move(*loaded);
  if (index->signer().settings() != meta.settings) {
    *skipped = ref.file + " was written under other settings";
    return std::unique_ptr<OnlineIndex>();
  }
  // Removals first: an id removed after the snapshot may have been stored again (a later row).
  rocksdb::ReadOptions read;
  read.verify_checksums = true;
  std::unique_ptr<rocksdb::Iterator> it(database.db->NewIterator(read, database.removals));
  for (it->Seek(store::RowKey(ref.removals)); it->Valid(); it->Next()) {
    const std::string_view id(it->value().data(), it->value().size());
    const Status removed = index->Remove(id);
    // NotFound: a document stored and removed after the snapshot.
    if (!removed.ok() && removed.code() != Status::Code::kNotFound)
      return removed.WithContext(dir + ": replaying the removals after " + ref.file);
  }
  if (!it->status().ok()) return store::ToStatus(it->status(), dir, "read the removal log");
  NEARDUP_RETURN_IF_ERROR(LoadDocuments(database, dir, meta.next_row, index.get(), ref.rows));
  return index;
}

}  // namespace

Result<std::unique_ptr<Store>> Store::Open(const std::string& dir, const StoreOptions& options) {
  std::optional<MethodOptions> given;
  if (options.method) {
    auto resolved = ResolveMethodOptions(*options.method);
    if (!resolved.ok()) return resolved.status();
    given = *resolved;
  }
  const bool disk_wanted = options.disk_resident.value_or(false);
  if (disk_wanted && given && given->method != DedupMethod::kSimhash) {
    return Status::InvalidArgument(
        dir +
        ": a disk-resident store holds the simhash method only (the accurate method's "
        "index is in memory)");
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
      if (disk_wanted && !given) {
        return Status::InvalidArgument(
            dir + ": a new disk-resident store needs its method given (simhash)");
      }
      NEARDUP_RETURN_IF_ERROR(CreateStore(
          dir, SettingsLine(given ? *given : *ResolveMethodOptions(MethodOptions{})),
          disk_wanted ? std::optional<TableDesign>(store::DiskDesignFor(given->k)) : std::nullopt));
      break;
    case DirectoryKind::kStore:
      break;
  }

  // Verified read-only first: a damaged store is refused before anything in it is written.
  LockHold lock;
  NEARDUP_RETURN_IF_ERROR(lock.Acquire(dir));
  std::unique_ptr<OnlineIndex> index;
  uint64_t next_row = 0, next_removal = 0;
  std::optional<StoredMeta> disk_meta;  // a disk-resident store's
  const auto load_start = std::chrono::steady_clock::now();
  std::string loaded_from = "records", skipped;
  std::optional<store::SnapshotRef> snapshot;  // the one loaded
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
    if (options.disk_resident && *options.disk_resident != meta->design.has_value()) {
      return Status::FailedPrecondition(
          dir +
          (meta->design ? ": the store is disk-resident, a store in memory was asked for"
                        : ": the store keeps its index in memory, a disk-resident one was "
                          "asked for") +
          " (chosen when a store is created)");
    }
    next_row = meta->next_row;
    next_removal = meta->next_removal;
    if (meta->design) {
      loaded_from = "disk";
      disk_meta = std::move(*meta);
    } else {
      OnlineIndexOptions index_options;
      index_options.method = meta->method;
      // The rows handed out bound the documents to load: the tables are sized once for them.
      index_options.expected_documents = std::max(options.expected_documents, meta->next_row);
      if (options.sketches_on_disk) index_options.sketch_directory = dir;
      if (meta->snapshot && options.load_snapshot) {
        auto loaded = LoadSnapshot(database, dir, *meta, index_options, &skipped);
        if (!loaded.ok()) return loaded.status();
        index = std::move(*loaded);
        if (index) {
          loaded_from = "snapshot";
          snapshot = meta->snapshot;
        }
      }
      if (!index) {
        auto created = OnlineIndex::Create(index_options);
        if (!created.ok()) return created.status().WithContext(dir);
        index = std::move(*created);
        if (index->signer().settings() != meta->settings) {
          return Status::Corruption(
              dir + ": the settings line does not read back as written: " + meta->settings);
        }
        NEARDUP_RETURN_IF_ERROR(LoadDocuments(database, dir, meta->next_row, index.get()));
      }
    }
  }
  lock.Release();

  std::unique_ptr<Store> store(new Store(dir, options.fsync, disk_meta.has_value()));
  store->db_ = std::make_unique<Database>();
  NEARDUP_RETURN_IF_ERROR(store::OpenDatabase(dir, /*read_only=*/false, /*create=*/false,
                                              &store->db_->rocks, /*tables=*/false,
                                              options.block_cache_bytes));
  store->db_->rocks.flush_on_close = true;
  if (disk_meta) {
    auto signer = DocumentSigner::Create(disk_meta->method);
    if (!signer.ok()) return signer.status().WithContext(dir);
    if ((*signer)->settings() != disk_meta->settings) {
      return Status::Corruption(
          dir + ": the settings line does not read back as written: " + disk_meta->settings);
    }
    index = std::make_unique<store::DiskResidentIndex>(
        std::move(*signer), *disk_meta->design, &store->db_->rocks, dir, disk_meta->documents,
        disk_meta->empty_documents);
  }
  store->index_ = std::move(index);
  store->queue_->next_row = next_row;
  store->queue_->applied_row = next_row;
  store->queue_->applied_removal = next_removal;
  SnapshotState& state = *store->snapshot_;
  state.loaded_from = loaded_from;
  state.skipped = skipped;
  state.load_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - load_start).count();
  if (snapshot) {
    const fs::path file = fs::path(dir) / snapshot->file;
    std::error_code error;
    state.file = snapshot->file;
    state.rows = snapshot->rows;
    state.removals = snapshot->removals;
    state.bytes = fs::file_size(file, error);
    struct stat info;
    if (stat(file.c_str(), &info) == 0) state.time = static_cast<int64_t>(info.st_mtime);
  }
  store::RemoveOtherSnapshots(dir, state.file);
  return store;
}

}  // namespace neardup
