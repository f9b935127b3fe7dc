// Groups of documents with identical fingerprints, found in bounded memory (the SimHash method of
// the dedup job joins each distinct fingerprint once).
#ifndef NEARDUP_DEDUP_FINGERPRINT_GROUPS_H_
#define NEARDUP_DEDUP_FINGERPRINT_GROUPS_H_

#include <cstdint>
#include <vector>

namespace neardup::dedup_internal {

// On entry (*fingerprints)[d] is document d's fingerprint and (*group_of)[d] is kNoGroup for
// documents left out (any other value for the rest). On return (*group_of)[d] is d's group, groups
// numbered in order of their first document, and *fingerprints holds one entry per group (compacted
// in place). Besides the two arrays it needs at most about 4 bytes per document of scratch: the
// documents are sorted by fingerprint a key range at a time, each range scattered by its top 16
// bits and every bucket sorted in cache on `threads` threads. The result does not depend on
// `threads`.
void GroupIdenticalFingerprints(std::vector<uint64_t>* fingerprints,
                                std::vector<uint32_t>* group_of, int threads);

}  // namespace neardup::dedup_internal

#endif  // NEARDUP_DEDUP_FINGERPRINT_GROUPS_H_
