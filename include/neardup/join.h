// All-pairs similarity join of a set of fingerprints, and clustering of the pairs it finds.
//
// FindAllPairs gives every pair of positions (i, j), i < j, whose fingerprints are within k bits,
// each pair exactly once. It uses the same pigeonhole designs as the permuted-table index: every
// table sorts the fingerprints by its key, pairs are compared only inside runs of equal keys, and a
// pair is reported only by the first table whose key both fingerprints share.
//
// Memory: the join works on one table at a time with all its threads, so its transient memory does
// not grow with the thread count: 8 bytes per fingerprint (one shared array of entries), about
// 0.3 MB per thread, and 12 bytes per pair found (twice that while the pairs are gathered).
// Measured peak at 10M fingerprints with 500k pairs: 9.3 bytes per fingerprint on 1 thread,
// 9.9 on 2 (input not counted).
//
// Thread safety: the functions keep no state; they may be called from several threads at once.
#ifndef NEARDUP_JOIN_H_
#define NEARDUP_JOIN_H_

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "neardup/index.h"
#include "neardup/sketch.h"
#include "neardup/status.h"

namespace neardup {

// Two positions in the input span, first < second, and their Hamming distance.
struct Pair {
  uint32_t first = 0;
  uint32_t second = 0;
  int distance = 0;

  friend bool operator==(const Pair&, const Pair&) = default;
};

struct JoinOptions {
  int threads = 0;  // 0: one per core
  // The design; empty block_bits: chosen for the join from the input size and k.
  TableDesign design{{}, 1};
};

// Every pair within k, in ascending (first, second) order, whatever the thread count.
// InvalidArgument for k outside 0..7 (or above the given design's exact k), or more than 2^32 - 1
// fingerprints. Memory: see above.
Result<std::vector<Pair>> FindAllPairs(std::span<const uint64_t> fingerprints, int k,
                                       const JoinOptions& options = {});

// The same pairs in the same order, handed to on_pair one at a time (from the calling thread). A
// non-OK status from on_pair stops the join and is returned.
Status ForEachPair(std::span<const uint64_t> fingerprints, int k, const JoinOptions& options,
                   const std::function<Status(const Pair&)>& on_pair);

// Connected components of the graph whose edges are `pairs` over `count` items. Returns, for every
// item, the position of its cluster's representative (an item alone is its own representative).
//
// The representative is the item with the highest priority in its cluster, ties going to the lowest
// position; with no priorities (empty span) it is the first item seen, the lowest position.
// InvalidArgument if a pair names a position >= count or priorities is neither empty nor of size
// count.
Result<std::vector<uint32_t>> ClusterPairs(uint32_t count, std::span<const Pair> pairs,
                                           std::span<const int64_t> priorities = {});
// ClusterPairs for the pairs of the sketch join (FindSimilarPairs), without priorities.
Result<std::vector<uint32_t>> ClusterSimilarPairs(uint32_t count,
                                                  std::span<const SimilarPair> pairs);

}  // namespace neardup

#endif  // NEARDUP_JOIN_H_
