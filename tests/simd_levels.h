// Test helper: the SIMD levels a test runs its kernels on, with a visible line saying which levels
// ran and which were skipped, and a failure when the CPU offers a level the run did not test.
#ifndef NEARDUP_TESTS_SIMD_LEVELS_H_
#define NEARDUP_TESTS_SIMD_LEVELS_H_

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "neardup/cpu.h"

namespace neardup::testing {

// The best level the CPU supports by the flags of /proc/cpuinfo, read without the library's own
// detection (which is what this guards); nullopt when the file cannot be read.
inline std::optional<SimdLevel> CpuInfoSimdLevel() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("flags", 0) != 0) continue;
    std::istringstream words(line.substr(line.find(':') + 1));
    std::set<std::string> flags;
    for (std::string flag; words >> flag;) flags.insert(flag);
    auto has = [&](std::initializer_list<const char*> names) {
      for (const char* name : names) {
        if (!flags.count(name)) return false;
      }
      return true;
    };
    if (has({"avx512f", "avx512bw", "avx512dq", "avx512_vpopcntdq"})) return SimdLevel::kAvx512;
    if (has({"avx2", "popcnt", "bmi2"})) return SimdLevel::kAvx2;
    return SimdLevel::kPortable;
  }
  return std::nullopt;
}

// Every level up to DetectedSimdLevel(), lowest first. Prints which levels run and which are
// skipped, and adds a failure when the CPU supports a level that is skipped, unless NEARDUP_SIMD
// asks on purpose for a level below it (then the skip is printed, not failed).
inline std::vector<SimdLevel> SimdLevelsToTest() {
  const SimdLevel detected = DetectedSimdLevel();
  const std::optional<SimdLevel> cpu = CpuInfoSimdLevel();
  const char* env = std::getenv("NEARDUP_SIMD");
  const std::optional<SimdLevel> requested = env ? ParseSimdLevel(env) : std::nullopt;
  std::vector<SimdLevel> levels;
  std::string ran, skipped;
  for (SimdLevel level : {SimdLevel::kPortable, SimdLevel::kAvx2, SimdLevel::kAvx512}) {
    if (level <= detected) {
      levels.push_back(level);
      ran += ' ';
      ran += SimdLevelName(level);
      continue;
    }
    const bool cpu_has = cpu && level <= *cpu;
    const bool lowered = requested && *requested < level;
    skipped += ' ';
    skipped += SimdLevelName(level);
    skipped += cpu_has ? (lowered ? " (NEARDUP_SIMD lowers it)" : " (the CPU has it)")
                       : " (the CPU lacks it)";
    EXPECT_FALSE(cpu_has && !lowered)
        << "/proc/cpuinfo shows " << SimdLevelName(level) << " but DetectedSimdLevel() is "
        << SimdLevelName(detected) << ": the accelerated kernels would go untested";
  }
  std::printf("SIMD levels run:%s; skipped:%s\n", ran.c_str(),
              skipped.empty() ? " none" : skipped.c_str());
  return levels;
}

}  // namespace neardup::testing

#endif  // NEARDUP_TESTS_SIMD_LEVELS_H_
