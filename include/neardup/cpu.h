// Which SIMD code paths neardup uses. Hot kernels (the fingerprint fold, Hamming scans) exist in a
// portable version and in AVX2 and AVX-512 versions chosen at run time from what the CPU supports;
// the default build never assumes more than baseline x86-64. All paths give bit-identical results.
#ifndef NEARDUP_CPU_H_
#define NEARDUP_CPU_H_

#include <optional>
#include <string_view>

namespace neardup {

enum class SimdLevel {
  kPortable = 0,  // plain C++, any CPU
  kAvx2 = 1,      // AVX2 + POPCNT + BMI2
  kAvx512 = 2,    // AVX-512 F, BW, DQ and VPOPCNTDQ
};

// The best level this CPU supports.
SimdLevel DetectedSimdLevel();

// The level in use: the detected one, lowered by the environment variable NEARDUP_SIMD
// (portable|avx2|avx512) or by SetSimdLevel(). Never above the detected level.
SimdLevel ActiveSimdLevel();

// Lowers (or restores, up to the detected level) the level in use; for tests and benchmarks. Call
// it before starting threads that run kernels.
void SetSimdLevel(SimdLevel level);

std::string_view SimdLevelName(SimdLevel level);
std::optional<SimdLevel> ParseSimdLevel(std::string_view name);

// The number of threads a `threads` option asks for: the value itself when positive, otherwise (0,
// the usual default) the hardware concurrency, and at least 1.
int ResolveThreads(int threads);

}  // namespace neardup

#endif  // NEARDUP_CPU_H_
