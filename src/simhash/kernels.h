// Internal SIMD kernels with run-time dispatch (neardup/cpu.h). Every level gives identical
// results.
#ifndef NEARDUP_SIMHASH_KERNELS_H_
#define NEARDUP_SIMHASH_KERNELS_H_

#include <cstddef>
#include <cstdint>

namespace neardup::simhash_internal {

// ones[j] += number of hashes with bit j set.
void FoldUnit(const uint64_t* hashes, size_t n, uint64_t ones[64]);

// sums[j] += (bit j of hashes[i] ? +weights[i] : -weights[i]) for i = 0..n-1 in order (each lane
// sums in feature order, so every level rounds identically).
void FoldWeighted(const uint64_t* hashes, const double* weights, size_t n, double sums[64]);

// masks[i / 64] bit (i % 64) = 1 iff popcount(codes[i] ^ query) <= k, for i < n; k in 0..63.
// masks must hold (n + 63) / 64 words; unused high bits of the last word are 0.
void HammingMasks(const uint64_t* codes, size_t n, uint64_t query, int k, uint64_t* masks);

}  // namespace neardup::simhash_internal

#endif  // NEARDUP_SIMHASH_KERNELS_H_
