// SIMD scans of 32-bit code fragments (the tables of a PermutedTableIndex hold 32 bits of each
// permuted fingerprint). Dispatched at run time like neardup/cpu.h says; every level gives
// identical results.
#ifndef NEARDUP_INDEX_SCAN_KERNELS_H_
#define NEARDUP_INDEX_SCAN_KERNELS_H_

#include <cstddef>
#include <cstdint>

namespace neardup::index_internal {

// masks[i / 64] bit (i % 64) = 1 iff popcount(fragments[i] ^ query) <= k, for i < n; k in 0..31.
// masks must hold (n + 63) / 64 words; unused high bits of the last word are 0.
void FragmentMasks(const uint32_t* fragments, size_t n, uint32_t query, int k, uint64_t* masks);

}  // namespace neardup::index_internal

#endif  // NEARDUP_INDEX_SCAN_KERNELS_H_
