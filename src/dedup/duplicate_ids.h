// Repeated ids among the documents of one run, found without a hash table of the ids.
#ifndef NEARDUP_DEDUP_DUPLICATE_IDS_H_
#define NEARDUP_DEDUP_DUPLICATE_IDS_H_

#include <cstddef>
#include <cstdint>

#include "dedup/documents.h"

namespace neardup::dedup_internal {

struct DuplicateIds {
  uint64_t count = 0;  // documents whose id an earlier document has
  size_t first = 0;    // with count > 0: the first such document in input order...
  size_t earlier = 0;  // ...and the first document with the same id
};

// Sorts the 64-bit hashes of every id (8 bytes per document, released on return), then compares the
// ids of the documents whose hashes repeat, so that hash collisions are never counted. Runs only
// when some document has an id field: documents named by their lines cannot repeat.
DuplicateIds FindDuplicateIds(const DocumentTable& table);

}  // namespace neardup::dedup_internal

#endif  // NEARDUP_DEDUP_DUPLICATE_IDS_H_
