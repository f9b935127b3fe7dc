// The indexes of earlier corpora of a dedup job (DedupOptions::against_indexes): their settings
// checked against the run's (or taken for it), and each document's best match in them.
#ifndef NEARDUP_DEDUP_AGAINST_INDEXES_H_
#define NEARDUP_DEDUP_AGAINST_INDEXES_H_

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "neardup/dedup.h"
#include "neardup/id_table.h"
#include "neardup/index_file.h"
#include "neardup/method.h"
#include "neardup/status.h"

namespace neardup::dedup_internal {

// A document's nearest document in one of the indexes.
struct IndexMatch {
  uint32_t document = UINT32_MAX;  // UINT32_MAX: none
  uint32_t index = 0;              // which of DedupOptions::against_indexes
  uint64_t id = 0;                 // the numeric id in that index (its INDEX.ids may name it)
  double score = 0;                // Jaccard (jaccard) or Hamming distance
  bool jaccard = false;            // a signature index (true) or a fingerprint index (false)
};

// The method of the run, settled against the indexes' headers (read, not their sections):
//   - against_settings false: options.similarity, resolved; an index recording other settings is
//     refused with InvalidArgument naming the difference. An index that records none (format
//     version 1, or `neardup index build` of fingerprints) is accepted with a warning appended to
//     *warnings: its fingerprints are matched within k bits, unchecked.
//   - against_settings true: the settings every index records (they must all record the same ones;
//     InvalidArgument naming the difference, or the index that records none).
// Errors of ReadIndexFileInfo as they come.
Result<MethodOptions> SettleMethod(const DedupOptions& options, std::vector<std::string>* warnings);

// What the matching reads of the run's documents: document d's fingerprint, and for the accurate
// method its sketch and band keys (d * sketch_bytes, d * bands).
struct DocumentSignatures {
  std::span<const uint64_t> fingerprints;
  std::span<const uint8_t> sketches;
  std::span<const uint32_t> band_keys;
  size_t sketch_bytes = 0;
  size_t bands = 0;
  std::function<bool(uint32_t)> is_empty;  // documents without features are never matched
};

// Matches every document against index number `index` at `path` and keeps in (*best)[d] the better
// of its match there and what *best already holds (a higher Jaccard, a smaller distance; between
// the two kinds, the earlier index). A fingerprint index is matched within method.k bits, a
// signature index by the accurate method's rule (an OnlineIndex of its signatures). *names
// receives the index's INDEX.ids (empty when it has none). Errors of the loaders, naming the path.
Status MatchIndex(const std::string& path, uint32_t index, const DocumentSigner& signer,
                  const DocumentSignatures& documents, int threads, std::vector<IndexMatch>* best,
                  IdTable* names);

}  // namespace neardup::dedup_internal

#endif  // NEARDUP_DEDUP_AGAINST_INDEXES_H_
