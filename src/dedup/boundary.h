// The boundary decision of the accurate method: a candidate pair whose sketch estimate falls within
// BoundaryMargin() of the threshold is decided by the exact Jaccard similarity of the two
// documents' feature sets, which ExactJaccards() computes from the inputs, read again for just
// those documents (doc/candidates.md).
#ifndef NEARDUP_DEDUP_BOUNDARY_H_
#define NEARDUP_DEDUP_BOUNDARY_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "dedup/decisions.h"
#include "dedup/documents.h"
#include "neardup/sketch.h"
#include "neardup/status.h"

namespace neardup::dedup_internal {

// z standard deviations of the sketch's Jaccard estimate at J = threshold: with B bins of b bits
// each bin agrees with probability p = t + (1 - t) 2^-b, and the estimate's standard deviation is
// sqrt(p (1 - p) / B) / (1 - 2^-b). 0.0563 at the defaults (1024 x 1 bit, t = 0.8, z = 3); 0 for a
// threshold >= 1 (only identical sets reach it, and their sketches are identical).
double BoundaryMargin(const SketchOptions& sketch, double threshold, double z = 3.0);

// The margin for a pair of documents of features_a and features_b distinct features (the count at
// the start of each stored sketch). Below about B features in their union, the densified sketch
// holds fewer independent bins than B and the estimate spreads more (at 100 features 2.3 times
// the margin above): the formula above with B replaced by min(B, union), the union taken at J = t,
// (features_a + features_b) / (1 + t). Never below BoundaryMargin(sketch, threshold, z). Pairs of
// documents in exact form (both at most Sketcher::exact_capacity() features) need no margin: their
// estimate is exact.
double PairBoundaryMargin(const SketchOptions& sketch, double threshold, uint64_t features_a,
                          uint64_t features_b, double z = 3.0);

// Sorts distinct 64-bit hashes (a document's feature hashes), using `scratch` and `starts` as
// room. Linear for hashes about uniform, such as feature hashes: about 5 times faster than
// std::sort at 250 of them. Sets whose top bits crowd (a crafted set could) are left to std::sort.
void SortHashes(std::vector<uint64_t>* hashes, std::vector<uint64_t>* scratch,
                std::vector<uint32_t>* starts);

// Two documents, by their numbers in the job's document order (the DocumentTable's).
struct DocumentPair {
  uint32_t first = 0;
  uint32_t second = 0;
};

// For each pair, in order, the exact Jaccard similarity of the two documents' sets of distinct
// feature hashes: the features the signer sketches (settings.signer's fingerprinter, with
// FeatureWeighting::kDistinct), 1 for two empty sets. The documents are read again from `files`
// (the inputs of pass 1, which built `table`): just their lines when the table records where they
// are (DocumentLinesAt), else the inputs in order; only those named in `pairs` are parsed and
// hashed, on settings.threads threads.
//
// Memory: the feature sets held at once take at most memory_budget_bytes (8 bytes a feature), plus
// a batch of at most 1 MB of text and its features while it is hashed. The first pass over the
// inputs keeps the sets that fit and counts the others; when some pairs are left, each further
// pass takes the pairs whose sets fit together. A pair whose two sets alone exceed the budget gets
// a pass of its own. A pass in order stops at the end of the file holding its last document.
//
// Errors: InvalidArgument for a document number outside the table or a signer without distinct
// features (the SimHash method); Internal naming "path:line" when the inputs no longer hold pass
// 1's documents (a file shorter or longer, a document that no longer parses or signs); errors of
// reading the inputs; Cancelled between batches.
Result<std::vector<double>> ExactJaccards(const std::vector<InputFile>& files,
                                          const DocumentTable& table, const JobSettings& settings,
                                          std::span<const DocumentPair> pairs,
                                          size_t memory_budget_bytes);

}  // namespace neardup::dedup_internal

#endif  // NEARDUP_DEDUP_BOUNDARY_H_
