// Internal SIMD kernels with run-time dispatch (neardup/cpu.h). Every level gives identical
// results.
#ifndef NEARDUP_SIMHASH_KERNELS_H_
#define NEARDUP_SIMHASH_KERNELS_H_

#include <cstddef>
#include <cstdint>

namespace neardup::simhash_internal {

// XXH3-64 with seed 0 (HashFeature) of the `length` bytes at p, for lengths 4 to 8: the xxHash
// specification's len_4to8 case written out, with kXxh3Bitflip4To8 = bytes 8..15 XOR bytes 16..23
// of XXH3's default secret (tests compare it with XXH3_64bits).
inline constexpr uint64_t kXxh3Bitflip4To8 = 0xc73ab174c5ecd5a2ULL;
inline constexpr uint64_t kXxh3Prime4To8 = 0x9FB21C651E98DF25ULL;

inline uint64_t Xxh3Of4To8(const char* p, size_t length) {
  auto load32 = [](const char* q) {
    const auto* b = reinterpret_cast<const unsigned char*>(q);
    return uint32_t{b[0]} | uint32_t{b[1]} << 8 | uint32_t{b[2]} << 16 | uint32_t{b[3]} << 24;
  };
  auto rotate = [](uint64_t x, int r) { return (x << r) | (x >> (64 - r)); };
  uint64_t h = (load32(p + length - 4) + (uint64_t{load32(p)} << 32)) ^ kXxh3Bitflip4To8;
  h ^= rotate(h, 49) ^ rotate(h, 24);
  h *= kXxh3Prime4To8;
  h ^= (h >> 35) + length;
  h *= kXxh3Prime4To8;
  return h ^ (h >> 28);
}

// hashes[j] = Xxh3Of4To8(text + j, length) for j < count: the hashes of every `length`-byte slice
// of text[0, count + length - 1), length 4..8.
void HashSlices4To8(const char* text, size_t count, size_t length, uint64_t* hashes);

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
