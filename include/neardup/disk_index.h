// A disk-resident exact SimHash index, for collections larger than RAM: the permuted tables
// themselves live in RocksDB, keyed the way the classic design keyed its HBase rows, and a query
// answers with one prefix seek per table.
//
// Layout (column family "tables"): for every table t of the TableDesign (neardup/index.h) and
// every stored fingerprint f with id i, one key of 17 bytes and an empty value:
//   [t: 1 byte][P_t(f): 8 bytes, big-endian][i: 8 bytes, big-endian]
// where P_t(f) is f with table t's key blocks moved to the front (distances are unchanged). Keys of
// one table are therefore sorted by their key blocks: a query seeks to [t][P_t(q) with the key bits
// only] and reads forward while the key bits agree, keeping entries within k bits. Column family
// "documents" maps [i: 8 bytes, big-endian] -> f (8 bytes, little-endian), for Remove and Get;
// "meta" holds the format version and the design. doc/store.md gives the details.
//
// Memory: RocksDB's block cache (DiskIndexOptions::block_cache_bytes), its memtables and the index
// blocks of its files; never the fingerprints. Each query reports the seeks it made, the entries it
// read and the bytes of blocks read from files (DiskQueryStats).
//
// Thread safety: queries may run concurrently with each other and with writes; writes are
// serialised internally. One process at a time may open a folder (RocksDB's LOCK file).
#ifndef NEARDUP_DISK_INDEX_H_
#define NEARDUP_DISK_INDEX_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "neardup/index.h"
#include "neardup/status.h"

namespace neardup {

struct DiskIndexOptions {
  // The design of a new index; an existing one keeps its own. Empty block_bits: 4 blocks of 16
  // bits keyed on 1 (4 tables, exact for k <= 3).
  TableDesign design{{}, 1};
  bool create_if_missing = true;
  uint64_t block_cache_bytes = uint64_t{256} << 20;
  // true: every write is synced to disk before it returns (survives an OS crash); false: written
  // to RocksDB's log unsynced (survives a process crash).
  bool sync = false;
};

// Work of queries, summed.
struct DiskQueryStats {
  uint64_t queries = 0;
  uint64_t seeks = 0;         // prefix seeks (one per table)
  uint64_t entries_read = 0;  // table entries compared with the query
  uint64_t block_reads = 0;   // data, index and filter blocks read from files (not the cache)
  uint64_t block_bytes = 0;   // their bytes
  uint64_t matches = 0;

  DiskQueryStats& operator+=(const DiskQueryStats& other);
};

struct DiskIndexStats {
  uint64_t size = 0;          // fingerprints stored
  uint64_t disk_bytes = 0;    // files of the folder
  uint64_t memory_bytes = 0;  // block cache in use + memtables + table readers (index blocks)
  std::string design;
};

class DiskSimhashIndex {
 public:
  // Opens (or creates) the index in folder `path`. IOError naming the path (also when another
  // process has it open); Corruption for damaged files; InvalidArgument for a folder that is not a
  // disk index.
  static Result<std::unique_ptr<DiskSimhashIndex>> Open(const std::string& path,
                                                        const DiskIndexOptions& options = {});

  virtual ~DiskSimhashIndex() = default;

  // FailedPrecondition if the id is stored. One atomic write of every table's entry.
  virtual Status Insert(uint64_t id, uint64_t fingerprint) = 0;
  // NotFound if the id is not stored.
  virtual Status Remove(uint64_t id) = 0;
  // Fills an EMPTY index from ids[i] -> fingerprints[i] by writing sorted files and ingesting
  // them (much faster than Insert); `progress` (may be null) gets the table being written.
  // FailedPrecondition when the index is not empty; InvalidArgument for spans of different sizes.
  virtual Status BulkLoad(std::span<const uint64_t> ids, std::span<const uint64_t> fingerprints,
                          const std::function<void(int table)>& progress = nullptr) = 0;

  // Every stored (id, distance) with distance <= k, in ascending (distance, id) order.
  // InvalidArgument when k exceeds the design's exact limit.
  virtual Result<std::vector<Match>> Query(uint64_t fingerprint, int k,
                                           DiskQueryStats* stats = nullptr) const = 0;

  virtual Result<uint64_t> Get(uint64_t id) const = 0;
  virtual DiskIndexStats Stats() const = 0;
};

}  // namespace neardup

#endif  // NEARDUP_DISK_INDEX_H_
