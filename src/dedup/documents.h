// Pass 1 of the dedup job: the inputs, read in order and fingerprinted on all cores.
#ifndef NEARDUP_DEDUP_DOCUMENTS_H_
#define NEARDUP_DEDUP_DOCUMENTS_H_

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dedup/spill.h"
#include "neardup/dedup.h"
#include "neardup/method.h"
#include "neardup/status.h"

namespace neardup::dedup_internal {

// Messages of bad documents kept for the report (DedupReport::first_errors).
inline constexpr size_t kMaxErrorsKept = 10;

struct InputFile {
  std::string name;       // as the user named it ("-" for standard input)
  std::string read_path;  // where to read it (standard input is spooled to a temporary file)
  bool jsonl = false;
  uint64_t size = 0;  // bytes on disk
};

// Expands folders (recursively, in name order), decides each file's format, and copies standard
// input and pipes to files named spool_path + ".N" (so that the second pass can read them again).
// NotFound naming a missing input; InvalidArgument for an input that is neither a file nor a
// folder, "-" given twice, or a file given twice (by any names, or in a folder given too); IOError
// naming the reason when a copy cannot be made.
Result<std::vector<InputFile>> ExpandInputs(const DedupOptions& options,
                                            const std::string& spool_path);

// Warnings about how the inputs will be read (a .json name read as plain text), for the report.
std::vector<std::string> InputWarnings(const std::vector<InputFile>& files,
                                       const DedupOptions& options);

// What pass 1 computes per document for the matching and the join, in document order. The job reads
// it to match the --against indexes, then hands it whole to the grouping, which compacts it in
// place.
struct Signatures {
  std::vector<uint64_t> fingerprints;  // one per document
  std::vector<uint8_t> sketches;       // kAccurate in memory: sketch_bytes() per document
  std::vector<uint32_t> band_keys;     // kAccurate in memory: bands per document
  // kAccurate on disk (dedup/spill.h): when set, pass 1 appends the sketches and band keys there
  // instead of the two arrays above, and records each document's SignatureHash here.
  SpillWriter* spill = nullptr;
  std::vector<uint64_t> signature_hashes;
  // Set once pass 1 has finished writing them: the files read back.
  const SketchFile* sketch_file = nullptr;
  const BandKeyFiles* band_files = nullptr;
};

// A hash of a document's whole signature (fingerprint, sketch and band keys): equal signatures
// have equal hashes.
uint64_t SignatureHash(uint64_t fingerprint, std::span<const uint8_t> sketch,
                       std::span<const uint32_t> band_keys);

// Where documents' lines start in the inputs, as offsets into the inputs taken one after another
// (DocumentTable::file_byte_starts): every kEvery-th document's, half a byte a document. The line
// of another document is found by reading forward from the nearest one before it, counting lines
// (DocumentLinesAt).
class LineOffsets {
 public:
  static constexpr size_t kEvery = 16;

  // The next document's offset (ascending).
  void Add(uint64_t offset) {
    if (documents_++ % kEvery == 0) offsets_.push_back(offset);
  }
  void Clear() {
    std::vector<uint64_t>().swap(offsets_);
    documents_ = 0;
  }
  // Room for `expected` documents (no doubling while growing).
  void Reserve(size_t expected) { offsets_.reserve(expected / kEvery + 1); }
  size_t documents() const { return documents_; }
  // Where document d's line starts, for d a multiple of kEvery.
  uint64_t At(size_t d) const { return offsets_[d / kEvery]; }

 private:
  std::vector<uint64_t> offsets_;
  size_t documents_ = 0;
};

// What pass 1 keeps per document besides its signature: its id and what the keep rule needs. Never
// the text. Documents without an id field are named by their line ("12", or "path:12" with several
// inputs), computed when asked, so plain-text inputs store no ids at all.
struct DocumentTable {
  std::vector<uint32_t> lengths;          // text bytes (KeepRule::kLongest / kShortest only)
  std::vector<double> priorities;         // KeepRule::kPriority only (absent field: lowest)
  std::vector<uint64_t> bad_lines;        // input-line ordinals of skipped documents, ascending
  std::vector<uint32_t> empty_documents;  // documents without features (EmptyPolicy), ascending
  std::vector<uint64_t> file_starts;      // input-line ordinal of each file's first line
  std::vector<std::string> file_names;
  uint64_t lines = 0;  // input lines read, skipped ones included
  uint64_t bytes = 0;  // bytes of those lines
  uint64_t skipped = 0;
  std::vector<std::string> first_errors;

  // Sharded runs (DedupOptions::shard_count): the input-line ordinal of each document of this
  // shard (the others' lines are counted in `lines` and `bytes`, not read).
  std::vector<uint64_t> ordinals;
  // When ReadDocuments is asked to and every input is a plain file (offsets into decompressed data
  // cannot be read at random): where the documents' lines start (line_offsets.documents() ==
  // documents), and where each file starts in the same count (files + 1 entries, the last the
  // total), so that a document's line can be read again without reading the rest (boundary.h).
  // Empty otherwise.
  LineOffsets line_offsets;
  std::vector<uint64_t> file_byte_starts;

  size_t documents = 0;                // documents read (bad ones skipped)
  size_t jsonl_documents = 0;          // of them, from JSONL inputs
  size_t documents_with_priority = 0;  // of them, with the priority field

  // Whether some document has an id field (else every document is named by its line).
  bool has_id_field() const { return !id_lengths_.empty(); }

  size_t size() const { return documents; }

  // Whether document d has no features (EmptyPolicy): never joined, never matched.
  bool IsEmpty(uint32_t d) const {
    return std::binary_search(empty_documents.begin(), empty_documents.end(), d);
  }

  // Records the id of the next document: an id field's value, or none (the line names it).
  void AddId(const std::string* explicit_id);
  // Sizes the id storage for `expected` documents like those seen so far (no doubling while
  // growing).
  void ReserveIds(size_t expected);

  // The id of document d: its id field's value, else its place: the line number with one input,
  // FILE:LINE with several (a line number may equal another document's id: the duplicate ids'
  // warning counts it).
  std::string id(size_t d) const;
  // Whether document d is named by its line (it has no id field).
  bool NamedByLine(size_t d) const;
  // Calls on_id(d, id) for every document in order (faster than id(d) for each).
  void ForEachId(const std::function<void(size_t, std::string_view)>& on_id) const;
  // Where document d is: "path:line".
  std::string Location(size_t d) const;
  // The same as the index of its file (into file_names) and its 1-based line number there.
  std::pair<size_t, uint64_t> FileAndLine(size_t d) const;

 private:
  uint64_t LineOrdinal(size_t d) const;

  // Only once a document has an id field: ids of all documents (empty for line-named ones),
  // concatenated; each id's length (4 bytes), and where every run of kIdRun ids starts (8 bytes per
  // run), so that an id costs its bytes and about 4 more.
  static constexpr size_t kIdRun = 64;
  std::string id_bytes_;
  std::vector<uint32_t> id_lengths_;
  std::vector<uint64_t> id_run_starts_;
  std::vector<bool> named_by_line_;
};

// The shard (0..shard_count-1) that reads line `line` (1-based) of input `file` in a sharded run:
// a hash of the two, the same in every shard.
int ShardOfLine(uint32_t file, uint64_t line, int shard_count);

// Reads every line of `files`, signs the documents on `threads` threads (kAccurate: the
// fingerprint, sketch and band keys; kSimhash: the fingerprint) into *signatures, and fills *table,
// both in input order (the result does not depend on the thread count). Bad documents fail the call
// as "path:line: message" (ErrorPolicy::kFail) or are counted in the table (kSkip). Documents
// without features get fingerprint 0 and an all-zero sketch and are listed in
// table->empty_documents, or fail the call (EmptyPolicy::kFail). While it runs, *documents_done
// counts the documents appended and *bytes_read is the reader's position in the input bytes (for a
// progress display on another thread). memory_limit > 0: ResourceExhausted, naming --memory, once
// the signatures held in memory (not spilled) exceed it.
// record_offsets: fill table->line_offsets and file_byte_starts (when every input is a plain file).
Status ReadDocuments(const std::vector<InputFile>& files, const DedupOptions& options,
                     const DocumentSigner& signer, int threads,
                     std::atomic<uint64_t>* documents_done, std::atomic<uint64_t>* bytes_read,
                     DocumentTable* table, Signatures* signatures, uint64_t memory_limit = 0,
                     bool record_offsets = false);

}  // namespace neardup::dedup_internal

#endif  // NEARDUP_DEDUP_DOCUMENTS_H_
