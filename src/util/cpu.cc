#include "neardup/cpu.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>

namespace neardup {
namespace {

SimdLevel Detect() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vpopcntdq")) {
    return SimdLevel::kAvx512;
  }
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("popcnt") &&
      __builtin_cpu_supports("bmi2")) {
    return SimdLevel::kAvx2;
  }
#endif
  return SimdLevel::kPortable;
}

SimdLevel Initial() {
  SimdLevel level = DetectedSimdLevel();
  if (const char* env = std::getenv("NEARDUP_SIMD")) {
    if (auto wanted = ParseSimdLevel(env)) level = std::min(level, *wanted);
  }
  return level;
}

std::atomic<int>& Active() {
  static std::atomic<int> active{static_cast<int>(Initial())};
  return active;
}

}  // namespace

SimdLevel DetectedSimdLevel() {
  static const SimdLevel detected = Detect();
  return detected;
}

SimdLevel ActiveSimdLevel() {
  return static_cast<SimdLevel>(Active().load(std::memory_order_relaxed));
}

void SetSimdLevel(SimdLevel level) {
  Active().store(static_cast<int>(std::min(level, DetectedSimdLevel())), std::memory_order_relaxed);
}

std::string_view SimdLevelName(SimdLevel level) {
  switch (level) {
    case SimdLevel::kAvx512:
      return "avx512";
    case SimdLevel::kAvx2:
      return "avx2";
    case SimdLevel::kPortable:
      break;
  }
  return "portable";
}

std::optional<SimdLevel> ParseSimdLevel(std::string_view name) {
  for (SimdLevel level : {SimdLevel::kPortable, SimdLevel::kAvx2, SimdLevel::kAvx512}) {
    if (name == SimdLevelName(level)) return level;
  }
  return std::nullopt;
}

}  // namespace neardup
