// The disk-resident SimHash index (neardup/disk_index.h) at scale: builds an index of N random
// fingerprints (a third of them a few bits from an earlier one) by bulk load, then, in a separate
// run so that the resident memory is the query process's own, answers Q queries (half of them a few
// bits from a stored fingerprint) and prints queries/s, the work per query and the memory.
//
// Usage: disk_index_bench build DIR N [BLOCKS KEY_BLOCKS]
//        disk_index_bench query DIR N Q [THREADS]
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "neardup/disk_index.h"
#include "process_memory.h"

namespace {

using Clock = std::chrono::steady_clock;

uint64_t Mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

// Fingerprint i: random, or (one in three) fingerprint Mix(i) % i with 1-3 bits flipped.
uint64_t Code(uint64_t i) {
  const uint64_t r = Mix(i);
  if (i > 0 && r % 3 == 0) {
    uint64_t c = Code(Mix(r) % i);
    for (uint64_t f = 0; f <= r % 3 && f < 3; ++f) c ^= uint64_t{1} << (Mix(r + f + 1) % 64);
    return c;
  }
  return r;
}

int Fail(const neardup::Status& status) {
  std::fprintf(stderr, "disk_index_bench: %s\n", status.ToString().c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(
        stderr,
        "usage: disk_index_bench build DIR N [BLOCKS KEY_BLOCKS] | query DIR N Q [THREADS]\n");
    return 2;
  }
  const std::string mode = argv[1], dir = argv[2];
  const uint64_t n = std::strtoull(argv[3], nullptr, 10);
  if (mode == "build") {
    neardup::DiskIndexOptions options;
    if (argc > 5)
      options.design = neardup::TableDesign::Even(std::atoi(argv[4]), std::atoi(argv[5]));
    auto index = neardup::DiskSimhashIndex::Open(dir, options);
    if (!index.ok()) return Fail(index.status());
    std::vector<uint64_t> ids(n), codes(n);
    for (uint64_t i = 0; i < n; ++i) {
      ids[i] = i;
      codes[i] = Code(i);
    }
    const auto start = Clock::now();
    auto loaded = (*index)->BulkLoad(ids, codes, [&](int table) {
      std::fprintf(stderr, "table %d at %.0f s\n", table,
                   std::chrono::duration<double>(Clock::now() - start).count());
    });
    if (!loaded.ok()) return Fail(loaded);
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    const auto stats = (*index)->Stats();
    std::printf("build %llu fingerprints in %.1f s (%.0f/s), %s, %.1f bytes/fingerprint on disk\n",
                static_cast<unsigned long long>(n), seconds, n / seconds, stats.design.c_str(),
                static_cast<double>(stats.disk_bytes) / n);
    return 0;
  }
  if (mode != "query" || argc < 5) return 2;
  const uint64_t queries = std::strtoull(argv[4], nullptr, 10);
  const int threads = argc > 5 ? std::atoi(argv[5]) : 2;
  neardup::DiskIndexOptions options;
  options.create_if_missing = false;
  auto index = neardup::DiskSimhashIndex::Open(dir, options);
  if (!index.ok()) return Fail(index.status());
  std::atomic<uint64_t> next{0}, matches{0};
  std::vector<neardup::DiskQueryStats> stats(static_cast<size_t>(threads));
  const auto start = Clock::now();
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      for (uint64_t q; (q = next.fetch_add(1)) < queries;) {
        uint64_t code = Mix(q * 31 + 7);
        if (q % 2 == 0) code = Code(Mix(q) % n) ^ (uint64_t{1} << (q % 64));
        auto result = (*index)->Query(code, 3, &stats[static_cast<size_t>(t)]);
        if (!result.ok()) std::abort();
        matches += result->size();
      }
    });
  }
  for (auto& w : workers) w.join();
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  neardup::DiskQueryStats total;
  for (const auto& s : stats) total += s;
  const auto index_stats = (*index)->Stats();
  std::printf(
      "query %.0f queries/s (%d threads, k=3, %llu fingerprints, %s): %.1f seeks, %.0f entries, "
      "%.2f block reads, %.0f block bytes, %.2f matches per query; resident %.0f MB, index memory "
      "%.0f MB, "
      "disk %.2f GB\n",
      queries / seconds, threads, static_cast<unsigned long long>(index_stats.size),
      index_stats.design.c_str(), static_cast<double>(total.seeks) / queries,
      static_cast<double>(total.entries_read) / queries,
      static_cast<double>(total.block_reads) / queries,
      static_cast<double>(total.block_bytes) / queries,
      static_cast<double>(matches.load()) / queries, neardup::bench::ResidentBytes() / 1e6,
      index_stats.memory_bytes / 1e6, index_stats.disk_bytes / 1e9);
  return 0;
}
