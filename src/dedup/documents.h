// Pass 1 of the dedup job: the inputs, read in order and fingerprinted on all cores.
#ifndef NEARDUP_DEDUP_DOCUMENTS_H_
#define NEARDUP_DEDUP_DOCUMENTS_H_

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "neardup/dedup.h"
#include "neardup/simhash.h"
#include "neardup/sketch.h"
#include "neardup/status.h"

namespace neardup::dedup_internal {

struct InputFile {
  std::string name;       // as the user named it ("-" for standard input)
  std::string read_path;  // where to read it (standard input is spooled to a temporary file)
  bool jsonl = false;
  uint64_t size = 0;      // bytes on disk
};

// Expands folders (recursively, in name order), decides each file's format, and copies standard input
// and pipes to files named spool_path + ".N" (so that the second pass can read them again). NotFound naming a missing input;
// InvalidArgument for an input that is neither a file nor a folder, or "-" given twice.
Result<std::vector<InputFile>> ExpandInputs(const DedupOptions& options, const std::string& spool_path);

// What pass 1 keeps per document: its fingerprint, id and what the keep rule needs. Never the text.
struct DocumentTable {
  std::vector<uint64_t> fingerprints;
  std::vector<uint8_t> sketches;     // with a sketcher: sketch_bytes() per document
  std::vector<uint32_t> band_keys;   // with a sketcher: bands per document
  std::vector<uint32_t> lengths;     // text bytes (KeepRule::kLongest / kShortest only)
  std::vector<double> priorities;    // KeepRule::kPriority only (absent field: lowest)
  std::string id_bytes;              // ids of all documents, concatenated
  std::vector<uint64_t> id_ends;     // id of document d: id_bytes[id_ends[d-1] .. id_ends[d])
  std::vector<uint64_t> bad_lines;   // input-line ordinals of skipped documents, ascending
  uint64_t lines = 0;                // input lines read, skipped ones included
  uint64_t bytes = 0;                // bytes of those lines
  uint64_t skipped = 0;
  std::vector<std::string> first_errors;

  size_t size() const { return fingerprints.size(); }
  std::string_view id(size_t d) const {
    const uint64_t begin = d == 0 ? 0 : id_ends[d - 1];
    return std::string_view(id_bytes).substr(begin, id_ends[d] - begin);
  }
};

// Reads every line of `files`, fingerprints the documents on `threads` threads (and sketches them when
// `sketcher` is not null: the fingerprinter must then keep distinct feature hashes), and fills *table
// in input order (the result does not depend on the thread count). Bad documents fail the call as
// "path:line: message" (ErrorPolicy::kFail) or are counted in the table (kSkip).
Status ReadDocuments(const std::vector<InputFile>& files, const DedupOptions& options,
                     const Fingerprinter& fingerprinter, const Sketcher* sketcher, int threads,
                     const std::function<void(uint64_t documents, uint64_t bytes)>& progress,
                     DocumentTable* table);

}  // namespace neardup::dedup_internal

#endif  // NEARDUP_DEDUP_DOCUMENTS_H_
