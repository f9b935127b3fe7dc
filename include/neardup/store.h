// The durable store: an online index (neardup/online_index.h) whose every insert and remove is
// written to disk before it is acknowledged, and that a later process reopens as it was.
//
// A store is a directory holding a RocksDB database of three column families (doc/store.md gives
// the layout byte by byte): `meta` (format version, settings line, row counter), `ids` (document id
// -> row) and `documents` (row -> the document's signature). Texts are never stored. Open loads the
// in-memory OnlineIndex from the last snapshot (Snapshot()) and the writes after it, or rebuilds it
// from every document in row (insertion) order, so queries after a reopen answer exactly as before.
//
// Every insert or remove is one RocksDB write batch (the document record, its id entry and the row
// counter together): after a crash a document is stored whole or not at all.
//
// A disk-resident store (StoreOptions::disk_resident, simhash only) keeps no index in memory: its
// permuted SimHash tables are a fourth column family, written in the same batches, and queries
// seek them (one seek per table). It opens at once whatever its size; its memory is RocksDB's
// block cache and index blocks. Its writes are applied one group at a time (no pipelining).
// StoreOptions::fsync chooses what an acknowledged write survives (see FsyncMode).
//
// Writes are serialised in one queue: the write at its head is checked against the index (the
// query of QueryAndInsert, the id's presence), applied to the in-memory index, written durably, and
// only then acknowledged. With FsyncMode::kBatch the head takes every write queued behind it into
// the same synced batch (group commit), and QueryAndInsertBatch puts many documents into one; each
// document's query sees the documents before it, in the batch too. Durable writes are pipelined:
// while one batch is written, the next is applied to the index, but batches reach the disk and are
// acknowledged in the order they were applied. A write that fails on disk is taken out of the
// in-memory index again and reported to every caller of its batch. Queries do not wait for the
// queue: they may see a document whose write is in flight (not yet acknowledged).
//
// One process at a time: a second Open of the same directory (from any process, this one included)
// fails with FailedPrecondition "DIR is in use by another process". Open never repairs, rewrites or
// creates anything in a directory it refuses: a damaged store (bad CURRENT, MANIFEST, table or log
// files, a missing meta record, an unknown format version) is reported as Corruption or IOError
// naming the directory and left as it was.
//
// Thread safety: every method may be called from several threads at once.
#ifndef NEARDUP_STORE_H_
#define NEARDUP_STORE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "neardup/method.h"
#include "neardup/online_index.h"
#include "neardup/status.h"

namespace neardup {

// What an acknowledged write survives.
enum class FsyncMode {
  // Every write is synced (fdatasync of the write-ahead log) before it returns: it survives a
  // process kill and an operating system crash or power loss. The slowest: one sync per write.
  kAlways,
  // Writes are grouped and each group synced once before any of its writes returns: every
  // acknowledged write survives an OS crash, as with kAlways, at a fraction of the syncs. Writers
  // on
  // several threads and QueryAndInsertBatch fill the groups.
  kBatch,
  // Writes reach the log (the operating system's page cache) but are not synced: they survive a
  // process kill, not an OS crash or power loss, which may lose the last writes (never half of
  // one).
  kNever,
};

// "always" / "batch" / "never"; InvalidArgument for anything else.
Result<FsyncMode> ParseFsyncMode(std::string_view name);
std::string_view FsyncModeName(FsyncMode mode);

struct StoreOptions {
  // The method of a new store. For an existing store: nullopt (default) takes the store's own
  // settings; given, it must describe the same signatures as the stored settings line, else Open
  // fails with FailedPrecondition naming the differences (DescribeSettingsDifference).
  std::optional<MethodOptions> method;
  // Default kBatch: durable acknowledgements, syncs shared by concurrent writers.
  FsyncMode fsync = FsyncMode::kBatch;
  // Creates the store when the directory is missing or empty (default true). A non-empty directory
  // that is not a store is refused either way.
  bool create_if_missing = true;
  // Documents expected (sizes the in-memory tables once; 0: grown as needed).
  uint64_t expected_documents = 0;
  // Where the index of a new store lives. false (default): in memory, rebuilt from the documents at
  // every open. true: the SimHash tables live in the database itself and queries read them with
  // one prefix seek per table, for collections larger than RAM (the simhash method only;
  // doc/store.md). For an existing store: nullopt takes the store's own; given, it must be the
  // store's, else Open fails with FailedPrecondition.
  std::optional<bool> disk_resident;
  // An in-memory index of the accurate method keeps its sketches in a scratch file of the store's
  // directory instead of memory (OnlineIndexOptions::sketch_directory): about 132 bytes a document
  // less in memory, a read per candidate a query verifies. The file is rebuilt at every open (the
  // database holds the durable copy); this is a choice of each open, not kept in the store.
  bool sketches_on_disk = false;
  // A disk-resident store's block cache (the memory its queries read through).
  uint64_t block_cache_bytes = uint64_t{256} << 20;
  // Open loads the in-memory index from the store's snapshot (Store::Snapshot) plus the removals
  // and documents written after it, when there is a usable one (default); false: rebuilds it from
  // every document record. A snapshot that cannot be used (missing, damaged, other settings) is
  // passed over for a rebuild, and StoreStats::snapshot_skipped says why.
  bool load_snapshot = true;
};

struct StoreStats {
  OnlineIndexStats index;   // documents, inserts, removes, memory, settings, query counters
  uint64_t disk_bytes = 0;  // the files of the directory
  uint32_t format_version = 0;
  uint64_t next_row = 0;  // rows handed out so far (removed rows are never reused)
  FsyncMode fsync = FsyncMode::kBatch;
  uint64_t syncs = 0;  // durable writes issued by this process (batches, not documents)
  bool disk_resident = false;
  std::string table_design;  // disk-resident: the tables' design (TableDesign::ToString)
  uint64_t log_bytes = 0;    // the write-ahead log's files
  // The snapshot in use (written by this process or loaded at open): the rows and removals it
  // covers, its file's bytes, and when it was written (seconds since the epoch; 0: there is none).
  uint64_t snapshot_rows = 0;
  uint64_t snapshot_removals = 0;
  uint64_t snapshot_bytes = 0;
  int64_t snapshot_time = 0;
  double snapshot_seconds = 0;        // how long the last Snapshot() of this process took
  double snapshot_pause_seconds = 0;  // how long it held writes back (the cut and the fork)
  // How Open made the index: "snapshot" (the snapshot, then the writes after it), "records"
  // (rebuilt from every document record) or "disk" (disk-resident: nothing to load); the seconds
  // it took, and why a snapshot found was not used (empty: it was, or there was none).
  std::string loaded_from;
  double load_seconds = 0;
  std::string snapshot_skipped;
  // Where the index lives (neardup/index_store.h): "embedded", "redis" or "redis-cluster"; for
  // Redis, the servers' used_memory summed over the masters (0 for the embedded store).
  std::string backend = "embedded";
  uint64_t remote_memory_bytes = 0;
};

// A document of QueryAndInsertBatch, already signed (by signer()).
struct SignedDocument {
  std::string id;
  Signature signature;
  // Bytes kept beside the document when it is stored (its text, metadata: the caller's format),
  // written in the same batch; GetAttachment() reads them back. Empty: none.
  std::string attachment;
};

// The outcome of one document of a batch.
struct StoreInsertResult {
  // OK, or why this document was not stored: FailedPrecondition when the id is already stored,
  // InvalidArgument for a bad id or a signature of the wrong shape. Other documents are unaffected.
  Status status;
  std::vector<OnlineMatch> matches;  // as Query would have returned just before it
  bool inserted = false;
};

class Store {
 public:
  // Opens (or creates, see StoreOptions) the store in directory `dir` and rebuilds its index.
  // Errors name the directory: NotFound (missing and !create_if_missing), FailedPrecondition (in
  // use by another process, or settings that differ), Corruption (damaged, not a store, unknown
  // format version), IOError (the operating system refused), and the method's own errors.
  static Result<std::unique_ptr<Store>> Open(const std::string& dir, const StoreOptions& options);

  // Closes the database. No call may be in flight.
  ~Store();

  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  const std::string& path() const { return path_; }
  // The signer of the store's method (sign texts with it for the *Signed and batch calls).
  const DocumentSigner& signer() const { return index_->signer(); }

  // OnlineIndex::Insert / InsertSigned, made durable before returning. Errors as the index's, plus
  // the disk's (IOError; the document is then not stored).
  Status Insert(std::string_view id, std::string_view text);
  Status InsertSigned(std::string_view id, const Signature& signature);

  // Removes the document of `id` durably. NotFound when there is none.
  Status Remove(std::string_view id);

  // OnlineIndex::QueryAndInsert(Signed): the query and the insert are atomic with respect to every
  // other write, and the insert is durable when the call returns.
  Result<QueryAndInsertResult> QueryAndInsert(std::string_view id, std::string_view text,
                                              InsertPolicy policy);
  Result<QueryAndInsertResult> QueryAndInsertSigned(std::string_view id, const Signature& signature,
                                                    InsertPolicy policy,
                                                    std::string_view attachment = {});

  // QueryAndInsertSigned for each document in order, each query seeing the documents before it,
  // and every insert of the batch in one durable write (one sync). One result per document, in
  // order; a non-OK Status when the write failed (then none of the batch is stored).
  Result<std::vector<StoreInsertResult>> QueryAndInsertBatch(
      std::span<const SignedDocument> documents, InsertPolicy policy);
  // QueryAndInsertBatch with InsertPolicy::kAlways and no queries.
  Result<std::vector<StoreInsertResult>> InsertBatch(std::span<const SignedDocument> documents);

  // Reads of the index (OnlineIndex's contracts): of the in-memory index, without touching the
  // disk; of a disk-resident store, from its database (IOError or Corruption when it fails).
  Result<std::vector<OnlineMatch>> Query(std::string_view text) const;
  Result<std::vector<OnlineMatch>> QuerySigned(const Signature& signature,
                                               OnlineQueryStats* stats = nullptr) const;
  bool Contains(std::string_view id) const;
  // The stored signature of `id`, read from the database (an acknowledged write is there; one in
  // flight may not be yet). NotFound when there is none.
  Result<Signature> Get(std::string_view id) const;
  // The attachment stored with `id` (empty when it has none). NotFound when no document has the id.
  Result<std::string> GetAttachment(std::string_view id) const;
  // Every stored document, as OnlineIndex::ForEach (IOError or Corruption when one cannot be read).
  Status ForEach(const std::function<void(std::string_view, const Signature&)>& fn) const;

  StoreStats Stats() const;

  // Writes a consistent copy of the store to `dir` (which must not exist), as a store that Open
  // accepts; files are hard-linked where the file system allows. IOError naming the directory.
  Status Checkpoint(const std::string& dir) const;

  // Writes the in-memory index to a snapshot file in the store's directory (doc/store.md,
  // "Snapshots"), so that the next Open loads it plus the writes after it instead of rebuilding the
  // index from every document record. A child process writes the file from a fork of this one:
  // writes wait only while the process forks (milliseconds), queries not at all, and the memory
  // the index changes meanwhile is copied (copy-on-write). Returns once the file is written,
  // synced and recorded in the database; the previous snapshot, and the removal log before this
  // one, are then dropped. OK at once when nothing was written since the last snapshot. One call at
  // a time (others wait). NotSupported for a disk-resident store; IOError naming the file when it
  // cannot be written (the store is unaffected, the previous snapshot stays in use).
  Status Snapshot();

 private:
  struct Database;
  struct Writer;
  struct Queue;
  struct PendingWrite;
  struct SnapshotState;

  Store(std::string path, FsyncMode fsync, bool disk_resident);
  Status Write(Writer* writer);
  PendingWrite ApplyGroup(std::span<Writer* const> group);
  Status CommitGroup(PendingWrite* write);
  Status Insert(const SignedDocument& document, bool query, InsertPolicy policy,
                StoreInsertResult* result);

  std::string path_;
  FsyncMode fsync_;
  bool disk_resident_;            // index_ is a store::DiskResidentIndex
  std::unique_ptr<Database> db_;  // closed before the index goes
  std::unique_ptr<OnlineIndex> index_;
  std::unique_ptr<Queue> queue_;
  std::unique_ptr<SnapshotState> snapshot_;
};

}  // namespace neardup

#endif  // NEARDUP_STORE_H_
