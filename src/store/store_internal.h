// The private parts of Store shared by its two source files: the database handle and the write
// queue.
#ifndef NEARDUP_SRC_STORE_STORE_INTERNAL_H_
#define NEARDUP_SRC_STORE_STORE_INTERNAL_H_

#include <rocksdb/write_batch.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "neardup/store.h"
#include "store/database.h"

namespace neardup {

struct Store::Database {
  store::Database rocks;
};

// One call waiting in the write queue: documents to insert, or an id to remove.
struct Store::Writer {
  std::span<const SignedDocument> documents;
  bool query = false;  // QueryAndInsert (by `policy`) rather than Insert
  InsertPolicy policy = InsertPolicy::kAlways;
  std::vector<StoreInsertResult>* results = nullptr;  // one per document
  std::optional<std::string_view> remove_id;

  Status status;  // the durable write's (and, for a remove, the remove's)
  bool done = false;
  std::condition_variable wake;
};

// How to take a write back out of the in-memory index when the disk refused it.
struct Undo {
  bool reinsert = false;  // a remove: insert the signature again; an insert: remove the id
  std::string id;
  Signature signature;
};

// A group applied to the in-memory index, waiting for its durable write.
struct Store::PendingWrite {
  rocksdb::WriteBatch batch;
  std::vector<Undo> undo;  // empty: nothing to write
  uint64_t next_row = 0;   // after the group
  Status status;           // a failure while building the batch
};

// Writers wait in `writers`; the one at the front applies a group to the index (leveldb's
// DBImpl::Write), takes a ticket, lets the next front apply the next group, and writes its batch
// when `written` reaches its ticket, so that batches reach the disk in the order they were applied.
// Only the front writer touches applied_row; next_row counts rows durably handed out.
// Snapshot() sets `paused` (no group is applied while it is set) and waits until no group is being
// applied (`applying`) or written: the index is then exactly what the database holds.
struct Store::Queue {
  std::mutex mutex;
  std::deque<Writer*> writers;
  uint64_t tickets = 0;  // groups applied
  uint64_t written = 0;  // groups written (or failed), in ticket order
  std::condition_variable turn;
  uint64_t applied_row = 0;
  uint64_t applied_removal = 0;  // removal numbers handed out (front writer only)
  bool applying = false;         // a group is being applied to the index
  bool paused = false;           // Snapshot() holds writes back
  std::atomic<uint64_t> next_row{0};
  std::atomic<uint64_t> syncs{0};
};

// The snapshot in use: written by Snapshot() or loaded at open (doc/store.md, "Snapshots").
struct Store::SnapshotState {
  std::mutex mutex;  // one Snapshot() (or Checkpoint) at a time; guards `file`
  std::string file;  // its name in the store's directory; empty: none
  std::atomic<uint64_t> rows{0}, removals{0}, bytes{0};
  std::atomic<int64_t> time{0};
  std::atomic<uint64_t> nanoseconds{0};        // the last Snapshot()'s duration
  std::atomic<uint64_t> pause_nanoseconds{0};  // how long it held writes back
  // Set at open.
  std::string loaded_from, skipped;
  double load_seconds = 0;
};

namespace store {
// Removes the files of snapshots other than `keep` (earlier ones, one a crash left behind, the
// temporary file of one being written when it struck). Best effort.
void RemoveOtherSnapshots(const std::string& dir, const std::string& keep);
}  // namespace store

}  // namespace neardup

#endif  // NEARDUP_SRC_STORE_STORE_INTERNAL_H_
