// The permuted SimHash tables kept in RocksDB, shared by DiskSimhashIndex and the disk-resident
// store: the key of each (table, fingerprint, id) entry, the entries of one document written to or
// deleted from a batch, and the query by one prefix seek per table (doc/store.md, "Disk-resident
// tables").
//
// Key, 17 bytes, empty value: [t: 1 byte][P_t(f): 8 bytes, big-endian][id: 8 bytes, big-endian],
// where P_t(f) is f with table t's key blocks moved to the front. A query seeks to
// [t][P_t(q) with only its key bits] and reads forward while the key bits agree.
#ifndef NEARDUP_SRC_STORE_SIMHASH_TABLES_H_
#define NEARDUP_SRC_STORE_SIMHASH_TABLES_H_

#include <rocksdb/db.h>
#include <rocksdb/write_batch.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "index/layout.h"
#include "neardup/disk_index.h"
#include "neardup/index.h"
#include "neardup/status.h"

namespace neardup::store {

// A design as text, "16,16,16,16/1" (block sizes / key blocks), and back (Corruption when bad).
std::string DesignText(const TableDesign& design);
Result<TableDesign> ParseDesign(const std::string& text);

// The design of the disk-resident tables for queries up to k: k + 1 even blocks (at least 2)
// keyed on one, so k + 1 tables and one seek each.
TableDesign DiskDesignFor(int k);

class SimhashTables {
 public:
  // design must be valid.
  explicit SimhashTables(const TableDesign& design);

  const TableDesign& design() const { return layout_.design(); }
  int tables() const { return layout_.tables(); }
  // The largest k answered exactly.
  int max_k() const { return layout_.design().max_exact_k(); }

  // The key of the entry of `id` with fingerprint `fingerprint` (not permuted) in `table`.
  std::string Key(int table, uint64_t fingerprint, uint64_t id) const;
  // The key for a fingerprint already permuted for `table`.
  static std::string PermutedKey(int table, uint64_t permuted, uint64_t id);
  uint64_t Permute(int table, uint64_t fingerprint) const {
    return layout_.Permute(table, fingerprint);
  }

  // Puts (or deletes) the entry of (id, fingerprint) in every table.
  rocksdb::Status Put(rocksdb::WriteBatch* batch, rocksdb::ColumnFamilyHandle* family, uint64_t id,
                      uint64_t fingerprint) const;
  rocksdb::Status Delete(rocksdb::WriteBatch* batch, rocksdb::ColumnFamilyHandle* family,
                         uint64_t id, uint64_t fingerprint) const;

  // Appends every stored (id, distance <= k) to *out, each once (k <= max_k(), unchecked), in no
  // particular order, and adds the query's work to *stats (queries, seeks, entries read, matches;
  // the block reads are the caller's to count). Reads through `read` (its snapshot, if any).
  rocksdb::Status Query(rocksdb::DB* db, rocksdb::ColumnFamilyHandle* family,
                        const rocksdb::ReadOptions& read, uint64_t fingerprint, int k,
                        std::vector<Match>* out, DiskQueryStats* stats) const;

 private:
  // Whether table t is the first whose key the pair shares, given their difference permuted for
  // t: the pair is then reported by t alone.
  bool OwnedBy(int t, uint64_t permuted_difference) const;

  const index_internal::Layout layout_;
  std::vector<std::array<uint8_t, 64>> original_bit_;  // [table][permuted bit] = original bit
};

}  // namespace neardup::store

#endif  // NEARDUP_SRC_STORE_SIMHASH_TABLES_H_
