// Portable, AVX2 and AVX-512 fragment scans, compiled for their instruction sets with function
// attributes only (see src/simhash/kernels.cc for the same pattern).
#include "index/scan_kernels.h"

#include <algorithm>
#include <bit>

#include "neardup/cpu.h"

#if defined(__x86_64__)
#include <immintrin.h>
#define NEARDUP_X86 1
#endif

namespace neardup::index_internal {
namespace {

void FragmentMasksPortable(const uint32_t* fragments, size_t n, uint32_t query, int k,
                           uint64_t* masks) {
  for (size_t base = 0; base < n; base += 64) {
    const size_t count = std::min<size_t>(64, n - base);
    uint64_t mask = 0;
    for (size_t i = 0; i < count; ++i) {
      mask |= uint64_t{std::popcount(fragments[base + i] ^ query) <= k} << i;
    }
    masks[base / 64] = mask;
  }
}

#if NEARDUP_X86

__attribute__((target("avx2"))) void FragmentMasksAvx2(const uint32_t* fragments, size_t n,
                                                       uint32_t query, int k, uint64_t* masks) {
  const __m256i q = _mm256_set1_epi32(static_cast<int>(query));
  const __m256i nibble = _mm256_set1_epi8(0x0F);
  const __m256i lut = _mm256_setr_epi8(0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4,  //
                                       0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4);
  const __m256i ones16 = _mm256_set1_epi16(1);
  const __m256i limit = _mm256_set1_epi32(k);
  size_t base = 0;
  for (; base + 64 <= n; base += 64) {
    uint64_t mask = 0;
    for (int b = 0; b < 8; ++b) {
      const __m256i x = _mm256_xor_si256(
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(fragments + base + 8 * b)), q);
      const __m256i lo = _mm256_shuffle_epi8(lut, _mm256_and_si256(x, nibble));
      const __m256i hi =
          _mm256_shuffle_epi8(lut, _mm256_and_si256(_mm256_srli_epi16(x, 4), nibble));
      // Byte counts -> 16-bit sums of byte pairs -> 32-bit sums.
      const __m256i pairs = _mm256_maddubs_epi16(_mm256_add_epi8(lo, hi), _mm256_set1_epi8(1));
      const __m256i count = _mm256_madd_epi16(pairs, ones16);
      const __m256i over = _mm256_cmpgt_epi32(count, limit);
      const auto far = static_cast<unsigned>(_mm256_movemask_ps(_mm256_castsi256_ps(over)));
      mask |= static_cast<uint64_t>(~far & 0xFFu) << (8 * b);
    }
    masks[base / 64] = mask;
  }
  if (base < n) FragmentMasksPortable(fragments + base, n - base, query, k, masks + base / 64);
}

__attribute__((target("avx512f,avx512vpopcntdq"))) void FragmentMasksAvx512(
    const uint32_t* fragments, size_t n, uint32_t query, int k, uint64_t* masks) {
  const __m512i q = _mm512_set1_epi32(static_cast<int>(query));
  const __m512i limit = _mm512_set1_epi32(k);
  for (size_t base = 0; base < n; base += 64) {
    const size_t count = std::min<size_t>(64, n - base);
    uint64_t mask = 0;
    for (size_t b = 0; b * 16 < count; ++b) {
      const size_t lanes = std::min<size_t>(16, count - b * 16);
      const auto load = static_cast<__mmask16>((uint32_t{1} << lanes) - 1);
      const __m512i x =
          _mm512_xor_si512(_mm512_maskz_loadu_epi32(load, fragments + base + 16 * b), q);
      const __mmask16 near = _mm512_mask_cmple_epu32_mask(load, _mm512_popcnt_epi32(x), limit);
      mask |= static_cast<uint64_t>(near) << (16 * b);
    }
    masks[base / 64] = mask;
  }
}

#endif  // NEARDUP_X86

}  // namespace

void FragmentMasks(const uint32_t* fragments, size_t n, uint32_t query, int k, uint64_t* masks) {
#if NEARDUP_X86
  switch (ActiveSimdLevel()) {
    case SimdLevel::kAvx512:
      return FragmentMasksAvx512(fragments, n, query, k, masks);
    case SimdLevel::kAvx2:
      return FragmentMasksAvx2(fragments, n, query, k, masks);
    case SimdLevel::kPortable:
      break;
  }
#endif
  FragmentMasksPortable(fragments, n, query, k, masks);
}

}  // namespace neardup::index_internal
