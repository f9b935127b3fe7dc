// The hot loop of the sketch (sketcher.cc) in portable, AVX2 and AVX-512 versions, chosen by
// ActiveSimdLevel() (neardup/cpu.h). All versions give identical results.
#ifndef NEARDUP_SKETCH_KERNELS_H_
#define NEARDUP_SKETCH_KERNELS_H_

#include <cstddef>
#include <cstdint>

namespace neardup::sketch_internal {

// Densification and remix (doc/fingerprint.md section 9, step 3) of n bins (a multiple of 8): on
// entry values[i] is bin i's minimum or UINT64_MAX for an empty bin, and wrap = m_f + f + n for the
// first non-empty bin f (the wrap-around). On return values[i] = Remix(m_j + (j - i)) for the
// nearest non-empty bin j at or after i (cyclically, j taken past n). With low_bits not null, also
// bit i of the little-endian bit stream low_bits (n / 8 bytes, bit i = bit i % 8 of byte i / 8) =
// the low bit of the new values[i]: the payload of a sketch of 1-bit bins.
void DensifyAndRemix(uint64_t* values, size_t n, uint64_t wrap, uint8_t* low_bits);

// remixed[i] = Remix(hashes[i] >> shift) for i < n (shift 0..63): the values of features entering
// the sketch by their top bits.
void RemixShifted(const uint64_t* hashes, size_t n, int shift, uint64_t* remixed);

// The number of bits that differ between a and b, two streams of `bytes` bytes (a multiple of 8):
// the mismatching bins of two payloads of 1-bit bins. Every version reads the whole streams (no
// early exit: its branch mispredicts).
using DifferingBitsFn = uint32_t (*)(const uint8_t* a, const uint8_t* b, size_t bytes);

// The version for ActiveSimdLevel(), chosen once by callers that compare many pairs.
DifferingBitsFn ChooseDifferingBits();

// One stream against several: out[i] = DifferingBits(a, base + index[i] * stride, bytes) for
// i < count. A join compares a document with a window of its neighbours, stored one after another
// `stride` bytes apart: one call, a's bytes loaded once.
using DifferingBitsManyFn = void (*)(const uint8_t* a, const uint8_t* base, size_t stride,
                                     const uint32_t* index, size_t count, size_t bytes,
                                     uint32_t* out);

DifferingBitsManyFn ChooseDifferingBitsMany();

}  // namespace neardup::sketch_internal

#endif  // NEARDUP_SKETCH_KERNELS_H_
