// The outputs of the dedup job, one writer a function: the duplicates, clusters and pairs from the
// decisions (decisions.h), the saved index, and pass 2, the kept lines. Each writer fills the
// buffer of its OutputFile, which the job commits with the others, last.
#ifndef NEARDUP_DEDUP_WRITERS_H_
#define NEARDUP_DEDUP_WRITERS_H_

#include <atomic>
#include <cstdint>
#include <vector>

#include "dedup/decisions.h"
#include "dedup/documents.h"
#include "neardup/dedup.h"
#include "neardup/output.h"
#include "neardup/status.h"

namespace neardup::dedup_internal {

// The bytes the duplicates file may hold the kept documents' sketches in: a quarter of the memory
// limit.
uint64_t KeptSketchBytes(const JobSettings& settings);

// Counts report->kept and report->duplicates (documents without features that are not kept are
// neither) and, unless `out` is null, writes a line per duplicate in input order: its id, the id
// it duplicates (the kept document of its cluster, or its match in an index, named by the index's
// INDEX.ids when it has them) and their distance (kSimhash) or estimated Jaccard (kAccurate).
// Errors of the output. With the sketches spilled, the kept documents' sketches are read first and
// held while they fit in KeptSketchBytes(settings) (a quarter of the memory limit: 1.7 GB for the
// 12.9M kept documents of 100M), else read at random through a small cache. The lines are made on
// settings.threads threads (one through the cache), 65,536 documents at a time, and written in
// order.
Status WriteDuplicates(const DocumentTable& table, const IndexMatches& index_matches,
                       const Grouping& grouping, const Clusters& clusters,
                       const Selection& selection, const JobSettings& settings, OutputFile* out,
                       DedupReport* report);

// Writes a JSON line per cluster of two documents or more to *out, in order of their first member:
// the kept document's id, the size, and every member's id in input order. Errors of the output.
Status WriteClusters(const DocumentTable& table, const Grouping& grouping, const Clusters& clusters,
                     const Selection& selection, OutputFile* out);

// Writes a line per near-duplicate pair of documents to *out: the two ids (the earlier first) and
// their distance (kSimhash) or Jaccard (kAccurate: jaccards[i] for pairs[i], the value that decided
// it). The pairs within a group come first, group by group, then those of `pairs` in order. Errors
// of the output, or Cancelled.
Status WritePairs(const DocumentTable& table, const Grouping& grouping,
                  const std::vector<Pair>& pairs, const std::vector<float>& jaccards,
                  const JobSettings& settings, OutputFile* out);

// Saves to *index_out an index of the kept documents with features, numbered 0, 1, 2... in input
// order (the accurate method's signatures, or the SimHash method's fingerprints in permuted
// tables), and their ids to *ids_out. Needs grouping.band_keys for kAccurate. Errors of the index
// build and of the outputs.
Status SaveIndex(const DocumentTable& table, const Grouping& grouping,
                 const std::vector<bool>& kept, const JobSettings& settings, OutputFile* index_out,
                 OutputFile* ids_out);

// Pass 2: copies the kept documents' lines from `files` to *out, byte for byte (line ends
// included), in input order. *documents_done and *bytes_read follow its progress. Internal when an
// input no longer holds the documents of pass 1; errors of the reads and of the output; Cancelled.
Status WriteKept(const std::vector<InputFile>& files, const DocumentTable& table,
                 const std::vector<bool>& kept, const JobSettings& settings,
                 std::atomic<uint64_t>* documents_done, std::atomic<uint64_t>* bytes_read,
                 OutputFile* out);

}  // namespace neardup::dedup_internal

#endif  // NEARDUP_DEDUP_WRITERS_H_
