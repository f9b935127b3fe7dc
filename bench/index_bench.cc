// Benchmarks of the exact Hamming index and the all-pairs join (bench/run_index_bench.sh runs them
// next to FAISS and prints ratios).
//
// Cases (N = 1M and 10M; 100M too when NEARDUP_BENCH_100M=1):
//   IndexBuild/N        bulk build of N uniform codes (ids 0..N-1), 2 threads; bytes_per_fp counter
//   IndexQueryBatch/N   QueryBatch of 1M queries at k=3 on 2 threads, half planted near-duplicates
//   IndexQueryOneThread/N  the same on one thread, timed in CPU time (steadier on a busy machine)
//   IndexQuerySingle/N  Query() one at a time on one thread; p50_ns / p99_ns counters
//   IndexInsert/N       Insert() of 200k new fingerprints into the built index (merges included)
//   AllPairs/N          FindAllPairs at k=3 over N codes with 5% planted near-duplicate pairs, 2
//   threads Corpus*             with NEARDUP_BENCH_CORPUS=FILE (uint64 fingerprints of a real
//   corpus, see
//                       bench/run_index_bench.sh): build, every fingerprint queried at k=3,
//                       all-pairs
// Data: splitmix64 streams with fixed seeds. With NEARDUP_BENCH_DUMP_DIR set, the codes and queries
// are also written there (codes_N.u64, queries_N.u64, join_N.u64: little-endian uint64) for
// bench/faiss_index.py, so FAISS answers the same queries over the same codes.
#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "neardup/index.h"
#include "neardup/join.h"

namespace neardup {
namespace {

constexpr int kK = 3;
constexpr size_t kQueries = 1'000'000;

uint64_t SplitMix(uint64_t* state) {
  uint64_t z = (*state += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

void Dump(const std::string& name, size_t n, const std::vector<uint64_t>& values) {
  const char* dir = std::getenv("NEARDUP_BENCH_DUMP_DIR");
  if (dir == nullptr) return;
  const std::string path = std::string(dir) + "/" + name + "_" + std::to_string(n) + ".u64";
  if (FILE* f = std::fopen(path.c_str(), "wb")) {
    std::fwrite(values.data(), sizeof(uint64_t), values.size(), f);
    std::fclose(f);
  }
}

// The database: N uniform codes (seed 1).
const std::vector<uint64_t>& Codes(size_t n) {
  static std::map<size_t, std::vector<uint64_t>> cache;
  auto& codes = cache[n];
  if (codes.empty()) {
    uint64_t state = 1;
    codes.resize(n);
    for (auto& c : codes) c = SplitMix(&state);
    Dump("codes", n, codes);
  }
  return codes;
}

// Flips 0..3 distinct bits chosen by the stream.
uint64_t Plant(uint64_t code, uint64_t* state) {
  const int flips = static_cast<int>(SplitMix(state) % 4);
  uint64_t mask = 0;
  while (std::popcount(mask) < flips) mask |= uint64_t{1} << (SplitMix(state) % 64);
  return code ^ mask;
}

// Queries (seed 2): even ones are database codes with 0..3 bits flipped, odd ones uniform.
const std::vector<uint64_t>& Queries(size_t n) {
  static std::map<size_t, std::vector<uint64_t>> cache;
  auto& queries = cache[n];
  if (queries.empty()) {
    const auto& codes = Codes(n);
    uint64_t state = 2;
    queries.resize(kQueries);
    for (size_t q = 0; q < kQueries; ++q) {
      const uint64_t r = SplitMix(&state);
      queries[q] = q % 2 == 0 ? Plant(codes[r % n], &state) : r;
    }
    Dump("queries", n, queries);
  }
  return queries;
}

// Join input (seed 3): uniform codes where every 20th is a near-duplicate of the one before.
std::vector<uint64_t> JoinCodes(size_t n) {
  std::vector<uint64_t> codes(n);
  uint64_t state = 3;
  for (size_t i = 0; i < n; ++i) {
    codes[i] = (i % 20 == 19) ? Plant(codes[i - 1], &state) : SplitMix(&state);
  }
  Dump("join", n, codes);
  return codes;
}

std::vector<uint64_t> Iota(size_t n) {
  std::vector<uint64_t> ids(n);
  for (size_t i = 0; i < n; ++i) ids[i] = i;
  return ids;
}

IndexOptions BenchOptions(size_t n) {
  IndexOptions options;
  options.max_k = kK;
  // The bar: at most 64 bytes per fingerprint at 10M; no limit at 100M beyond the
  // machine's.
  options.memory_budget_bytes = n <= 10'000'000 ? 64 * n : uint64_t{20} << 30;
  options.build_threads = 2;
  return options;
}

const Index& BuiltIndex(size_t n) {
  static std::map<size_t, std::unique_ptr<Index>> cache;
  auto& index = cache[n];
  if (!index) {
    auto built = BuildPermutedTableIndex(Iota(n), Codes(n), BenchOptions(n));
    if (!built.ok()) std::abort();
    index = std::move(*built);
  }
  return *index;
}

void IndexBuild(benchmark::State& state) {
  const auto n = static_cast<size_t>(state.range(0));
  const auto& codes = Codes(n);
  const auto ids = Iota(n);
  IndexStats stats;
  for (auto _ : state) {
    auto index = BuildPermutedTableIndex(ids, codes, BenchOptions(n));
    if (!index.ok()) state.SkipWithError(index.status().ToString().c_str());
    stats = (*index)->Stats();
  }
  state.counters["bytes_per_fp"] = static_cast<double>(stats.memory_bytes) / static_cast<double>(n);
  state.SetLabel(stats.design);
}

// threads = 2 for IndexQueryBatch; IndexQueryOneThread runs the same on the calling thread and is
// timed in CPU time, which other processes on a busy machine disturb less.
void QueryBatchOn(benchmark::State& state, int threads) {
  const auto n = static_cast<size_t>(state.range(0));
  const Index& index = BuiltIndex(n);
  const auto& queries = Queries(n);
  QueryStats work;
  for (auto _ : state) {
    auto result = index.QueryBatch(queries, kK, threads);
    if (!result.ok()) state.SkipWithError(result.status().ToString().c_str());
    work = result->stats;
    benchmark::DoNotOptimize(result->matches.data());
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * queries.size()));
  state.counters["candidates_per_q"] =
      static_cast<double>(work.candidates_verified) / static_cast<double>(work.queries);
  state.counters["matches_per_q"] =
      static_cast<double>(work.matches) / static_cast<double>(work.queries);
}

void IndexQueryBatch(benchmark::State& state) { QueryBatchOn(state, 2); }
void IndexQueryOneThread(benchmark::State& state) { QueryBatchOn(state, 1); }

void IndexQuerySingle(benchmark::State& state) {
  const auto n = static_cast<size_t>(state.range(0));
  const Index& index = BuiltIndex(n);
  const auto& queries = Queries(n);
  std::vector<double> latencies;
  latencies.reserve(200'000);
  size_t q = 0;
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    auto result = index.Query(queries[q], kK);
    const auto stop = std::chrono::steady_clock::now();
    benchmark::DoNotOptimize(result);
    if (latencies.size() < latencies.capacity()) {
      latencies.push_back(std::chrono::duration<double, std::nano>(stop - start).count());
    }
    q = (q + 1) % queries.size();
  }
  std::sort(latencies.begin(), latencies.end());
  if (!latencies.empty()) {
    state.counters["p50_ns"] = latencies[latencies.size() / 2];
    state.counters["p99_ns"] = latencies[latencies.size() * 99 / 100];
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}

void IndexInsert(benchmark::State& state) {
  const auto n = static_cast<size_t>(state.range(0));
  constexpr size_t kInserts = 200'000;
  uint64_t seed = 4;
  std::vector<uint64_t> fresh(kInserts);
  for (auto& c : fresh) c = SplitMix(&seed);
  for (auto _ : state) {
    state.PauseTiming();
    auto built = BuildPermutedTableIndex(Iota(n), Codes(n), BenchOptions(n));
    if (!built.ok()) std::abort();
    state.ResumeTiming();
    for (size_t i = 0; i < kInserts; ++i) {
      if (!(*built)->Insert(n + i, fresh[i]).ok()) std::abort();
    }
    if (!(*built)->Flush().ok()) std::abort();
    state.PauseTiming();
    built->reset();
    state.ResumeTiming();
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * kInserts));
}

void AllPairs(benchmark::State& state) {
  const auto n = static_cast<size_t>(state.range(0));
  const auto codes = JoinCodes(n);
  JoinOptions options;
  options.threads = 2;
  size_t pairs = 0;
  for (auto _ : state) {
    auto result = FindAllPairs(codes, kK, options);
    if (!result.ok()) state.SkipWithError(result.status().ToString().c_str());
    pairs = result->size();
  }
  struct rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  state.counters["pairs"] = static_cast<double>(pairs);
  state.counters["peak_rss_mb"] = static_cast<double>(usage.ru_maxrss) / 1024.0;
}

const std::vector<uint64_t>& CorpusCodes() {
  static std::vector<uint64_t> codes;
  if (codes.empty()) {
    if (FILE* f = std::fopen(std::getenv("NEARDUP_BENCH_CORPUS"), "rb")) {
      uint64_t code;
      while (std::fread(&code, sizeof(code), 1, f) == 1) codes.push_back(code);
      std::fclose(f);
    }
  }
  return codes;
}

void CorpusQueryBatch(benchmark::State& state) {
  const auto& codes = CorpusCodes();
  IndexOptions options = BenchOptions(codes.size());
  auto index = BuildPermutedTableIndex(Iota(codes.size()), codes, options);
  if (!index.ok()) return state.SkipWithError(index.status().ToString().c_str());
  QueryStats work;
  for (auto _ : state) {
    auto result = (*index)->QueryBatch(codes, kK, 2);
    work = result->stats;
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * codes.size()));
  state.counters["n"] = static_cast<double>(codes.size());
  state.counters["candidates_per_q"] =
      static_cast<double>(work.candidates_verified) / static_cast<double>(work.queries);
  state.counters["matches_per_q"] =
      static_cast<double>(work.matches) / static_cast<double>(work.queries);
  state.SetLabel((*index)->Stats().design);
}

void CorpusAllPairs(benchmark::State& state) {
  const auto& codes = CorpusCodes();
  JoinOptions options;
  options.threads = 2;
  size_t pairs = 0;
  for (auto _ : state) pairs = FindAllPairs(codes, kK, options)->size();
  state.counters["n"] = static_cast<double>(codes.size());
  state.counters["pairs"] = static_cast<double>(pairs);
}

void Sizes(benchmark::internal::Benchmark* b) {
  b->Arg(1'000'000)->Arg(10'000'000);
  if (std::getenv("NEARDUP_BENCH_100M") != nullptr) b->Arg(100'000'000);
  b->Unit(benchmark::kMillisecond)->UseRealTime();
}

BENCHMARK(IndexBuild)->Apply(Sizes)->Iterations(3);
BENCHMARK(IndexQueryBatch)->Apply(Sizes)->Iterations(3);
void OneThreadSizes(benchmark::internal::Benchmark* b) {
  b->Arg(1'000'000)->Arg(10'000'000);
  if (std::getenv("NEARDUP_BENCH_100M") != nullptr) b->Arg(100'000'000);
  b->Iterations(3)->Unit(benchmark::kMillisecond);
}

BENCHMARK(IndexQueryOneThread)->Apply(OneThreadSizes);
BENCHMARK(IndexQuerySingle)->Apply(Sizes)->Unit(benchmark::kNanosecond);
BENCHMARK(IndexInsert)->Apply(Sizes)->Iterations(1);
BENCHMARK(AllPairs)->Apply(Sizes)->Iterations(3);

int RegisterCorpus() {
  if (std::getenv("NEARDUP_BENCH_CORPUS") == nullptr) return 0;
  benchmark::RegisterBenchmark("CorpusQueryBatch", CorpusQueryBatch)
      ->Iterations(3)
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime();
  benchmark::RegisterBenchmark("CorpusAllPairs", CorpusAllPairs)
      ->Iterations(3)
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime();
  return 0;
}
const int kCorpusRegistered = RegisterCorpus();

}  // namespace
}  // namespace neardup

BENCHMARK_MAIN();
