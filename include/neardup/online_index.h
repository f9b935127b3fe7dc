// The online index: documents inserted, removed and queried one at a time, for both methods.
//
// Each stored document has a caller-chosen string id and its Signature (neardup/method.h). A query
// returns every stored document that is a near-duplicate of the query by the method's rule, the
// same rule as the batch job's (neardup/dedup.h):
//   - kAccurate: the document shares at least one band key with the query and their sketches
//     estimate Jaccard similarity >= threshold. Band tables (one per band: band key -> the rows
//     holding it) give the candidates, a sketch arena verifies them.
//   - kSimhash: the fingerprints are within k bits, found by the exact permuted-table index
//     (neardup/index.h).
// So inserting a corpus one document at a time, querying each before inserting it, finds exactly
// the pairs that `neardup dedup --pairs` finds with the same settings. Documents without features
// (OnlineMatch never names them) are stored but never match.
//
// QueryAndInsert checks and inserts under one lock: of two near-duplicates inserted concurrently
// with InsertPolicy::kIfNew, exactly one is stored and the other is told which.
//
// The index holds signatures only, never texts: per document the id (its bytes plus about 12), and
// for kAccurate the sketch (132 bytes by default; or in a file,
// OnlineIndexOptions::sketch_directory) and its band keys in the band tables (about 115 bytes); for
// kSimhash the fingerprint in the permuted tables (about 30 bytes). Stats() reports the memory
// (doc/online.md, "Memory").
//
// Save writes the whole index to a file and Load reads it back, answering exactly as before, much
// faster than inserting the documents again (doc/online.md, "Saving and loading").
//
// Thread safety: every method may be called from several threads at once. Queries run concurrently
// with each other; inserts and removes are serialised and wait for the queries in flight.
#ifndef NEARDUP_ONLINE_INDEX_H_
#define NEARDUP_ONLINE_INDEX_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "neardup/method.h"
#include "neardup/status.h"

namespace neardup {

class OutputFile;

// A stored near-duplicate of a query.
struct OnlineMatch {
  std::string id;
  // kAccurate: the estimated Jaccard similarity (>= threshold); kSimhash: the Hamming distance
  // (<= k).
  double score = 0;

  friend bool operator==(const OnlineMatch&, const OnlineMatch&) = default;
};

// Work done by queries (faiss-style counters), summed over the queries they describe.
struct OnlineQueryStats {
  uint64_t queries = 0;
  uint64_t lookups = 0;     // kAccurate: band tables looked up; kSimhash: sorted ranges probed
  uint64_t candidates = 0;  // stored documents compared with the query (sketch estimates or
                            // Hamming distances), each counted once per query
  uint64_t matches = 0;     // results returned

  OnlineQueryStats& operator+=(const OnlineQueryStats& other);
};

struct OnlineIndexStats {
  uint64_t documents = 0;        // stored (removed ones excluded)
  uint64_t empty_documents = 0;  // of them, without features (never matched)
  uint64_t inserts = 0;          // successful inserts so far
  uint64_t removes = 0;          // successful removes so far
  uint64_t memory_bytes = 0;     // heap bytes held (ids, signatures, tables)
  std::string settings;          // SettingsLine of the method
  OnlineQueryStats queries;      // cumulative
};

enum class InsertPolicy {
  kAlways,  // insert whatever the query found
  kIfNew,   // insert only when the query found no near-duplicate (dedup of a stream)
};

struct QueryAndInsertResult {
  std::vector<OnlineMatch> matches;  // as Query would have returned before the insert
  bool inserted = false;
};

struct OnlineIndexOptions {
  MethodOptions method;
  // Documents expected: tables are sized once for them (0: grown as needed).
  uint64_t expected_documents = 0;
  // kAccurate: where the sketches are kept. Empty (default): in memory. A directory: in an unlinked
  // temporary file there, read back for each candidate a query verifies (about 132 bytes a
  // document less in memory, a pread() a candidate; doc/online.md). Create fails with IOError when
  // the file cannot be made; an insert, when it cannot be written (the insert is then not made).
  std::string sketch_directory;
};

class OnlineIndex {
 public:
  // InvalidArgument naming a bad method setting; NotFound for a missing folding table or
  // dictionary.
  static Result<std::unique_ptr<OnlineIndex>> Create(const OnlineIndexOptions& options);

  // Reads an index written by Save. options.method must resolve to the settings recorded in the
  // file (FailedPrecondition naming both otherwise); options.sketch_directory as for Create (the
  // sketches are then copied into the new scratch file); options.expected_documents sizes only a
  // kSimhash index's tables, which are built again from the fingerprints (the other arrays keep
  // the sizes they were saved with). NotFound / IOError / Corruption naming the path (Corruption
  // for a truncated or damaged file: every section is checked, never trusted);
  // InvalidArgument for an index file of another kind (neardup/index_file.h); Create's errors.
  static Result<std::unique_ptr<OnlineIndex>> Load(const std::string& path,
                                                   const OnlineIndexOptions& options);

  virtual ~OnlineIndex() = default;

  // The signer of the index's method: sign texts with it to use the *Signed calls.
  virtual const DocumentSigner& signer() const = 0;

  // Stores a document under `id` (1..65535 bytes of any content). FailedPrecondition when the id
  // is already stored; InvalidArgument for an empty or too long id, or a signature of the wrong
  // shape; the text's own errors as DocumentSigner reports them. ResourceExhausted past 2^32 - 2
  // inserts.
  virtual Status Insert(std::string_view id, std::string_view text) = 0;
  virtual Status InsertSigned(std::string_view id, const Signature& signature) = 0;

  // InsertSigned for a stream of documents, in order, much faster for many of them (loading a
  // store): next(&id, &signature) fills in the next document and returns false after the last. The
  // documents are indexed at the end, each band's entries sorted once. The first error (next's own,
  // or one InsertSigned would give, with the document's number) stops the load; the documents
  // before it are stored. size_hint: the documents expected (0: unknown).
  virtual Status InsertAll(
      const std::function<Result<bool>(std::string* id, Signature* signature)>& next,
      uint64_t size_hint = 0) = 0;

  // Removes the document stored under `id`. NotFound when there is none.
  virtual Status Remove(std::string_view id) = 0;

  // Every stored near-duplicate of the text, by descending score for kAccurate (ascending
  // distance for kSimhash), ties by id. An empty text, or one without features, has none.
  virtual Result<std::vector<OnlineMatch>> Query(std::string_view text) const = 0;
  virtual Result<std::vector<OnlineMatch>> QuerySigned(const Signature& signature,
                                                       OnlineQueryStats* stats = nullptr) const = 0;

  // Query, then (by the policy) Insert, atomically with respect to every other call.
  virtual Result<QueryAndInsertResult> QueryAndInsert(std::string_view id, std::string_view text,
                                                      InsertPolicy policy) = 0;
  virtual Result<QueryAndInsertResult> QueryAndInsertSigned(std::string_view id,
                                                            const Signature& signature,
                                                            InsertPolicy policy) = 0;

  virtual bool Contains(std::string_view id) const = 0;
  // The stored signature of `id`. NotFound when there is none.
  virtual Result<Signature> Get(std::string_view id) const = 0;

  // Calls fn(id, signature) for every stored document, in insertion order (under a shared lock:
  // fn must not call the index). IOError when a sketch could not be read back from its file.
  virtual Status ForEach(
      const std::function<void(std::string_view, const Signature&)>& fn) const = 0;

  virtual OnlineIndexStats Stats() const = 0;

  // Writes the whole index (ids, signatures, band tables, removed rows, counters: everything
  // needed to answer exactly as now, and to take further inserts and removes) to `out` as an index
  // file of kind 3 (doc/index_format.md), under the shared lock (queries go on, writers wait). The
  // caller opens `out` and commits it. Reads only the index's memory and its sketch file (pread),
  // starts no thread but out's own and takes no other lock: it may run in a child process of a
  // fork() (the parent holding off writers while it forks). IOError from out or from reading the
  // sketch file; NotSupported for an index that is not kept in memory.
  virtual Status Save(OutputFile* out) const = 0;
};

}  // namespace neardup

#endif  // NEARDUP_ONLINE_INDEX_H_
