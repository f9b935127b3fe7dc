// Groups of documents with identical signatures (fingerprint, sketch and band keys), so that exact
// duplicates are joined once (the accurate method of the dedup job).
#ifndef NEARDUP_DEDUP_SIGNATURE_GROUPS_H_
#define NEARDUP_DEDUP_SIGNATURE_GROUPS_H_

#include <cstdint>
#include <vector>

#include "dedup/documents.h"

namespace neardup::dedup_internal {

inline constexpr uint32_t kNoGroup = UINT32_MAX;

struct SignatureGroups {
  std::vector<uint32_t> group_of;      // document -> group (kNoGroup: left out)
  std::vector<uint32_t> first_member;  // group -> its first document; ascending
};

// Groups the documents that are not `left_out` (ascending document numbers) by identical signature,
// numbering the groups in order of their first member, and compacts signatures->sketches and
// signatures->band_keys in place to one entry per group (group g's at position g).
// signatures->fingerprints keeps one entry per document.
SignatureGroups GroupIdenticalSignatures(const std::vector<uint32_t>& left_out, size_t sketch_bytes,
                                         size_t bands, Signatures* signatures);

}  // namespace neardup::dedup_internal

#endif  // NEARDUP_DEDUP_SIGNATURE_GROUPS_H_
