// Hamming distance between 64-bit fingerprints, and exhaustive scans (the exact reference every
// index is tested against, and the fastest way to search a small set).
//
// Scans use the best SIMD path of the CPU (neardup/cpu.h): AVX-512 VPOPCNTDQ, AVX2 or portable C++.
#ifndef NEARDUP_HAMMING_H_
#define NEARDUP_HAMMING_H_

#include <bit>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace neardup {

inline int HammingDistance(uint64_t a, uint64_t b) { return std::popcount(a ^ b); }

// Appends to *out, in ascending order, every index i with HammingDistance(codes[i], query) <= k.
// k < 0 matches nothing; k >= 64 matches everything.
void FindWithin(std::span<const uint64_t> codes, uint64_t query, int k, std::vector<uint32_t>* out);

// The same for many queries: (*out)[q] receives the matches of queries[q]. Reads each block of
// codes once for a group of queries, so it is several times faster than one FindWithin per query.
void FindWithinBatch(std::span<const uint64_t> codes, std::span<const uint64_t> queries, int k,
                     std::vector<std::vector<uint32_t>>* out);

// Number of codes within distance k of query.
size_t CountWithin(std::span<const uint64_t> codes, uint64_t query, int k);

}  // namespace neardup

#endif  // NEARDUP_HAMMING_H_
