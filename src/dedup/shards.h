// Sharded dedup (DedupOptions::shard_count, merge_parts): a shard's work after pass 1 (store its
// signatures in the shared index, wait for the other shards, query, write its part), and the
// merge's reading of the parts back into the one-run table, signatures and pairs. The part format
// is doc/dedup.md's "Shard parts".
#ifndef NEARDUP_DEDUP_SHARDS_H_
#define NEARDUP_DEDUP_SHARDS_H_

#include <cstdint>
#include <utility>
#include <vector>

#include "dedup/decisions.h"
#include "dedup/documents.h"
#include "neardup/join.h"
#include "neardup/output.h"
#include "neardup/sketch.h"
#include "neardup/status.h"

namespace neardup::dedup_internal {

// What ties a shard's part to its job: the settings, the inputs (names and sizes) and every option
// that decides which lines are documents and which is kept.
std::string ShardJobKey(const std::vector<InputFile>& files, const JobSettings& settings);

// The shard's work once pass 1 has read and signed its share (table.ordinals): opens the index at
// options.store, checks that it is empty, waits for every shard, inserts, waits again, queries its
// documents and writes the part to `out`. Errors of the index (naming its location), Unavailable
// when the other shards do not come within options.shard_wait_seconds, FailedPrecondition for an
// index that already holds documents.
Status RunShard(const std::vector<InputFile>& files, const DocumentTable& table,
                const Signatures& signatures, const JobSettings& settings, OutputFile* out,
                DedupReport* report);

// The merge: reads every part of options.merge_parts into the table and signatures a single run
// over `files` would have made (documents in input order), and the pairs the shards found.
// InvalidArgument naming the part for a missing or repeated shard or a part of another job;
// Corruption for a damaged part; NotFound / IOError naming it.
Status ReadShardParts(const std::vector<InputFile>& files, const JobSettings& settings,
                      DocumentTable* table, Signatures* signatures,
                      std::vector<OrdinalPair>* pairs);

// A pair of groups with the estimate a shard found for its documents.
struct GroupPair {
  uint32_t first = 0;
  uint32_t second = 0;
  double score = 0;
};

// The pairs between groups that the join of one run would find, from the documents' pairs, in
// ascending (first, second) order, each once.
std::vector<GroupPair> GroupPairsOf(const std::vector<OrdinalPair>& pairs,
                                    const DocumentTable& table, const Grouping& grouping);

}  // namespace neardup::dedup_internal

#endif  // NEARDUP_DEDUP_SHARDS_H_
