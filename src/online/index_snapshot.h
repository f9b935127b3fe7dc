// Snapshots of an OnlineIndex (OnlineIndex::Save and Load): its whole state written as an index
// file of kind 3 (doc/index_format.md, "Online index files") and read back. Every array is written
// as it is in memory and read straight into the arrays of the new index, so that a load is mostly
// reads and checks: no hash table is rebuilt and nothing is sorted (but a SimHash index's permuted
// tables, which online_index.cc builds again from the fingerprints).
//
// WriteSnapshot reads the index's memory and, for sketches kept in a file, that file with pread()
// only; it starts no thread and takes no lock (the caller holds the index's shared lock), so that
// it can run in a child process of a fork().
#ifndef NEARDUP_ONLINE_INDEX_SNAPSHOT_H_
#define NEARDUP_ONLINE_INDEX_SNAPSHOT_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "neardup/method.h"
#include "neardup/online_index.h"
#include "neardup/status.h"
#include "online/band_tables.h"
#include "online/id_index.h"
#include "online/sketch_arena.h"

namespace neardup {
class OutputFile;
}

namespace neardup::online_internal {

// The counters of an OnlineIndex.
struct IndexCounters {
  uint64_t live = 0;        // documents stored
  uint64_t empty_live = 0;  // of them, without features
  uint64_t inserts = 0;
  uint64_t removes = 0;
  OnlineQueryStats queries;
};

// An OnlineIndex's state, as WriteSnapshot reads it (bands and sketches null for kSimhash).
struct IndexView {
  const DocumentSigner* signer = nullptr;
  const IdIndex* ids = nullptr;
  const std::vector<uint64_t>* simhashes = nullptr;  // by row
  const RowBits* removed = nullptr;
  const RowBits* empty = nullptr;
  const BandTables* bands = nullptr;
  const SketchArena* sketches = nullptr;
  IndexCounters counters;
};

// Writes the state to `out`. IOError when a sketch cannot be read back from its file, or from out.
Status WriteSnapshot(const IndexView& index, OutputFile* out);

// An OnlineIndex's state, as ReadSnapshot restores it.
struct RestoredIndex {
  IdIndex ids;
  std::vector<uint64_t> simhashes;
  RowBits removed;
  RowBits empty;
  std::unique_ptr<BandTables> bands;
  std::unique_ptr<SketchArena> sketches;
  IndexCounters counters;
};

// Reads a file of WriteSnapshot for an index of `signer`'s method, its sketches (kAccurate) in
// memory or in a new file of sketch_directory (as SketchArena::Create). NotFound / IOError /
// Corruption naming the path (Corruption for anything that WriteSnapshot could not have written);
// InvalidArgument for an index file of another kind; FailedPrecondition naming both settings lines
// when the file's are not the signer's.
Result<RestoredIndex> ReadSnapshot(const std::string& path, const DocumentSigner& signer,
                                   const std::string& sketch_directory);

}  // namespace neardup::online_internal

#endif  // NEARDUP_ONLINE_INDEX_SNAPSHOT_H_
