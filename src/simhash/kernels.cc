// Portable, AVX2 and AVX-512 versions of the hot loops. The SIMD versions are compiled for their
// instruction sets with function attributes (not file-wide flags), so no other code of neardup is
// built for more than baseline x86-64, and they only run when the CPU supports them.
#include "simhash/kernels.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>

#include "neardup/cpu.h"

#if defined(__x86_64__)
#include <immintrin.h>
#define NEARDUP_X86 1
#endif

namespace neardup::simhash_internal {
namespace {

// Byte b of a hash spread over 8 byte lanes of a 64-bit word (lane i = bit i of b): lets the
// portable fold count 8 bits with one addition (SWAR).
constexpr auto kSpreadBits = [] {
  std::array<uint64_t, 256> table{};
  for (unsigned b = 0; b < 256; ++b) {
    for (unsigned i = 0; i < 8; ++i) table[b] |= static_cast<uint64_t>((b >> i) & 1) << (8 * i);
  }
  return table;
}();

// +1.0 / -1.0 for the 8 bits of a byte.
constexpr auto kBitSigns = [] {
  std::array<std::array<double, 8>, 256> table{};
  for (unsigned b = 0; b < 256; ++b) {
    for (unsigned i = 0; i < 8; ++i) table[b][i] = ((b >> i) & 1) ? 1.0 : -1.0;
  }
  return table;
}();

void FoldUnitPortable(const uint64_t* hashes, size_t n, uint64_t ones[64]) {
  for (size_t start = 0; start < n; start += 255) {  // byte lanes hold at most 255
    const size_t end = std::min(n, start + 255);
    uint64_t lanes[8] = {};
    for (size_t i = start; i < end; ++i) {
      const uint64_t h = hashes[i];
      for (int b = 0; b < 8; ++b) lanes[b] += kSpreadBits[(h >> (8 * b)) & 0xFF];
    }
    for (int b = 0; b < 8; ++b) {
      for (int i = 0; i < 8; ++i) ones[8 * b + i] += (lanes[b] >> (8 * i)) & 0xFF;
    }
  }
}

void FoldWeightedPortable(const uint64_t* hashes, const double* weights, size_t n,
                          double sums[64]) {
  for (size_t i = 0; i < n; ++i) {
    const uint64_t h = hashes[i];
    const double w = weights[i];
    for (int b = 0; b < 8; ++b) {
      const auto& signs = kBitSigns[(h >> (8 * b)) & 0xFF];
      // sign * w is exactly +w or -w, so every level adds the same values in the same order.
      for (int j = 0; j < 8; ++j) sums[8 * b + j] += signs[j] * w;
    }
  }
}

void HammingMasksPortable(const uint64_t* codes, size_t n, uint64_t query, int k, uint64_t* masks) {
  for (size_t base = 0; base < n; base += 64) {
    const size_t count = std::min<size_t>(64, n - base);
    uint64_t mask = 0;
    for (size_t i = 0; i < count; ++i) {
      mask |= uint64_t{std::popcount(codes[base + i] ^ query) <= k} << i;
    }
    masks[base / 64] = mask;
  }
}

void HashSlices4To8Portable(const char* text, size_t count, size_t length, uint64_t* hashes) {
  for (size_t j = 0; j < count; ++j) hashes[j] = Xxh3Of4To8(text + j, length);
}

#if NEARDUP_X86

// GCC 12 reports its own AVX-512 intrinsics' internal undefined values as maybe-uninitialized
// (GCC bug 105593): silenced for this function only, as in src/sketch/kernels.cc.
#pragma GCC diagnostic push
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
// Eight slices per step. Every 128-bit lane holds the same 16 bytes text[j, j + 16), so one byte
// shuffle (within lanes) gives each 64-bit lane k its key input: the 4 bytes at k + length - 4 low,
// the 4 bytes at k high.
__attribute__((target("avx512f,avx512bw,avx512dq"))) void HashSlices4To8Avx512(const char* text,
                                                                               size_t count,
                                                                               size_t length,
                                                                               uint64_t* hashes) {
  alignas(64) int8_t control[64];
  for (int k = 0; k < 8; ++k) {
    for (int b = 0; b < 4; ++b) {
      control[8 * k + b] = static_cast<int8_t>(static_cast<size_t>(k + b) + length - 4);
      control[8 * k + 4 + b] = static_cast<int8_t>(k + b);
    }
  }
  const __m512i shuffle = _mm512_load_si512(control);
  const __m512i bitflip = _mm512_set1_epi64(static_cast<long long>(kXxh3Bitflip4To8));
  const __m512i prime = _mm512_set1_epi64(static_cast<long long>(kXxh3Prime4To8));
  const __m512i bytes = _mm512_set1_epi64(static_cast<long long>(length));
  const size_t input = count + length - 1;  // bytes read by the scalar loop
  size_t j = 0;
  for (; j + 8 <= count && j + 16 <= input; j += 8) {
    const __m512i window =
        _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(text + j)));
    __m512i h = _mm512_xor_si512(_mm512_shuffle_epi8(window, shuffle), bitflip);
    h = _mm512_xor_si512(h, _mm512_xor_si512(_mm512_rol_epi64(h, 49), _mm512_rol_epi64(h, 24)));
    h = _mm512_mullo_epi64(h, prime);
    h = _mm512_xor_si512(h, _mm512_add_epi64(_mm512_srli_epi64(h, 35), bytes));
    h = _mm512_mullo_epi64(h, prime);
    h = _mm512_xor_si512(h, _mm512_srli_epi64(h, 28));
    _mm512_storeu_si512(hashes + j, h);
  }
  HashSlices4To8Portable(text + j, count - j, length, hashes + j);
}
#pragma GCC diagnostic pop

// Byte counters overflow after 255 additions: flush them into the 64-bit totals before that.
constexpr size_t kByteCounterBlock = 255;

__attribute__((target("avx2"))) void FoldUnitAvx2(const uint64_t* hashes, size_t n,
                                                  uint64_t ones[64]) {
  // Spread the 8 bytes of a hash over 64 byte lanes (lane i holds the byte containing bit i), then
  // test bit i % 8 in lane i.
  const __m256i spread_low = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1,  //
                                              2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3);
  const __m256i spread_high = _mm256_setr_epi8(4, 4, 4, 4, 4, 4, 4, 4, 5, 5, 5, 5, 5, 5, 5, 5,  //
                                               6, 6, 6, 6, 6, 6, 6, 6, 7, 7, 7, 7, 7, 7, 7, 7);
  const __m256i bit_of_lane = _mm256_set1_epi64x(static_cast<int64_t>(0x8040201008040201ULL));
  for (size_t start = 0; start < n; start += kByteCounterBlock) {
    const size_t end = std::min(n, start + kByteCounterBlock);
    __m256i low = _mm256_setzero_si256();
    __m256i high = _mm256_setzero_si256();
    for (size_t i = start; i < end; ++i) {
      const __m256i h = _mm256_set1_epi64x(static_cast<int64_t>(hashes[i]));
      const __m256i l = _mm256_and_si256(_mm256_shuffle_epi8(h, spread_low), bit_of_lane);
      const __m256i u = _mm256_and_si256(_mm256_shuffle_epi8(h, spread_high), bit_of_lane);
      low = _mm256_sub_epi8(low, _mm256_cmpeq_epi8(l, bit_of_lane));
      high = _mm256_sub_epi8(high, _mm256_cmpeq_epi8(u, bit_of_lane));
    }
    alignas(32) uint8_t counts[64];
    _mm256_store_si256(reinterpret_cast<__m256i*>(counts), low);
    _mm256_store_si256(reinterpret_cast<__m256i*>(counts + 32), high);
    for (int j = 0; j < 64; ++j) ones[j] += counts[j];
  }
}

__attribute__((target("avx512f,avx512bw"))) void FoldUnitAvx512(const uint64_t* hashes, size_t n,
                                                                uint64_t ones[64]) {
  const __m512i minus_one = _mm512_set1_epi8(-1);
  for (size_t start = 0; start < n; start += kByteCounterBlock) {
    const size_t end = std::min(n, start + kByteCounterBlock);
    __m512i counts = _mm512_setzero_si512();
    for (size_t i = start; i < end; ++i) {
      counts = _mm512_mask_sub_epi8(counts, static_cast<__mmask64>(hashes[i]), counts, minus_one);
    }
    alignas(64) uint8_t bytes[64];
    _mm512_store_si512(bytes, counts);
    for (int j = 0; j < 64; ++j) ones[j] += bytes[j];
  }
}

__attribute__((target("avx2"))) void FoldWeightedAvx2(const uint64_t* hashes, const double* weights,
                                                      size_t n, double sums[64]) {
  __m256d acc[16];
  __m256i bits[16];
  for (int g = 0; g < 16; ++g) {
    acc[g] = _mm256_loadu_pd(sums + 4 * g);
    bits[g] = _mm256_setr_epi64x(int64_t{1} << (4 * g), int64_t{1} << (4 * g + 1),
                                 int64_t{1} << (4 * g + 2),
                                 static_cast<int64_t>(uint64_t{1} << (4 * g + 3)));
  }
  for (size_t i = 0; i < n; ++i) {
    const __m256i h = _mm256_set1_epi64x(static_cast<int64_t>(hashes[i]));
    const __m256d plus = _mm256_set1_pd(weights[i]);
    const __m256d minus = _mm256_set1_pd(-weights[i]);
    for (int g = 0; g < 16; ++g) {
      const __m256i set = _mm256_cmpeq_epi64(_mm256_and_si256(h, bits[g]), bits[g]);
      acc[g] = _mm256_add_pd(acc[g], _mm256_blendv_pd(minus, plus, _mm256_castsi256_pd(set)));
    }
  }
  for (int g = 0; g < 16; ++g) _mm256_storeu_pd(sums + 4 * g, acc[g]);
}

__attribute__((target("avx512f"))) void FoldWeightedAvx512(const uint64_t* hashes,
                                                           const double* weights, size_t n,
                                                           double sums[64]) {
  __m512d acc[8];
  for (int g = 0; g < 8; ++g) acc[g] = _mm512_loadu_pd(sums + 8 * g);
  for (size_t i = 0; i < n; ++i) {
    const uint64_t h = hashes[i];
    const __m512d plus = _mm512_set1_pd(weights[i]);
    const __m512d minus = _mm512_set1_pd(-weights[i]);
    for (int g = 0; g < 8; ++g) {
      const auto mask = static_cast<__mmask8>(h >> (8 * g));
      acc[g] = _mm512_add_pd(acc[g], _mm512_mask_blend_pd(mask, minus, plus));
    }
  }
  for (int g = 0; g < 8; ++g) _mm512_storeu_pd(sums + 8 * g, acc[g]);
}

__attribute__((target("avx2"))) void HammingMasksAvx2(const uint64_t* codes, size_t n,
                                                      uint64_t query, int k, uint64_t* masks) {
  const __m256i q = _mm256_set1_epi64x(static_cast<int64_t>(query));
  const __m256i nibble = _mm256_set1_epi8(0x0F);
  const __m256i lut = _mm256_setr_epi8(0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4,  //
                                       0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4);
  const __m256i limit = _mm256_set1_epi64x(k);
  const __m256i zero = _mm256_setzero_si256();
  size_t base = 0;
  for (; base + 64 <= n; base += 64) {
    uint64_t mask = 0;
    for (int b = 0; b < 16; ++b) {
      const __m256i x = _mm256_xor_si256(
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(codes + base + 4 * b)), q);
      const __m256i lo = _mm256_shuffle_epi8(lut, _mm256_and_si256(x, nibble));
      const __m256i hi =
          _mm256_shuffle_epi8(lut, _mm256_and_si256(_mm256_srli_epi16(x, 4), nibble));
      const __m256i count = _mm256_sad_epu8(_mm256_add_epi8(lo, hi), zero);
      const __m256i over = _mm256_cmpgt_epi64(count, limit);
      const auto far = static_cast<unsigned>(_mm256_movemask_pd(_mm256_castsi256_pd(over)));
      mask |= static_cast<uint64_t>(~far & 0xFu) << (4 * b);
    }
    masks[base / 64] = mask;
  }
  if (base < n) HammingMasksPortable(codes + base, n - base, query, k, masks + base / 64);
}

__attribute__((target("avx512f,avx512vpopcntdq"))) void HammingMasksAvx512(const uint64_t* codes,
                                                                           size_t n, uint64_t query,
                                                                           int k, uint64_t* masks) {
  const __m512i q = _mm512_set1_epi64(static_cast<int64_t>(query));
  const __m512i limit = _mm512_set1_epi64(k);
  size_t base = 0;
  for (; base + 64 <= n; base += 64) {
    uint64_t mask = 0;
    for (int b = 0; b < 8; ++b) {
      const __m512i x = _mm512_xor_si512(_mm512_loadu_si512(codes + base + 8 * b), q);
      const __mmask8 near = _mm512_cmple_epu64_mask(_mm512_popcnt_epi64(x), limit);
      mask |= static_cast<uint64_t>(near) << (8 * b);
    }
    masks[base / 64] = mask;
  }
  if (base < n) {
    const size_t rest = n - base;
    uint64_t mask = 0;
    for (size_t b = 0; b * 8 < rest; ++b) {
      const size_t count = std::min<size_t>(8, rest - b * 8);
      const auto load = static_cast<__mmask8>((1u << count) - 1);
      const __m512i x = _mm512_xor_si512(_mm512_maskz_loadu_epi64(load, codes + base + 8 * b), q);
      const __mmask8 near = _mm512_mask_cmple_epu64_mask(load, _mm512_popcnt_epi64(x), limit);
      mask |= static_cast<uint64_t>(near) << (8 * b);
    }
    masks[base / 64] = mask;
  }
}

#endif  // NEARDUP_X86

}  // namespace

void HashSlices4To8(const char* text, size_t count, size_t length, uint64_t* hashes) {
#if NEARDUP_X86
  // AVX2 has no 64-bit multiply: its level takes the scalar loop (two multiplies a hash).
  if (ActiveSimdLevel() == SimdLevel::kAvx512)
    return HashSlices4To8Avx512(text, count, length, hashes);
#endif
  HashSlices4To8Portable(text, count, length, hashes);
}

void FoldUnit(const uint64_t* hashes, size_t n, uint64_t ones[64]) {
#if NEARDUP_X86
  switch (ActiveSimdLevel()) {
    case SimdLevel::kAvx512:
      return FoldUnitAvx512(hashes, n, ones);
    case SimdLevel::kAvx2:
      return FoldUnitAvx2(hashes, n, ones);
    case SimdLevel::kPortable:
      break;
  }
#endif
  FoldUnitPortable(hashes, n, ones);
}

void FoldWeighted(const uint64_t* hashes, const double* weights, size_t n, double sums[64]) {
#if NEARDUP_X86
  switch (ActiveSimdLevel()) {
    case SimdLevel::kAvx512:
      return FoldWeightedAvx512(hashes, weights, n, sums);
    case SimdLevel::kAvx2:
      return FoldWeightedAvx2(hashes, weights, n, sums);
    case SimdLevel::kPortable:
      break;
  }
#endif
  FoldWeightedPortable(hashes, weights, n, sums);
}

void HammingMasks(const uint64_t* codes, size_t n, uint64_t query, int k, uint64_t* masks) {
#if NEARDUP_X86
  switch (ActiveSimdLevel()) {
    case SimdLevel::kAvx512:
      return HammingMasksAvx512(codes, n, query, k, masks);
    case SimdLevel::kAvx2:
      return HammingMasksAvx2(codes, n, query, k, masks);
    case SimdLevel::kPortable:
      break;
  }
#endif
  HammingMasksPortable(codes, n, query, k, masks);
}

}  // namespace neardup::simhash_internal
