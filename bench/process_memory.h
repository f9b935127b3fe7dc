// The resident memory of this process, for the end-to-end benchmark programs.
#ifndef NEARDUP_BENCH_PROCESS_MEMORY_H_
#define NEARDUP_BENCH_PROCESS_MEMORY_H_

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>

namespace neardup::bench {

// VmRSS of /proc/self/status in bytes (0 when it cannot be read).
inline uint64_t ResidentBytes() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::strtoull(line.c_str() + 6, nullptr, 10) * 1024;
  }
  return 0;
}

}  // namespace neardup::bench

#endif  // NEARDUP_BENCH_PROCESS_MEMORY_H_
