// The private parts of Store shared by its two source files: the database handle and the write
// queue.
#ifndef NEARDUP_SRC_STORE_STORE_INTERNAL_H_
#define NEARDUP_SRC_STORE_STORE_INTERNAL_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <span>
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

// Writers wait in `writers`; the one at the front applies a group and wakes the rest (leveldb's
// DBImpl::Write). Only the front writer touches next_row and the database's write path.
struct Store::Queue {
  std::mutex mutex;
  std::deque<Writer*> writers;
  std::atomic<uint64_t> next_row{0};
  std::atomic<uint64_t> syncs{0};
};

}  // namespace neardup

#endif  // NEARDUP_SRC_STORE_STORE_INTERNAL_H_
