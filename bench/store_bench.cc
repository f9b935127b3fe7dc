// Durable inserts per second into a store (neardup/store.h), documents signed beforehand.
// Cases:
//   batch   --fsync batch: each thread QueryAndInsertBatch(kIfNew) of --batch documents at a time
//   always  --fsync always: each thread QueryAndInsertSigned(kIfNew), one sync per document
//   never   --fsync never: as always, without syncs
// Each run starts from an empty store in a fresh directory under DIR; the median of --runs runs is
// printed per case.
// Usage: store_bench DIR [--docs N] [--always-docs N] [--threads T] [--batch B] [--runs R]
//        [--cases batch,always,never]
#include <algorithm>
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
};

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

// Inserts/s of one run of `mode` over `documents`, split between the threads.
double Run(const Flags& flags, neardup::FsyncMode mode,
           const std::vector<neardup::SignedDocument>& documents, int run) {
  const std::string dir =
      flags.dir + "/" + std::string(neardup::FsyncModeName(mode)) + "-" + std::to_string(run);
  std::filesystem::remove_all(dir);
  neardup::StoreOptions options;
  options.fsync = mode;
  options.expected_documents = documents.size();
  auto store = neardup::Store::Open(dir, options);
  if (!store.ok()) {
    std::fprintf(stderr, "store_bench: %s\n", store.status().ToString().c_str());
    std::exit(1);
  }
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (int t = 0; t < flags.threads; ++t) {
    threads.emplace_back([&, t] {
      const size_t begin =
          documents.size() * static_cast<size_t>(t) / static_cast<size_t>(flags.threads);
      const size_t end =
          documents.size() * static_cast<size_t>(t + 1) / static_cast<size_t>(flags.threads);
      const size_t step = mode == neardup::FsyncMode::kBatch ? flags.batch : 1;
      for (size_t i = begin; i < end; i += step) {
        const auto part = std::span(documents).subspan(i, std::min(step, end - i));
        auto results = (*store)->QueryAndInsertBatch(part, neardup::InsertPolicy::kIfNew);
        if (!results.ok()) {
          std::fprintf(stderr, "store_bench: %s\n", results.status().ToString().c_str());
          std::exit(1);
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const uint64_t syncs = (*store)->Stats().syncs;
  store->reset();
  std::filesystem::remove_all(dir);
  std::fprintf(stderr, "  %s run %d: %zu documents in %.3f s, %llu writes\n",
               neardup::FsyncModeName(mode).data(), run, documents.size(), seconds,
               static_cast<unsigned long long>(syncs));
  return static_cast<double>(documents.size()) / seconds;
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
    else
      flags.dir = arg;
  }
  if (flags.dir.empty() || flags.threads < 1 || flags.runs < 1 || flags.batch < 1) {
    std::fprintf(
        stderr,
        "usage: store_bench DIR [--docs N] [--always-docs N] [--threads T] [--batch B] [--runs R] "
        "[--cases batch,always,never]\n");
    return 2;
  }
  std::filesystem::create_directories(flags.dir);
  auto signer = neardup::DocumentSigner::Create(neardup::MethodOptions());
  if (!signer.ok()) return 1;
  std::mt19937_64 rng(1);
  std::vector<neardup::SignedDocument> documents(flags.docs);
  for (size_t i = 0; i < documents.size(); ++i) {
    documents[i].id = "doc-" + std::to_string(i);
    documents[i].signature = *(*signer)->Sign(RandomText(rng));
  }
  std::printf("store_bench: accurate method, %d threads, median of %d runs\n", flags.threads,
              flags.runs);
  for (neardup::FsyncMode mode :
       {neardup::FsyncMode::kBatch, neardup::FsyncMode::kAlways, neardup::FsyncMode::kNever}) {
    if (flags.cases.find(neardup::FsyncModeName(mode)) == std::string::npos) continue;
    const size_t count = mode == neardup::FsyncMode::kBatch
                             ? documents.size()
                             : std::min(flags.always_docs, documents.size());
    const std::vector<neardup::SignedDocument> part(documents.begin(),
                                                    documents.begin() + static_cast<long>(count));
    std::vector<double> rates;
    for (int run = 0; run < flags.runs; ++run) rates.push_back(Run(flags, mode, part, run));
    std::sort(rates.begin(), rates.end());
    std::printf("fsync=%-6s %8zu documents%s: %10.0f inserts/s\n",
                neardup::FsyncModeName(mode).data(), count,
                mode == neardup::FsyncMode::kBatch
                    ? (" in batches of " + std::to_string(flags.batch)).c_str()
                    : "",
                rates[rates.size() / 2]);
  }
  return 0;
}
