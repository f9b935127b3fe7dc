// Exact Hamming indexes of 64-bit fingerprints: "every stored fingerprint within k bits of this
// one".
//
// Two implementations behind one interface:
// - BruteForceIndex compares the query with every stored fingerprint. It is the reference the other
//   index is tested against, and the fastest choice for a few thousand fingerprints.
// - PermutedTableIndex is the pigeonhole index (Manku, Jain, Das Sarma 2007): the 64 bits are split
//   into b blocks; two fingerprints within k bits agree exactly on at least b - k blocks, so with
//   one sorted table per choice of m <= b - k "key" blocks, every match shares the key of at least
//   one table with the query. A query reads one small contiguous range per table and verifies it
//   with SIMD popcounts. Results are exact: no misses, no duplicates, nothing beyond k.
//
// Thread safety: every method of an Index may be called from several threads at once. Queries run
// concurrently with each other; Insert and Remove are serialised internally and wait only for
// queries in flight (a PermutedTableIndex merges its write buffer in the background, so a large
// merge never blocks queries).
#ifndef NEARDUP_INDEX_H_
#define NEARDUP_INDEX_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "neardup/status.h"

namespace neardup {

class OutputFile;

// One result of a query: a stored id and its Hamming distance to the query.
struct Match {
  uint64_t id = 0;
  int distance = 0;

  friend bool operator==(const Match&, const Match&) = default;
};

// Work done by queries, summed over the queries it describes.
struct QueryStats {
  uint64_t queries = 0;
  uint64_t tables_probed = 0;        // sorted ranges looked up
  uint64_t candidates_verified = 0;  // stored fingerprints whose distance was computed
  uint64_t matches = 0;              // results returned

  QueryStats& operator+=(const QueryStats& other);
};

// Size and memory of an index, and the work of every query answered so far.
struct IndexStats {
  uint64_t size = 0;          // fingerprints stored (removed ones excluded)
  uint64_t memory_bytes = 0;  // heap (or mapped file) bytes held by the index
  uint64_t buffered = 0;      // inserts not yet merged into the sorted tables
  uint64_t merges = 0;        // write-buffer merges completed
  std::string design;         // e.g. "4 blocks 16,16,16,16, key 1 block: 4 tables, exact for k<=3"
  int max_exact_k = 0;        // largest k the index answers exactly
  QueryStats queries;         // cumulative
};

// The results of a batch of queries: matches of query q are matches[offsets[q] .. offsets[q+1]).
struct BatchResult {
  std::vector<size_t> offsets;  // queries + 1 entries
  std::vector<Match> matches;
  QueryStats stats;

  std::span<const Match> MatchesOf(size_t query) const {
    return std::span<const Match>(matches).subspan(offsets[query],
                                                   offsets[query + 1] - offsets[query]);
  }
};

class Index {
 public:
  virtual ~Index() = default;

  // Adds a fingerprint under a caller-chosen id. FailedPrecondition if the id is already stored;
  // ResourceExhausted past 2^32 - 2 inserts.
  virtual Status Insert(uint64_t id, uint64_t fingerprint) = 0;

  // Removes the fingerprint stored under id. NotFound if there is none.
  virtual Status Remove(uint64_t id) = 0;

  // Finishes pending work: merges buffered inserts into the sorted tables and waits for background
  // merges. Never needed for correct results; useful before measuring or saving.
  virtual Status Flush() = 0;

  // Every stored (id, distance) with distance <= k, in ascending (distance, id) order.
  // InvalidArgument if k is negative or above the largest k the index answers exactly.
  virtual Result<std::vector<Match>> Query(uint64_t fingerprint, int k) const = 0;

  // The same for many queries, spread over `threads` threads (0: one per core). Each query's
  // matches are in ascending (distance, id) order; the result does not depend on the thread count.
  virtual Result<BatchResult> QueryBatch(std::span<const uint64_t> fingerprints, int k,
                                         int threads) const = 0;

  virtual IndexStats Stats() const = 0;
};

// A design of permuted tables: the 64 bits are split into blocks (block 0 holds the most
// significant bits), and there is one table for every choice of key_blocks of them. Exact for every
// k <= block_bits.size() - key_blocks.
struct TableDesign {
  std::vector<int> block_bits;  // sizes, summing to 64, each 1..32; 2..8 blocks
  int key_blocks = 1;           // 1 .. blocks - 1

  // b blocks of sizes as even as possible (the larger ones first), keyed on m of them.
  static TableDesign Even(int blocks, int key_blocks);

  int max_exact_k() const { return static_cast<int>(block_bits.size()) - key_blocks; }
  int tables() const;            // C(blocks, key_blocks)
  std::string ToString() const;  // "5 blocks 13,13,13,13,12, key 2 blocks: 10 tables..."
  Status Validate() const;       // InvalidArgument naming the problem
};

// What the planner chose and why.
struct Plan {
  TableDesign design;
  int prefix_bits = 0;               // bits of the bucket directory of each table
  double candidates_per_query = 0;   // expected fingerprints verified per query (uniform codes)
  double bytes_per_fingerprint = 0;  // expected memory, ids and directories included
  double cost_per_query_ns = 0;      // the model's estimate on one core
  std::vector<std::string> alternatives;  // one line per design considered, with why it lost
};

// Chooses the fastest exact design for n fingerprints and queries up to max_k whose expected memory
// fits in memory_budget_bytes (0: no limit). InvalidArgument for max_k outside 0..7 or n = 0 given
// a budget; ResourceExhausted if no design fits the budget (the message gives the smallest).
Result<Plan> PlanDesign(uint64_t n, int max_k, uint64_t memory_budget_bytes);

// Options of a PermutedTableIndex. Every field has a usable default.
struct IndexOptions {
  // The table design. Empty block_bits: the planner chooses from expected_size, max_k and
  // memory_budget_bytes.
  TableDesign design{{}, 1};
  int max_k = 3;                     // the largest k queries will use (planner input)
  uint64_t expected_size = 0;        // planner input; 0: the size of the initial build (or 1M)
  uint64_t memory_budget_bytes = 0;  // planner input; 0: no limit
  // Bits of each table's bucket directory; 0: chosen from the size (about 4..16 entries per
  // bucket). More bits: shorter ranges per query, 4 bytes * 2^bits per table.
  int prefix_bits = 0;
  // Inserts kept in the write buffer (scanned by brute force) before a background merge moves them
  // into the sorted tables. 0: 2048. Larger: cheaper inserts, slower queries while they wait.
  size_t merge_threshold = 0;
  // Merge on a background thread (queries and inserts continue meanwhile). false: merge inside the
  // Insert that fills the buffer.
  bool background_merge = true;
  int build_threads = 0;  // threads of Build and merges; 0: one per core
};

// A PermutedTableIndex holding nothing yet.
Result<std::unique_ptr<Index>> NewPermutedTableIndex(const IndexOptions& options);

// A PermutedTableIndex built in bulk from ids[i] -> fingerprints[i] (much faster than inserting one
// by one). InvalidArgument if the spans differ in length or an id repeats (naming it).
Result<std::unique_ptr<Index>> BuildPermutedTableIndex(std::span<const uint64_t> ids,
                                                       std::span<const uint64_t> fingerprints,
                                                       const IndexOptions& options);

// The reference index: answers any k by comparing with every fingerprint.
std::unique_ptr<Index> NewBruteForceIndex();

// Writes a PermutedTableIndex (made by the functions above or LoadIndex) to path, in the format of
// doc/index_format.md. Inserts still buffered are included; removed fingerprints are not.
// `settings` is recorded in the header: the SettingsLine (neardup/method.h) of the method that made
// the fingerprints, or empty when it is not known (fingerprints from elsewhere); ReadIndexFileInfo
// (neardup/index_file.h) reads it back. InvalidArgument for another kind of Index or a settings
// line over 4096 bytes; IOError naming the path. The file appears whole or not at all
// (neardup/output.h).
Status SaveIndex(const Index& index, const std::string& path, std::string_view settings = {});
// The same, written to an open output that the caller commits (e.g. with the other outputs of a
// job).
Status SaveIndex(const Index& index, OutputFile* out, std::string_view settings = {});

// How the ids of a fingerprints file's rows name their documents, as the file records it.
enum class IndexIdNames {
  kUnrecorded,  // files of earlier builds, and SaveIndex without IndexFileOptions: INDEX.ids beside
                // the file names the rows when it is there (neardup dedup --save-index writes it)
  kInIndex,     // the ids stored in the index are the documents' own (numbers)
  kIdTable,     // the ids are 0, 1, 2... and INDEX.ids (neardup/id_table.h) must name them
};

// What SaveIndex records with the index (doc/index_format.md, the fingerprints header).
struct IndexFileOptions {
  // The SettingsLine (neardup/method.h) of the method that made the fingerprints; empty when
  // unknown.
  std::string settings;
  IndexIdNames id_names = IndexIdNames::kUnrecorded;
  // The k queries use when they name none (`neardup index query`'s default): 0 .. the design's
  // max_exact_k; -1: not recorded (queries then default to max_exact_k).
  int query_k = -1;
};

// The same, with what `options` records. InvalidArgument also for a query_k outside -1 ..
// max_exact_k.
Status SaveIndex(const Index& index, OutputFile* out, const IndexFileOptions& options);

struct LoadOptions {
  bool verify_checksums = true;  // false: open in O(directory) time, trusting the file's contents
  bool map_file = true;          // share the file's pages (mmap) instead of reading into the heap
  IndexOptions index;  // merge_threshold, background_merge, build_threads for later inserts
};

// Opens an index written by SaveIndex (format version 2, or version 1 of earlier builds).
// NotFound / IOError naming the path; Corruption naming the section or offset when the file is
// truncated, altered or of a version this build does not read; InvalidArgument for an index file of
// the accurate method (signatures, read by LoadSignatureIndex of neardup/index_file.h).
Result<std::unique_ptr<Index>> LoadIndex(const std::string& path, const LoadOptions& options = {});

}  // namespace neardup

#endif  // NEARDUP_INDEX_H_
