// The decisions of the dedup job between pass 1 and the outputs, one stage a function: the checks
// of fields and ids, the matches in the --against indexes, the groups of identical signatures, the
// join and its clusters, and the kept document of every cluster. Each stage reads what its
// parameters name and returns what it makes; RunDedup (dedup.cc) calls them in order and the
// writers (writers.h) read their results.
#ifndef NEARDUP_DEDUP_DECISIONS_H_
#define NEARDUP_DEDUP_DECISIONS_H_

#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "dedup/against_indexes.h"
#include "dedup/documents.h"
#include "dedup/id_table.h"
#include "dedup/signature_groups.h"
#include "dedup/spill.h"
#include "neardup/dedup.h"
#include "neardup/join.h"
#include "neardup/method.h"
#include "neardup/sketch.h"
#include "neardup/status.h"

namespace neardup::dedup_internal {

inline constexpr uint32_t kNoDocument = UINT32_MAX;

// What every stage may read: settled before the first document is read, never changed after.
struct JobSettings {
  const DedupOptions& options;
  MethodOptions method;  // options.similarity, or the --against indexes' own (against_settings)
  const DocumentSigner& signer;  // of `method`
  int threads = 1;               // resolved: never 0
  uint64_t memory_limit = 0;     // options.memory_limit, resolved: never 0

  bool accurate() const { return method.method == DedupMethod::kAccurate; }
  // Cancelled("interrupted") once options.cancel is set, else OK.
  Status Cancelled() const;
};

// A field named in the options that no document has is a mistake the user should hear of
// (InvalidArgument); so are ids that repeat under options.unique_ids. Otherwise repeated ids are
// counted in report->duplicate_ids with a warning in report->warnings (outputs name documents by
// id). Cancelled once the job is.
Status CheckFieldsAndIds(const DocumentTable& table, const JobSettings& settings,
                         DedupReport* report);

// The documents' best matches in the --against indexes.
struct IndexMatches {
  std::vector<IndexMatch> matches;  // one per matched document, by document ascending
  std::vector<IdTable> names;       // per index, in order: its INDEX.ids (empty when it has none)
};

// Matches every document with features against every index of options.against_indexes, in order
// (no index: an empty result). Errors of MatchIndex, or Cancelled between indexes.
Result<IndexMatches> MatchIndexes(const Signatures& signatures, const DocumentTable& table,
                                  const JobSettings& settings);

// Groups of documents joined as one: identical fingerprints (kSimhash) or identical signatures
// (kAccurate), numbered in order of their first document. The documents left out of the join (the
// near-duplicates of an index, and the documents without features) are in no group.
struct Grouping {
  std::vector<uint32_t> group_of;      // document -> group (kNoGroup: left out)
  std::vector<uint64_t> fingerprints;  // group -> fingerprint
  std::vector<uint32_t> first_member;  // kAccurate: group -> its first document
  // kAccurate in memory: group g's sketch at g * signer.sketch_bytes().
  std::vector<uint8_t> sketches;
  // kAccurate in memory: group g's band keys at g * signer.bands(). The join releases them unless
  // an index is saved.
  std::vector<uint32_t> band_keys;
  // kAccurate on disk (Signatures::spill): the sketches by document (group g's is its first
  // member's) and the band keys, in the job's spill files.
  const SketchFile* sketch_file = nullptr;
  const BandKeyFiles* band_files = nullptr;

  size_t size() const { return fingerprints.size(); }
  // The fingerprint of a document in a group.
  uint64_t FingerprintOf(uint32_t d) const { return fingerprints[group_of[d]]; }
  // The documents of each group.
  std::vector<uint32_t> GroupSizes() const;
  // Group g's sketch (kAccurate): in `sketches`, or read from the spill file into *buffer.
  const uint8_t* SketchOf(uint32_t g, size_t sketch_bytes, std::vector<uint8_t>* buffer) const;
  // The estimated Jaccard of the sketches of groups a and b (kAccurate).
  double Jaccard(const Sketcher& sketcher, uint32_t a, uint32_t b) const;
};

// Takes the documents' signatures (moved in: no per-document array is copied) and groups the
// documents that are neither in `index_matches` nor without features, compacting the signatures
// in place to one per group. Spilled signatures (Signatures::spill) are grouped by their
// signature hashes, each member checked against its group's first by fingerprint and sketch. The
// result does not depend on settings.threads. Cancelled once the job is (the checks of spilled
// members stop within a block of them).
Result<Grouping> GroupDocuments(Signatures signatures, const IndexMatches& index_matches,
                                const DocumentTable& table, const JobSettings& settings);

// What the join found.
struct Clusters {
  // Near-duplicate pairs of groups, each once, with the Hamming distance of their fingerprints.
  std::vector<Pair> pairs;
  // kAccurate with every pair: pairs[i]'s Jaccard as decided: the sketches' estimate, or the exact
  // similarity of a boundary pair (empty after the linear join: no pairs file is written).
  std::vector<float> jaccards;
  std::vector<uint32_t> component;  // group -> the root group of its cluster
  // The linear join keeps no pairs (clustering needs only the components): the number of pairs of
  // documents its pairs of groups stand for, for the report.
  uint64_t document_pairs = 0;
};

// The memory ExactJaccards may give the feature sets it holds at once: a sixteenth of the memory
// limit, at least kMinBoundaryPassBytes (a smaller pass would re-read compressed inputs once per
// few documents) and at most the bound of the boundary decision's work (256 MB).
inline constexpr uint64_t kMinBoundaryPassBytes = uint64_t{16} << 20;
uint64_t BoundaryPassBytes(const JobSettings& settings);

// The exact Jaccard similarity of each pair of documents (first, second), from their texts.
using ExactJaccardFunction =
    std::function<Result<std::vector<double>>(const std::vector<std::pair<uint32_t, uint32_t>>&)>;

// Joins the groups (kSimhash: fingerprints within method.k bits; kAccurate: band keys verified by
// the sketches at method.threshold) and clusters the pairs. kAccurate: every pair when options ask
// for them (FindSimilarPairs), else the linear join (dedup/linear_join.h); a pair whose estimate is
// within the boundary margin of the threshold (options.boundary_margin) is decided by `exact`
// (all of them with every pair, else those whose groups the other pairs leave apart). It records
// report->candidates, pairs_complete and the boundary counts, and releases grouping->band_keys
// once they are joined unless options.save_index asks for them (nothing else of *grouping
// changes). Errors of the join and of `exact`.
Result<Clusters> JoinAndCluster(const JobSettings& settings, const ExactJaccardFunction& exact,
                                Grouping* grouping, DedupReport* report);

// A pair of documents a shard found, by their input-line ordinals (first < second), with the
// estimated Jaccard similarity of their sketches (kAccurate; 0 for SimHash).
struct OrdinalPair {
  uint64_t first = 0;
  uint64_t second = 0;
  double score = 0;  // as computed: the join compares the estimate, not a rounded copy

  friend bool operator<(const OrdinalPair& x, const OrdinalPair& y) {
    return x.first != y.first ? x.first < y.first : x.second < y.second;
  }
  friend bool operator==(const OrdinalPair& x, const OrdinalPair& y) {
    return x.first == y.first && x.second == y.second;
  }
};

// The lowest estimate a sharded job's shards ask their index for (kAccurate): the threshold less
// the widest boundary margin of any pair the join could hand to the boundary decision (the smallest
// sets outside exact form that the size bound lets through); the threshold without the boundary
// decision.
double ShardQueryFloor(const JobSettings& settings);

// JoinAndCluster's result from the pairs of a sharded job's parts (dedup/shards.h): the pairs
// between groups the all-pairs join would find, each decided by the join's rule on its estimate
// (kAccurate: those near the threshold by their exact Jaccard, through `exact`, as
// options.boundary_sigmas asks), and their clusters. Records report->candidates (the pairs read),
// pairs_complete (true: the shards verify every pair) and the boundary counts.
Result<Clusters> ClusterShardPairs(const JobSettings& settings, const ExactJaccardFunction& exact,
                                   const std::vector<OrdinalPair>& pairs,
                                   const DocumentTable& table, const Grouping& grouping,
                                   DedupReport* report);

// Records in *report the pairs among documents (across groups, and within groups), the clusters of
// two documents or more, and the histogram of their sizes.
void CountPairsAndClusters(const Grouping& grouping, const Clusters& clusters, DedupReport* report);

// The documents kept.
struct Selection {
  std::vector<uint32_t> kept_of;  // cluster root group -> its kept document (kNoDocument: no root)
  // Document -> kept: one per cluster, and under EmptyPolicy::kKeep the documents without features.
  std::vector<bool> kept;
};

// Chooses the kept document of every cluster by options.keep (ties: the earlier document).
Selection ChooseKept(const Grouping& grouping, const Clusters& clusters, const DocumentTable& table,
                     const DedupOptions& options);

}  // namespace neardup::dedup_internal

#endif  // NEARDUP_DEDUP_DECISIONS_H_
