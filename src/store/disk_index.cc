// DiskSimhashIndex (neardup/disk_index.h) on RocksDB.
#include "neardup/disk_index.h"

#include <rocksdb/cache.h>
#include <rocksdb/db.h>
#include <rocksdb/options.h>
#include <rocksdb/perf_context.h>
#include <rocksdb/sst_file_writer.h>
#include <rocksdb/table.h>
#include <rocksdb/write_batch.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <filesystem>
#include <mutex>

#include "store/simhash_tables.h"

namespace neardup {

DiskQueryStats& DiskQueryStats::operator+=(const DiskQueryStats& other) {
  queries += other.queries;
  seeks += other.seeks;
  entries_read += other.entries_read;
  block_reads += other.block_reads;
  block_bytes += other.block_bytes;
  matches += other.matches;
  return *this;
}

namespace {

constexpr char kFormat[] = "neardup-disk-simhash-1";

void PutBig64(uint64_t value, char* out) {
  for (int i = 7; i >= 0; --i) {
    out[i] = static_cast<char>(value & 0xFF);
    value >>= 8;
  }
}

Status FromRocks(const rocksdb::Status& status, const std::string& path) {
  if (status.ok()) return Status::OK();
  const std::string message = path + ": " + status.ToString();
  if (status.IsCorruption()) return Status::Corruption(message);
  if (status.IsNotFound()) return Status::NotFound(message);
  if (status.IsIOError() && status.ToString().find("lock") != std::string::npos) {
    return Status::IOError(path + " is in use by another process (" + status.ToString() + ")");
  }
  if (status.IsInvalidArgument()) return Status::InvalidArgument(message);
  return Status::IOError(message);
}

class DiskIndexImpl final : public DiskSimhashIndex {
 public:
  DiskIndexImpl(std::string path, const TableDesign& design, bool sync,
                std::shared_ptr<rocksdb::Cache> cache)
      : path_(std::move(path)), simhash_(design), sync_(sync), cache_(std::move(cache)) {}

  ~DiskIndexImpl() override {
    for (auto* handle : handles_) db_->DestroyColumnFamilyHandle(handle);
    handles_.clear();
    if (db_ != nullptr) db_->Close();
    delete db_;
  }

  Status Init(const rocksdb::Options& options, bool create);

  Status Insert(uint64_t id, uint64_t fingerprint) override {
    std::lock_guard lock(write_mutex_);
    char id_key[8];
    PutBig64(id, id_key);
    std::string existing;
    auto got = db_->Get(rocksdb::ReadOptions(), documents_, rocksdb::Slice(id_key, 8), &existing);
    if (got.ok())
      return Status::FailedPrecondition("id " + std::to_string(id) + " is already stored");
    if (!got.IsNotFound()) return FromRocks(got, path_);
    rocksdb::WriteBatch batch;
    NEARDUP_RETURN_IF_ERROR(FromRocks(simhash_.Put(&batch, tables_, id, fingerprint), path_));
    char value[8];
    std::memcpy(value, &fingerprint, 8);  // little-endian machines only (checked at build)
    NEARDUP_RETURN_IF_ERROR(FromRocks(
        batch.Put(documents_, rocksdb::Slice(id_key, 8), rocksdb::Slice(value, 8)), path_));
    NEARDUP_RETURN_IF_ERROR(
        FromRocks(batch.Put(meta_, "count", std::to_string(size_.load() + 1)), path_));
    NEARDUP_RETURN_IF_ERROR(FromRocks(db_->Write(WriteOptions(), &batch), path_));
    size_.fetch_add(1);
    return Status::OK();
  }

  Status Remove(uint64_t id) override {
    std::lock_guard lock(write_mutex_);
    auto fingerprint = Get(id);
    if (!fingerprint.ok()) return fingerprint.status();
    rocksdb::WriteBatch batch;
    NEARDUP_RETURN_IF_ERROR(FromRocks(simhash_.Delete(&batch, tables_, id, *fingerprint), path_));
    char id_key[8];
    PutBig64(id, id_key);
    NEARDUP_RETURN_IF_ERROR(FromRocks(batch.Delete(documents_, rocksdb::Slice(id_key, 8)), path_));
    NEARDUP_RETURN_IF_ERROR(
        FromRocks(batch.Put(meta_, "count", std::to_string(size_.load() - 1)), path_));
    NEARDUP_RETURN_IF_ERROR(FromRocks(db_->Write(WriteOptions(), &batch), path_));
    size_.fetch_sub(1);
    return Status::OK();
  }

  Status BulkLoad(std::span<const uint64_t> ids, std::span<const uint64_t> fingerprints,
                  const std::function<void(int)>& progress) override;

  Result<std::vector<Match>> Query(uint64_t fingerprint, int k,
                                   DiskQueryStats* stats) const override {
    if (k < 0 || k > simhash_.max_k()) {
      return Status::InvalidArgument("k = " + std::to_string(k) + " is outside 0.." +
                                     std::to_string(simhash_.max_k()) +
                                     ", what this index's design answers exactly");
    }
    rocksdb::SetPerfLevel(rocksdb::PerfLevel::kEnableCount);
    rocksdb::get_perf_context()->Reset();
    DiskQueryStats local;
    std::vector<Match> out;
    const rocksdb::Status read =
        simhash_.Query(db_, tables_, rocksdb::ReadOptions(), fingerprint, k, &out, &local);
    if (!read.ok()) {
      rocksdb::SetPerfLevel(rocksdb::PerfLevel::kDisable);
      return FromRocks(read, path_);
    }
    const rocksdb::PerfContext* perf = rocksdb::get_perf_context();
    local.block_reads = perf->block_read_count;
    local.block_bytes = perf->block_read_byte;
    rocksdb::SetPerfLevel(rocksdb::PerfLevel::kDisable);
    std::sort(out.begin(), out.end(), [](const Match& a, const Match& b) {
      return a.distance != b.distance ? a.distance < b.distance : a.id < b.id;
    });
    if (stats != nullptr) *stats += local;
    return out;
  }

  Result<uint64_t> Get(uint64_t id) const override {
    char id_key[8];
    PutBig64(id, id_key);
    std::string value;
    auto got = db_->Get(rocksdb::ReadOptions(), documents_, rocksdb::Slice(id_key, 8), &value);
    if (got.IsNotFound()) return Status::NotFound("no fingerprint with id " + std::to_string(id));
    if (!got.ok()) return FromRocks(got, path_);
    if (value.size() != 8)
      return Status::Corruption(path_ + ": the record of id " + std::to_string(id) +
                                " is not 8 bytes");
    uint64_t fingerprint;
    std::memcpy(&fingerprint, value.data(), 8);
    return fingerprint;
  }

  DiskIndexStats Stats() const override {
    DiskIndexStats stats;
    stats.size = size_.load();
    stats.design = simhash_.design().ToString();
    std::error_code error;
    for (const auto& entry : std::filesystem::recursive_directory_iterator(path_, error)) {
      if (entry.is_regular_file(error)) stats.disk_bytes += entry.file_size(error);
    }
    uint64_t value = 0;
    for (auto* handle : handles_) {
      if (db_->GetIntProperty(handle, "rocksdb.cur-size-all-mem-tables", &value))
        stats.memory_bytes += value;
      if (db_->GetIntProperty(handle, "rocksdb.estimate-table-readers-mem", &value))
        stats.memory_bytes += value;
    }
    stats.memory_bytes += cache_->GetUsage();
    return stats;
  }

 private:
  rocksdb::WriteOptions WriteOptions() const {
    rocksdb::WriteOptions options;
    options.sync = sync_;
    return options;
  }

  const std::string path_;
  const store::SimhashTables simhash_;
  const bool sync_;
  std::shared_ptr<rocksdb::Cache> cache_;
  rocksdb::DB* db_ = nullptr;
  std::vector<rocksdb::ColumnFamilyHandle*> handles_;
  rocksdb::ColumnFamilyHandle* meta_ = nullptr;
  rocksdb::ColumnFamilyHandle* tables_ = nullptr;
  rocksdb::ColumnFamilyHandle* documents_ = nullptr;
  rocksdb::Options options_;
  std::mutex write_mutex_;
  std::atomic<uint64_t> size_{0};
};

Status DiskIndexImpl::Init(const rocksdb::Options& options, bool create) {
  options_ = options;
  std::vector<rocksdb::ColumnFamilyDescriptor> families = {
      {rocksdb::kDefaultColumnFamilyName, options},
      {"meta", options},
      {"tables", options},
      {"documents", options}};
  rocksdb::DBOptions db_options(options);
  db_options.create_if_missing = create;
  db_options.create_missing_column_families = create;
  NEARDUP_RETURN_IF_ERROR(
      FromRocks(rocksdb::DB::Open(db_options, path_, families, &handles_, &db_), path_));
  meta_ = handles_[1];
  tables_ = handles_[2];
  documents_ = handles_[3];
  std::string format;
  auto got = db_->Get(rocksdb::ReadOptions(), meta_, "format", &format);
  if (got.IsNotFound() && create) {
    rocksdb::WriteBatch batch;
    NEARDUP_RETURN_IF_ERROR(FromRocks(batch.Put(meta_, "format", kFormat), path_));
    NEARDUP_RETURN_IF_ERROR(
        FromRocks(batch.Put(meta_, "design", store::DesignText(simhash_.design())), path_));
    rocksdb::WriteOptions sync;
    sync.sync = true;
    NEARDUP_RETURN_IF_ERROR(FromRocks(db_->Write(sync, &batch), path_));
  } else if (!got.ok()) {
    return got.IsNotFound()
               ? Status::InvalidArgument(path_ + " is not a neardup disk index (no format record)")
               : FromRocks(got, path_);
  } else if (format != kFormat) {
    return Status::InvalidArgument(path_ + " holds '" + format + "', not " + kFormat);
  }
  // The count is written with every change (a scan at open would take minutes at 100M).
  std::string count;
  got = db_->Get(rocksdb::ReadOptions(), meta_, "count", &count);
  if (!got.ok() && !got.IsNotFound()) return FromRocks(got, path_);
  size_ = count.empty() ? 0 : std::strtoull(count.c_str(), nullptr, 10);
  return Status::OK();
}

Status DiskIndexImpl::BulkLoad(std::span<const uint64_t> ids,
                               std::span<const uint64_t> fingerprints,
                               const std::function<void(int)>& progress) {
  std::lock_guard lock(write_mutex_);
  if (ids.size() != fingerprints.size()) {
    return Status::InvalidArgument("bulk load of " + std::to_string(ids.size()) + " ids and " +
                                   std::to_string(fingerprints.size()) + " fingerprints");
  }
  if (size_.load() != 0)
    return Status::FailedPrecondition(path_ + ": bulk load needs an empty index");
  {
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), documents_));
    it->SeekToFirst();
    if (it->Valid()) return Status::FailedPrecondition(path_ + ": bulk load needs an empty index");
  }
  const std::string scratch = path_ + "/bulk.sst";
  const rocksdb::Options& options =
      options_;  // the files written are like the ones compactions write
  auto write_sorted = [&](rocksdb::ColumnFamilyHandle* family,
                          std::vector<std::pair<uint64_t, uint64_t>>& entries, auto&& make_key,
                          bool with_value) -> Status {
    std::sort(entries.begin(), entries.end());
    for (size_t i = 1; i < entries.size(); ++i) {
      if (!with_value && entries[i] == entries[i - 1]) {
        return Status::InvalidArgument("bulk load: id " + std::to_string(entries[i].second) +
                                       " repeats");
      }
    }
    rocksdb::SstFileWriter writer(rocksdb::EnvOptions(), options, family);
    NEARDUP_RETURN_IF_ERROR(FromRocks(writer.Open(scratch), path_));
    for (const auto& [a, b] : entries) {
      std::string key = make_key(a, b);
      NEARDUP_RETURN_IF_ERROR(FromRocks(
          with_value ? writer.Put(key.substr(0, 8), key.substr(8)) : writer.Put(key, ""), path_));
    }
    NEARDUP_RETURN_IF_ERROR(FromRocks(writer.Finish(), path_));
    rocksdb::IngestExternalFileOptions ingest;
    ingest.move_files = true;
    return FromRocks(db_->IngestExternalFile(family, {scratch}, ingest), path_);
  };
  std::vector<std::pair<uint64_t, uint64_t>> entries(ids.size());
  // Documents first: a repeated id is found before any table is written.
  for (size_t i = 0; i < ids.size(); ++i) entries[i] = {ids[i], fingerprints[i]};
  std::sort(entries.begin(), entries.end());
  for (size_t i = 1; i < entries.size(); ++i) {
    if (entries[i].first == entries[i - 1].first) {
      return Status::InvalidArgument("bulk load: id " + std::to_string(entries[i].first) +
                                     " repeats");
    }
  }
  if (!entries.empty()) {
    NEARDUP_RETURN_IF_ERROR(write_sorted(
        documents_, entries,
        [](uint64_t id, uint64_t fingerprint) {
          std::string key(16, '\0');
          PutBig64(id, key.data());
          std::memcpy(key.data() + 8, &fingerprint, 8);
          return key;
        },
        true));
  }
  for (int t = 0; t < simhash_.tables() && !entries.empty(); ++t) {
    if (progress) progress(t);
    for (size_t i = 0; i < ids.size(); ++i)
      entries[i] = {simhash_.Permute(t, fingerprints[i]), ids[i]};
    NEARDUP_RETURN_IF_ERROR(write_sorted(
        tables_, entries,
        [t](uint64_t permuted, uint64_t id) {
          return store::SimhashTables::PermutedKey(t, permuted, id);
        },
        false));
  }
  rocksdb::WriteOptions sync;
  sync.sync = true;
  NEARDUP_RETURN_IF_ERROR(
      FromRocks(db_->Put(sync, meta_, "count", std::to_string(ids.size())), path_));
  size_ = ids.size();
  return Status::OK();
}

}  // namespace

Result<std::unique_ptr<DiskSimhashIndex>> DiskSimhashIndex::Open(const std::string& path,
                                                                 const DiskIndexOptions& options) {
  std::error_code error;
  const bool exists = std::filesystem::exists(std::filesystem::path(path) / "CURRENT", error);
  if (!exists && !options.create_if_missing) return Status::NotFound(path + ": no disk index here");
  if (!exists && std::filesystem::exists(path, error) && !std::filesystem::is_empty(path, error)) {
    return Status::InvalidArgument(path + " is a folder with other files, not a disk index");
  }
  TableDesign design = options.design.block_bits.empty() ? TableDesign::Even(4, 1) : options.design;
  rocksdb::Options rocks;
  rocks.paranoid_checks = true;
  auto cache = rocksdb::NewLRUCache(options.block_cache_bytes);
  rocksdb::BlockBasedTableOptions table;
  table.block_cache = cache;
  // Index blocks stay with their files' readers, outside the cache: a bulk-loaded table is one file
  // whose index block is megabytes, and re-reading it after an eviction costs more than the query.
  // At 100M fingerprints they take about 15 MB per table (counted in Stats().memory_bytes).
  table.cache_index_and_filter_blocks = false;
  rocks.table_factory.reset(rocksdb::NewBlockBasedTableFactory(table));
  rocks.compression = rocksdb::kNoCompression;
  rocks.max_open_files = -1;  // every file's reader (and index block) stays open
  if (exists) {
    // The design is the index's own: read it before building the layout.
    rocksdb::DB* probe = nullptr;
    std::vector<rocksdb::ColumnFamilyHandle*> handles;
    std::vector<rocksdb::ColumnFamilyDescriptor> families = {
        {rocksdb::kDefaultColumnFamilyName, rocks},
        {"meta", rocks},
        {"tables", rocks},
        {"documents", rocks}};
    auto opened = rocksdb::DB::OpenForReadOnly(rocks, path, families, &handles, &probe);
    if (!opened.ok()) return FromRocks(opened, path);
    std::string text;
    auto got = probe->Get(rocksdb::ReadOptions(), handles[1], "design", &text);
    for (auto* handle : handles) probe->DestroyColumnFamilyHandle(handle);
    delete probe;
    if (got.IsNotFound())
      return Status::InvalidArgument(path + " is not a neardup disk index (no design record)");
    if (!got.ok()) return FromRocks(got, path);
    auto parsed = store::ParseDesign(text);
    if (!parsed.ok()) return parsed.status().WithContext(path);
    design = *parsed;
  } else {
    NEARDUP_RETURN_IF_ERROR(design.Validate());
    std::filesystem::create_directories(path, error);
  }
  auto index = std::make_unique<DiskIndexImpl>(path, design, options.sync, cache);
  NEARDUP_RETURN_IF_ERROR(index->Init(rocks, !exists));
  return std::unique_ptr<DiskSimhashIndex>(std::move(index));
}

}  // namespace neardup
