// Durable inserts per second into a store (neardup/store.h), documents signed beforehand.
// Cases:
//   batch   --fsync batch: each thread QueryAndInsertBatch(kIfNew) of --batch documents at a time
//   always  --fsync always: each thread QueryAndInsertSigned(kIfNew), one sync per document
//   never   --fsync never: as always, without syncs
// Each run starts from an empty store in a fresh directory under DIR; the median of --runs runs is
// printed per case. --method simhash stores SimHash fingerprints instead of the default sketches;
// --disk-resident makes the stores disk-resident (simhash), and each run then also reopens the
// store and times --queries queries of stored fingerprints with 0-3 bits flipped, on the threads.
// Usage: store_bench DIR [--docs N] [--always-docs N] [--threads T] [--batch B] [--runs R]
//        [--cases batch,always,never] [--method accurate|simhash] [--disk-resident] [--queries Q]
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "neardup/store.h"

namespace {

struct Flags {
  std::string dir;
  size_t docs = 200000;
  size_t always_docs = 2000;
  int threads = 2;
  size_t batch = 256;
  int runs = 3;
  std::string cases = "batch,always,never";
  std::string method = "accurate";
  bool disk_resident = false;
  size_t queries = 200000;
};

struct RunResult {
  double inserts_per_second = 0;
  double open_seconds = 0;
  double queries_per_second = 0;
  double candidates_per_query = 0;
  uint64_t memory_bytes = 0;  // the index's own count after the queries
  uint64_t disk_bytes = 0;
};

neardup::MethodOptions Method(const Flags& flags) {
  neardup::MethodOptions method;
  method.method =
      flags.method == "simhash" ? neardup::DedupMethod::kSimhash : neardup::DedupMethod::kAccurate;
  return method;
}

[[noreturn]] void Die(const neardup::Status& status) {
  std::fprintf(stderr, "store_bench: %s\n", status.ToString().c_str());
  std::exit(1);
}

double Since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Splits [0, n) between the threads and calls fn(begin, end) on each.
template <typename Fn>
void OnThreads(int threads, size_t n, Fn&& fn) {
  std::vector<std::thread> running;
  for (int t = 0; t < threads; ++t) {
    const size_t begin = n * static_cast<size_t>(t) / static_cast<size_t>(threads);
    const size_t end = n * static_cast<size_t>(t + 1) / static_cast<size_t>(threads);
    running.emplace_back([&fn, begin, end] { fn(begin, end); });
  }
  for (auto& thread : running) thread.join();
}

std::string RandomText(std::mt19937_64& rng) {
  std::string text;
  for (int w = 0; w < 40; ++w) {
    uint64_t word = rng() % 20000;
    do {
      text.push_back(static_cast<char>('a' + word % 26));
      word /= 26;
    } while (word != 0);
    text.push_back(' ');
  }
  return text;
}

// One run of `mode` over `documents`, split between the threads.
RunResult Run(const Flags& flags, neardup::FsyncMode mode,
              const std::vector<neardup::SignedDocument>& documents, int run) {
  const std::string dir =
      flags.dir + "/" + std::string(neardup::FsyncModeName(mode)) + "-" + std::to_string(run);
  std::filesystem::remove_all(dir);
  neardup::StoreOptions options;
  options.fsync = mode;
  options.method = Method(flags);
  options.disk_resident = flags.disk_resident;
  options.expected_documents = documents.size();
  auto store = neardup::Store::Open(dir, options);
  if (!store.ok()) Die(store.status());
  RunResult result;
  auto start = std::chrono::steady_clock::now();
  OnThreads(flags.threads, documents.size(), [&](size_t begin, size_t end) {
    const size_t step = mode == neardup::FsyncMode::kBatch ? flags.batch : 1;
    for (size_t i = begin; i < end; i += step) {
      const auto part = std::span(documents).subspan(i, std::min(step, end - i));
      auto results = (*store)->QueryAndInsertBatch(part, neardup::InsertPolicy::kIfNew);
      if (!results.ok()) Die(results.status());
    }
  });
  double seconds = Since(start);
  result.inserts_per_second = static_cast<double>(documents.size()) / seconds;
  const uint64_t syncs = (*store)->Stats().syncs;
  std::fprintf(stderr, "  %s run %d: %zu documents in %.3f s, %llu writes\n",
               neardup::FsyncModeName(mode).data(), run, documents.size(), seconds,
               static_cast<unsigned long long>(syncs));
  if (flags.disk_resident && flags.queries > 0) {
    store->reset();
    start = std::chrono::steady_clock::now();
    store = neardup::Store::Open(dir, neardup::StoreOptions());
    if (!store.ok()) Die(store.status());
    result.open_seconds = Since(start);
    std::vector<uint64_t> candidates(static_cast<size_t>(flags.threads));
    start = std::chrono::steady_clock::now();
    std::atomic<int> next_thread{0};
    OnThreads(flags.threads, flags.queries, [&](size_t begin, size_t end) {
      const int t = next_thread++;
      std::mt19937_64 rng(static_cast<uint64_t>(t) + 7);
      neardup::Signature query;
      neardup::OnlineQueryStats stats;
      for (size_t i = begin; i < end; ++i) {
        query = documents[rng() % documents.size()].signature;
        for (int flips = static_cast<int>(rng() % 4); flips > 0; --flips)
          query.simhash ^= uint64_t{1} << (rng() % 64);
        auto matches = (*store)->QuerySigned(query, &stats);
        if (!matches.ok()) Die(matches.status());
      }
      candidates[static_cast<size_t>(t)] = stats.candidates;
    });
    seconds = Since(start);
    result.queries_per_second = static_cast<double>(flags.queries) / seconds;
    uint64_t total = 0;
    for (uint64_t c : candidates) total += c;
    result.candidates_per_query = static_cast<double>(total) / static_cast<double>(flags.queries);
    const neardup::StoreStats stats = (*store)->Stats();
    result.memory_bytes = stats.index.memory_bytes;
    result.disk_bytes = stats.disk_bytes;
    std::fprintf(stderr,
                 "  reopened in %.3f s; %zu queries in %.3f s (%.1f entries read a query); "
                 "memory %llu bytes, disk %llu bytes\n",
                 result.open_seconds, flags.queries, seconds, result.candidates_per_query,
                 static_cast<unsigned long long>(result.memory_bytes),
                 static_cast<unsigned long long>(result.disk_bytes));
  }
  store->reset();
  std::filesystem::remove_all(dir);
  return result;
}

}  // namespace

int main(int argc, char** argv) {
  Flags flags;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (arg == "--docs")
      flags.docs = std::stoull(next());
    else if (arg == "--always-docs")
      flags.always_docs = std::stoull(next());
    else if (arg == "--threads")
      flags.threads = std::stoi(next());
    else if (arg == "--batch")
      flags.batch = std::stoull(next());
    else if (arg == "--runs")
      flags.runs = std::stoi(next());
    else if (arg == "--cases")
      flags.cases = next();
    else if (arg == "--method")
      flags.method = next();
    else if (arg == "--disk-resident")
      flags.disk_resident = true;
    else if (arg == "--queries")
      flags.queries = std::stoull(next());
    else
      flags.dir = arg;
  }
  if (flags.dir.empty() || flags.threads < 1 || flags.runs < 1 || flags.batch < 1 ||
      (flags.method != "accurate" && flags.method != "simhash")) {
    std::fprintf(
        stderr,
        "usage: store_bench DIR [--docs N] [--always-docs N] [--threads T] [--batch B] [--runs R] "
        "[--cases batch,always,never] [--method accurate|simhash] [--disk-resident] "
        "[--queries Q]\n");
    return 2;
  }
  std::filesystem::create_directories(flags.dir);
  auto signer = neardup::DocumentSigner::Create(Method(flags));
  if (!signer.ok()) Die(signer.status());
  std::vector<neardup::SignedDocument> documents(flags.docs);
  OnThreads(2, documents.size(), [&](size_t begin, size_t end) {
    std::mt19937_64 rng(begin + 1);
    for (size_t i = begin; i < end; ++i) {
      documents[i].id = "doc-" + std::to_string(i);
      documents[i].signature = *(*signer)->Sign(RandomText(rng));
    }
  });
  std::printf("store_bench: %s method%s, %d threads, median of %d runs\n", flags.method.c_str(),
              flags.disk_resident ? ", disk-resident" : "", flags.threads, flags.runs);
  for (neardup::FsyncMode mode :
       {neardup::FsyncMode::kBatch, neardup::FsyncMode::kAlways, neardup::FsyncMode::kNever}) {
    if (flags.cases.find(neardup::FsyncModeName(mode)) == std::string::npos) continue;
    const size_t count = mode == neardup::FsyncMode::kBatch
                             ? documents.size()
                             : std::min(flags.always_docs, documents.size());
    const std::vector<neardup::SignedDocument> part(documents.begin(),
                                                    documents.begin() + static_cast<long>(count));
    std::vector<RunResult> runs;
    for (int run = 0; run < flags.runs; ++run) runs.push_back(Run(flags, mode, part, run));
    auto median = [&](auto field) {
      std::vector<double> values;
      for (const RunResult& r : runs) values.push_back(static_cast<double>(r.*field));
      std::sort(values.begin(), values.end());
      return values[values.size() / 2];
    };
    std::printf("fsync=%-6s %8zu documents%s: %10.0f inserts/s\n",
                neardup::FsyncModeName(mode).data(), count,
                mode == neardup::FsyncMode::kBatch
                    ? (" in batches of " + std::to_string(flags.batch)).c_str()
                    : "",
                median(&RunResult::inserts_per_second));
    if (flags.disk_resident && flags.queries > 0) {
      std::printf(
          "  reopen %.3f s, %10.0f queries/s on %d threads (%.1f entries read a query), memory "
          "%.1f MB, disk %.1f MB\n",
          median(&RunResult::open_seconds), median(&RunResult::queries_per_second), flags.threads,
          median(&RunResult::candidates_per_query), median(&RunResult::memory_bytes) / 1e6,
          median(&RunResult::disk_bytes) / 1e6);
    }
  }
  return 0;
}
