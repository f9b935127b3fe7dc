// Fingerprint and Hamming-scan throughput per core.
//
// Cases:
//   BM_Fingerprint/{en,zh}/{shingles,char5,terms}  bytes/s of the whole pipeline (UTF-8 check, NFKC
//   +
//       case folding, tokens, features, XXH3, fold) over real text, one document per line. The
//       corpus comes from $NEARDUP_BENCH_DATA/{en,zh}.txt (bench/run.sh extracts LibreOffice help
//       pages).
//   BM_Fold/weighted/LEVEL  weighted feature hashes folded per second by each SIMD level.
//   BM_HammingScan/LEVEL  fingerprints compared per second by a brute-force scan of 10M
//   fingerprints
//       with batches of 32 queries (items_per_second = comparisons per second).
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "neardup/cpu.h"
#include "neardup/hamming.h"
#include "neardup/simhash.h"
#include "neardup/sketch.h"

namespace {

const std::vector<std::string>& Corpus(const std::string& lang) {
  static std::vector<std::string> corpora[2];
  std::vector<std::string>& docs = corpora[lang == "zh"];
  if (docs.empty()) {
    const char* dir = std::getenv("NEARDUP_BENCH_DATA");
    std::ifstream in(std::string(dir ? dir : "build/bench-data") + "/" + lang + ".txt");
    std::string line;
    while (std::getline(in, line)) docs.push_back(line);
  }
  return docs;
}

void BM_Fingerprint(benchmark::State& state, const std::string& lang,
                    neardup::FingerprintOptions options) {
  const auto& docs = Corpus(lang);
  if (docs.empty()) {
    state.SkipWithError("no corpus: set NEARDUP_BENCH_DATA (bench/run.sh does)");
    return;
  }
  auto fingerprinter = std::move(neardup::Fingerprinter::Create(options)).value();
  auto builder = fingerprinter->NewBuilder();
  size_t bytes = 0;
  for (const auto& d : docs) bytes += d.size();
  uint64_t sink = 0;
  for (auto _ : state) {
    for (const auto& d : docs) {
      builder->Reset();
      (void)builder->Update(d);
      sink ^= builder->Finish()->simhash;
    }
  }
  benchmark::DoNotOptimize(sink);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
}

neardup::FingerprintOptions Mode(neardup::FeatureMode mode, neardup::ShingleUnit unit, int n) {
  neardup::FingerprintOptions options;
  options.mode = mode;
  options.shingle_unit = unit;
  options.shingle_size = n;
  return options;
}

void BM_HammingScan(benchmark::State& state) {
  const auto level = static_cast<neardup::SimdLevel>(state.range(0));
  if (level > neardup::DetectedSimdLevel()) {
    state.SkipWithError("level not supported by this CPU");
    return;
  }
  static const std::vector<uint64_t> codes = [] {
    std::mt19937_64 rng(1);
    std::vector<uint64_t> c(10'000'000);
    for (auto& x : c) x = rng();
    return c;
  }();
  std::mt19937_64 rng(2);
  std::vector<uint64_t> queries(32);
  for (auto& q : queries) q = codes[rng() % codes.size()] ^ (uint64_t{1} << (rng() % 64));
  neardup::SetSimdLevel(level);
  std::vector<std::vector<uint32_t>> out;
  for (auto _ : state) {
    for (auto& o : out) o.clear();
    neardup::FindWithinBatch(codes, queries, 3, &out);
    benchmark::DoNotOptimize(out.data());
  }
  neardup::SetSimdLevel(neardup::DetectedSimdLevel());
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * codes.size() * queries.size()));
  state.SetLabel(std::string(neardup::SimdLevelName(level)));
}

void BM_Fold(benchmark::State& state, bool weighted) {
  const auto level = static_cast<neardup::SimdLevel>(state.range(0));
  if (level > neardup::DetectedSimdLevel()) {
    state.SkipWithError("level not supported by this CPU");
    return;
  }
  std::mt19937_64 rng(3);
  std::vector<uint64_t> hashes(4096);
  std::vector<double> weights(4096);
  for (size_t i = 0; i < hashes.size(); ++i) {
    hashes[i] = rng();
    weights[i] = weighted ? 1.5 + static_cast<double>(i % 7) : 1.0;
  }
  neardup::SetSimdLevel(level);
  uint64_t sink = 0;
  for (auto _ : state)
    sink ^= neardup::FoldFeatureHashes(hashes.data(), weights.data(), hashes.size());
  neardup::SetSimdLevel(neardup::DetectedSimdLevel());
  benchmark::DoNotOptimize(sink);
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * hashes.size()));
  state.SetLabel(std::string(neardup::SimdLevelName(level)));
}

// The default sketch (1024 one-bit bins, 20 bands) of a set of state.range(0) distinct feature
// hashes: a 250-byte document has about 250 character 5-grams.
void BM_Sketch(benchmark::State& state) {
  auto sketcher = std::move(neardup::Sketcher::Create({})).value();
  std::mt19937_64 rng(5);
  constexpr int kSets = 64;
  std::vector<std::vector<uint64_t>> sets(kSets);
  for (auto& set : sets) {
    for (int64_t i = 0; i < state.range(0); ++i) set.push_back(rng());
  }
  std::vector<uint8_t> sketch(sketcher->sketch_bytes());
  std::vector<uint32_t> keys(static_cast<size_t>(sketcher->options().bands));
  size_t k = 0;
  for (auto _ : state) {
    auto status = sketcher->Compute(sets[k++ % kSets], sketch, keys);
    benchmark::DoNotOptimize(status);
    benchmark::DoNotOptimize(sketch.data());
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}

using neardup::FeatureMode;
using neardup::ShingleUnit;
BENCHMARK_CAPTURE(BM_Fingerprint, en / shingles, "en",
                  Mode(FeatureMode::kShingles, ShingleUnit::kWord, 3))
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Fingerprint, en / char5, "en",
                  Mode(FeatureMode::kShingles, ShingleUnit::kChar, 5))
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Fingerprint, en / terms, "en",
                  Mode(FeatureMode::kTerms, ShingleUnit::kWord, 3))
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Fingerprint, zh / shingles, "zh",
                  Mode(FeatureMode::kShingles, ShingleUnit::kWord, 3))
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Fingerprint, zh / terms, "zh",
                  Mode(FeatureMode::kTerms, ShingleUnit::kWord, 3))
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Sketch)->Arg(30)->Arg(100)->Arg(250)->Arg(1000)->Arg(5000);
BENCHMARK_CAPTURE(BM_Fold, weighted, true)->DenseRange(0, 2);
BENCHMARK(BM_HammingScan)->DenseRange(0, 2)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
