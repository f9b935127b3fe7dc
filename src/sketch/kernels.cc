// The SIMD versions are compiled for their instruction sets with function attributes, like those of
// src/simhash/kernels.cc, and run only when the CPU supports them.
#include "sketch/kernels.h"

#include <array>
#include <bit>
#include <cstring>

#include "neardup/cpu.h"
#include "sketch/minhash.h"

#if defined(__x86_64__)
#include <immintrin.h>
#define NEARDUP_X86 1
#endif

namespace neardup::sketch_internal {
namespace {

[[maybe_unused]] constexpr uint64_t kMul1 = 0xbf58476d1ce4e5b9ULL;
[[maybe_unused]] constexpr uint64_t kMul2 = 0x94d049bb133111ebULL;

// values[i] = Remix(values[i]), and the low bits packed into low_bits (when not null).
void RemixAllPortable(uint64_t* values, size_t n, uint8_t* low_bits) {
  for (size_t i = 0; i < n; i += 8) {
    uint8_t byte = 0;
    for (size_t k = 0; k < 8; ++k) {
      values[i + k] = Remix(values[i + k]);
      byte |= static_cast<uint8_t>((values[i + k] & 1) << k);
    }
    if (low_bits != nullptr) low_bits[i / 8] = byte;
  }
}

void RemixShiftedPortable(const uint64_t* hashes, size_t n, int shift, uint64_t* remixed) {
  for (size_t i = 0; i < n; ++i) remixed[i] = Remix(hashes[i] >> shift);
}

// Without a POPCNT instruction in the target, std::popcount is a bit-twiddling sequence.
inline uint32_t DifferingBitsWords(const uint8_t* a, const uint8_t* b, size_t bytes) {
  uint32_t differ = 0;
  for (size_t i = 0; i < bytes; i += 8) {
    uint64_t x, y;
    std::memcpy(&x, a + i, 8);
    std::memcpy(&y, b + i, 8);
    differ += static_cast<uint32_t>(std::popcount(x ^ y));
  }
  return differ;
}

uint32_t DifferingBitsPortable(const uint8_t* a, const uint8_t* b, size_t bytes) {
  return DifferingBitsWords(a, b, bytes);
}

inline void DifferingBitsManyWords(const uint8_t* a, const uint8_t* base, size_t stride,
                                   const uint32_t* index, size_t count, size_t bytes,
                                   uint32_t* out) {
  for (size_t i = 0; i < count; ++i) {
    out[i] = DifferingBitsWords(a, base + uint64_t{index[i]} * stride, bytes);
  }
}

void DifferingBitsManyPortable(const uint8_t* a, const uint8_t* base, size_t stride,
                               const uint32_t* index, size_t count, size_t bytes, uint32_t* out) {
  DifferingBitsManyWords(a, base, stride, index, count, bytes, out);
}

// values[i] = m_j + j - i (before the remix), from the last bin down; branch-free with masks (GCC
// turns conditional expressions here into a branch that mispredicts: which bins are empty is
// random).
void Densify(uint64_t* values, size_t n, uint64_t wrap) {
  uint64_t carry = wrap;  // m_j + j of the nearest non-empty bin j above
  for (size_t i = n; i-- > 0;) {
    const uint64_t value = values[i];
    const uint64_t filled =
        uint64_t{0} - static_cast<uint64_t>(value != UINT64_MAX);  // all ones or 0
    carry = ((value + i) & filled) | (carry & ~filled);
    values[i] = carry - i;
  }
}

#if NEARDUP_X86

// 64-bit lane products (mod 2^64) from 32-bit multiplies: AVX2 has no 64-bit multiply.
__attribute__((target("avx2"))) inline __m256i Mul64Avx2(__m256i a, __m256i b) {
  const __m256i low = _mm256_mul_epu32(a, b);
  const __m256i cross = _mm256_add_epi64(_mm256_mul_epu32(_mm256_srli_epi64(a, 32), b),
                                         _mm256_mul_epu32(a, _mm256_srli_epi64(b, 32)));
  return _mm256_add_epi64(low, _mm256_slli_epi64(cross, 32));
}

__attribute__((target("avx2"))) void RemixAllAvx2(uint64_t* values, size_t n, uint8_t* low_bits) {
  const __m256i m1 = _mm256_set1_epi64x(static_cast<long long>(kMul1));
  const __m256i m2 = _mm256_set1_epi64x(static_cast<long long>(kMul2));
  for (size_t i = 0; i < n; i += 8) {
    int byte = 0;
    for (size_t half = 0; half < 2; ++half) {
      auto* p = reinterpret_cast<__m256i*>(values + i + 4 * half);
      __m256i x = _mm256_loadu_si256(p);
      x = _mm256_xor_si256(x, _mm256_srli_epi64(x, 30));
      x = Mul64Avx2(x, m1);
      x = _mm256_xor_si256(x, _mm256_srli_epi64(x, 27));
      x = Mul64Avx2(x, m2);
      x = _mm256_xor_si256(x, _mm256_srli_epi64(x, 31));
      _mm256_storeu_si256(p, x);
      byte |= _mm256_movemask_pd(_mm256_castsi256_pd(_mm256_slli_epi64(x, 63))) << (4 * half);
    }
    if (low_bits != nullptr) low_bits[i / 8] = static_cast<uint8_t>(byte);
  }
}

// The splitmix64 finaliser of four lanes.
__attribute__((target("avx2"))) inline __m256i RemixAvx2(__m256i x) {
  x = _mm256_xor_si256(x, _mm256_srli_epi64(x, 30));
  x = Mul64Avx2(x, _mm256_set1_epi64x(static_cast<long long>(kMul1)));
  x = _mm256_xor_si256(x, _mm256_srli_epi64(x, 27));
  x = Mul64Avx2(x, _mm256_set1_epi64x(static_cast<long long>(kMul2)));
  return _mm256_xor_si256(x, _mm256_srli_epi64(x, 31));
}

__attribute__((target("avx2"))) void RemixShiftedAvx2(const uint64_t* hashes, size_t n, int shift,
                                                      uint64_t* remixed) {
  const __m128i count = _mm_cvtsi32_si128(shift);
  size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(hashes + i));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(remixed + i),
                        RemixAvx2(_mm256_srl_epi64(h, count)));
  }
  RemixShiftedPortable(hashes + i, n - i, shift, remixed + i);
}

// kNearest[mask] byte k: the lowest lane j >= k whose bit is set in mask, or 8 (the first lane of a
// second vector) when there is none.
constexpr auto kNearest = [] {
  std::array<uint64_t, 256> table{};
  for (unsigned mask = 0; mask < 256; ++mask) {
    for (unsigned k = 0; k < 8; ++k) {
      unsigned j = k;
      while (j < 8 && !((mask >> j) & 1)) ++j;
      table[mask] |= uint64_t{j} << (8 * k);
    }
  }
  return table;
}();

// GCC 12 reports its own AVX-512 intrinsics' internal undefined values as maybe-uninitialized
// (GCC bug 105593): silenced for this function only. Clang has no such warning and rejects the
// name.
#pragma GCC diagnostic push
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
// Densify and remix 8 bins per step from the top: every lane takes m_j + j of its nearest non-empty
// lane above it in one two-source permutation (indices from a table by the mask of non-empty
// lanes), or the carry from the vector above (the wrap value for the top vector).
__attribute__((target("avx512f,avx512dq"))) void DensifyAndRemixAvx512(uint64_t* values, size_t n,
                                                                       uint64_t wrap,
                                                                       uint8_t* low_bits) {
  constexpr __mmask8 kAll = 0xFF;
  const __m512i m1 = _mm512_set1_epi64(static_cast<long long>(kMul1));
  const __m512i m2 = _mm512_set1_epi64(static_cast<long long>(kMul2));
  const __m512i one = _mm512_set1_epi64(1);
  const __m512i empty = _mm512_set1_epi64(-1);
  const __m512i lanes = _mm512_set_epi64(7, 6, 5, 4, 3, 2, 1, 0);
  __m512i carry = _mm512_set1_epi64(static_cast<long long>(wrap));
  for (size_t i = n; i >= 8;) {
    i -= 8;
    const __m512i minimum = _mm512_loadu_si512(values + i);
    const __m512i index = _mm512_add_epi64(_mm512_set1_epi64(static_cast<long long>(i)), lanes);
    const auto filled = static_cast<unsigned>(_mm512_cmpneq_epu64_mask(minimum, empty));
    const uint64_t nearest = kNearest[filled];
    const __m512i own = _mm512_add_epi64(minimum, index);
    // Lane k takes lane kNearest[filled] byte k of (own, carry): its nearest non-empty lane at or
    // above it, or the carry.
    const __m512i source = _mm512_cvtepu8_epi64(_mm_cvtsi64_si128(static_cast<long long>(nearest)));
    const __m512i c = _mm512_permutex2var_epi64(own, source, carry);
    // The carry for the vector below: this one's lowest non-empty lane everywhere, if it has one.
    // Taken from `own`, not `c`, so that the chain from vector to vector is one blend.
    const __m512i lowest =
        _mm512_permutexvar_epi64(_mm512_set1_epi64(static_cast<long long>(nearest & 0xFF)), own);
    carry = _mm512_mask_mov_epi64(carry, static_cast<__mmask8>(0u - (filled != 0)), lowest);
    __m512i x = _mm512_sub_epi64(c, index);
    x = _mm512_xor_si512(x, _mm512_maskz_srli_epi64(kAll, x, 30));
    x = _mm512_mullo_epi64(x, m1);
    x = _mm512_xor_si512(x, _mm512_maskz_srli_epi64(kAll, x, 27));
    x = _mm512_mullo_epi64(x, m2);
    x = _mm512_xor_si512(x, _mm512_maskz_srli_epi64(kAll, x, 31));
    _mm512_storeu_si512(values + i, x);
    if (low_bits != nullptr) low_bits[i / 8] = static_cast<uint8_t>(_mm512_test_epi64_mask(x, one));
  }
}
__attribute__((target("avx512f,avx512dq"))) void RemixShiftedAvx512(const uint64_t* hashes,
                                                                    size_t n, int shift,
                                                                    uint64_t* remixed) {
  constexpr __mmask8 kAll = 0xFF;
  const __m512i m1 = _mm512_set1_epi64(static_cast<long long>(kMul1));
  const __m512i m2 = _mm512_set1_epi64(static_cast<long long>(kMul2));
  const __m128i count = _mm_cvtsi32_si128(shift);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m512i x = _mm512_srl_epi64(_mm512_loadu_si512(hashes + i), count);
    x = _mm512_xor_si512(x, _mm512_maskz_srli_epi64(kAll, x, 30));
    x = _mm512_mullo_epi64(x, m1);
    x = _mm512_xor_si512(x, _mm512_maskz_srli_epi64(kAll, x, 27));
    x = _mm512_mullo_epi64(x, m2);
    x = _mm512_xor_si512(x, _mm512_maskz_srli_epi64(kAll, x, 31));
    _mm512_storeu_si512(remixed + i, x);
  }
  RemixShiftedPortable(hashes + i, n - i, shift, remixed + i);
}
#pragma GCC diagnostic pop

// Every CPU of the AVX2 level has POPCNT (cpu.h).
__attribute__((target("popcnt"))) uint32_t DifferingBitsPopcnt(const uint8_t* a, const uint8_t* b,
                                                               size_t bytes) {
  return DifferingBitsWords(a, b, bytes);
}

// 64 bytes a step with VPOPCNTQ, the rest by words.
__attribute__((target("avx512f,avx512vpopcntdq,popcnt"))) uint32_t DifferingBitsAvx512(
    const uint8_t* a, const uint8_t* b, size_t bytes) {
  __m512i sum = _mm512_setzero_si512();
  size_t i = 0;
  for (; i + 64 <= bytes; i += 64) {
    const __m512i x = _mm512_xor_si512(_mm512_loadu_si512(a + i), _mm512_loadu_si512(b + i));
    sum = _mm512_add_epi64(sum, _mm512_popcnt_epi64(x));
  }
  // Not _mm512_reduce_add_epi64: GCC 12 reports its internal undefined value as uninitialized.
  alignas(64) uint64_t lanes[8];
  _mm512_store_si512(lanes, sum);
  uint64_t total = 0;
  for (uint64_t lane : lanes) total += lane;
  return static_cast<uint32_t>(total) + DifferingBitsWords(a + i, b + i, bytes - i);
}

__attribute__((target("popcnt"))) void DifferingBitsManyPopcnt(const uint8_t* a,
                                                               const uint8_t* base, size_t stride,
                                                               const uint32_t* index, size_t count,
                                                               size_t bytes, uint32_t* out) {
  DifferingBitsManyWords(a, base, stride, index, count, bytes, out);
}

// The sum of the eight lanes (stored: GCC 12 reports the undefined upper part that
// _mm512_castsi512_si256 and _mm512_reduce_add_epi64 leave as uninitialized).
__attribute__((target("avx512f"))) inline uint64_t SumLanes(__m512i v) {
  alignas(64) uint64_t lanes[8];
  _mm512_store_si512(lanes, v);
  return ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3])) +
         ((lanes[4] + lanes[5]) + (lanes[6] + lanes[7]));
}

// A sketch's payload of 128 bytes (1024 1-bit bins, the default) held in two registers; other
// lengths by DifferingBitsAvx512.
__attribute__((target("avx512f,avx512vpopcntdq,popcnt"))) void DifferingBitsManyAvx512(
    const uint8_t* a, const uint8_t* base, size_t stride, const uint32_t* index, size_t count,
    size_t bytes, uint32_t* out) {
  if (bytes != 128) {
    for (size_t i = 0; i < count; ++i) {
      out[i] = DifferingBitsAvx512(a, base + uint64_t{index[i]} * stride, bytes);
    }
    return;
  }
  const __m512i a0 = _mm512_loadu_si512(a), a1 = _mm512_loadu_si512(a + 64);
  for (size_t i = 0; i < count; ++i) {
    const uint8_t* b = base + uint64_t{index[i]} * stride;
    const __m512i x0 = _mm512_xor_si512(_mm512_loadu_si512(b), a0);
    const __m512i x1 = _mm512_xor_si512(_mm512_loadu_si512(b + 64), a1);
    out[i] = static_cast<uint32_t>(
        SumLanes(_mm512_add_epi64(_mm512_popcnt_epi64(x0), _mm512_popcnt_epi64(x1))));
  }
}

#endif  // NEARDUP_X86

}  // namespace

void DensifyAndRemix(uint64_t* values, size_t n, uint64_t wrap, uint8_t* low_bits) {
#if NEARDUP_X86
  switch (ActiveSimdLevel()) {
    case SimdLevel::kAvx512:
      return DensifyAndRemixAvx512(values, n, wrap, low_bits);
    case SimdLevel::kAvx2:
      Densify(values, n, wrap);
      return RemixAllAvx2(values, n, low_bits);
    case SimdLevel::kPortable:
      break;
  }
#endif
  Densify(values, n, wrap);
  RemixAllPortable(values, n, low_bits);
}

DifferingBitsFn ChooseDifferingBits() {
#if NEARDUP_X86
  switch (ActiveSimdLevel()) {
    case SimdLevel::kAvx512:
      return DifferingBitsAvx512;
    case SimdLevel::kAvx2:
      return DifferingBitsPopcnt;
    case SimdLevel::kPortable:
      break;
  }
#endif
  return DifferingBitsPortable;
}

DifferingBitsManyFn ChooseDifferingBitsMany() {
#if NEARDUP_X86
  switch (ActiveSimdLevel()) {
    case SimdLevel::kAvx512:
      return DifferingBitsManyAvx512;
    case SimdLevel::kAvx2:
      return DifferingBitsManyPopcnt;
    case SimdLevel::kPortable:
      break;
  }
#endif
  return DifferingBitsManyPortable;
}

void RemixShifted(const uint64_t* hashes, size_t n, int shift, uint64_t* remixed) {
#if NEARDUP_X86
  switch (ActiveSimdLevel()) {
    case SimdLevel::kAvx512:
      return RemixShiftedAvx512(hashes, n, shift, remixed);
    case SimdLevel::kAvx2:
      return RemixShiftedAvx2(hashes, n, shift, remixed);
    case SimdLevel::kPortable:
      break;
  }
#endif
  RemixShiftedPortable(hashes, n, shift, remixed);
}

}  // namespace neardup::sketch_internal
