// End-to-end figures of the online index (neardup/online_index.h) at a given size, for one method:
// signing rate, inserts/s of signed documents, queries/s, check-and-insert rate of texts, and the
// memory per stored document. The documents are synthetic: 40-120 words drawn from a Zipf
// vocabulary of 50,000 words (about 400 bytes), 10% of them lightly edited copies of earlier ones,
// so the index holds N mostly distinct documents (a crawl after dedup), unlike bench/dedup_corpus
// whose clusters hold thousands of copies.
//
// Usage: online_bench [--method accurate|simhash] [--documents N] [--queries Q] [--threads T]
//                     [--sketch-dir DIR] [--save-load PATH]
//        online_bench --load PATH [--method accurate|simhash] [--sketch-dir DIR]
// --sketch-dir keeps the sketches in a file of DIR (OnlineIndexOptions::sketch_directory).
// --save-load saves the index to PATH after the inserts (OnlineIndex::Save) and loads it back
// (OnlineIndex::Load), three times each, from the page cache (the file is read once first, and
// as much memory as the index holds is mapped once: MapFreshMemory), and prints the times, their
// median, the file's size, and whether the loaded index answers the queries as the saved one. The
// file is left at PATH.
// --load only loads PATH (a file of --save-load) three times in this new process, from the page
// cache, as a store opening its snapshot would.
// Prints one "name value unit" line per figure.
#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "neardup/online_index.h"
#include "neardup/output.h"
#include "process_memory.h"

namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// splitmix64: a cheap generator, seeded per document.
struct SplitMix {
  uint64_t state;
  uint64_t operator()() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
};

class TextMaker {
 public:
  TextMaker() {
    SplitMix words_rng{1};
    for (int i = 0; i < 50000; ++i) {
      std::string w;
      const int length = 3 + static_cast<int>(words_rng() % 8);
      for (int c = 0; c < length; ++c) w += static_cast<char>('a' + words_rng() % 26);
      words_.push_back(w);
    }
    // Zipf(1) ranks by inverse CDF, tabulated at 2^20 points.
    std::vector<double> cdf;
    double sum = 0;
    for (int i = 1; i <= 50000; ++i) cdf.push_back(sum += 1.0 / i);
    for (auto& c : cdf) c /= sum;
    ranks_.resize(1 << 20);
    for (size_t i = 0; i < ranks_.size(); ++i) {
      const double u = (static_cast<double>(i) + 0.5) / static_cast<double>(ranks_.size());
      ranks_[i] = static_cast<uint32_t>(std::lower_bound(cdf.begin(), cdf.end(), u) - cdf.begin());
    }
  }
  // Document d; copies (10%) are an earlier document with 1-3 words inserted.
  std::string Text(uint64_t d) const {
    SplitMix seeder{d};
    SplitMix doc_rng{seeder()};  // a stream of its own (seeds d and d + 1 would overlap)
    if (d > 100 && doc_rng() % 10 == 0) {
      std::string base = Text(doc_rng() % d);
      for (int e = 0; e < 1 + static_cast<int>(doc_rng() % 3); ++e) {
        const size_t at = doc_rng() % base.size();
        const size_t space = base.find(' ', at);
        if (space == std::string::npos) continue;
        std::string edited = base.substr(0, space);
        edited += ' ';
        edited += Word(doc_rng);
        edited += base.substr(space);
        base = std::move(edited);
      }
      return base;
    }
    const int n = 40 + static_cast<int>(doc_rng() % 81);
    std::string text;
    for (int i = 0; i < n; ++i) {
      if (i > 0) text += ' ';
      text += Word(doc_rng);
    }
    return text;
  }

 private:
  const std::string& Word(SplitMix& rng) const {
    return words_[std::min<size_t>(ranks_[rng() >> 44], words_.size() - 1)];
  }
  std::vector<std::string> words_;
  std::vector<uint32_t> ranks_;
};

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

std::string Joined(const std::vector<double>& values) {
  std::string out;
  for (double v : values) {
    char figure[32];
    std::snprintf(figure, sizeof figure, "%s%.2f", out.empty() ? "" : " / ", v);
    out += figure;
  }
  return out;
}

void Fail(const char* what, const neardup::Status& status) {
  std::fprintf(stderr, "online_bench: %s: %s\n", what, status.ToString().c_str());
  std::exit(1);
}

// On this project's virtual machine the first pages a process maps after a long while come slowly
// (a plain mmap and MADV_POPULATE_WRITE of 3 GB after the inserts at 10M: 7.8 s, then 0.9 s), which
// would fall on the first load. Maps and unmaps as much as the loaded index will hold, twice,
// printing the times, so that the loads measure the index's own work.
void MapFreshMemory(uint64_t bytes) {
#if defined(MADV_POPULATE_WRITE)
  for (int run = 0; run < 2; ++run) {
    const auto start = Clock::now();
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return;
    madvise(p, bytes, MADV_POPULATE_WRITE);
    munmap(p, bytes);
    std::printf("fresh-memory %.2f s to map %.1f GB (run %d)\n", Seconds(start),
                static_cast<double>(bytes) / 1e9, run + 1);
  }
#else
  (void)bytes;
#endif
}

// Reads the file once, into the page cache (the output bypasses it where it can); its size.
uint64_t ReadWhole(const std::string& path) {
  uint64_t bytes = 0;
  std::ifstream in(path, std::ios::binary);
  std::vector<char> buffer(size_t{8} << 20);
  while (in.read(buffer.data(), static_cast<std::streamsize>(buffer.size())) || in.gcount() > 0)
    bytes += static_cast<uint64_t>(in.gcount());
  return bytes;
}

// Save and Load timed three times each (Load from the page cache), and the loaded index checked
// against the saved one on the queries.
void SaveAndLoad(const neardup::OnlineIndex& index, const neardup::OnlineIndexOptions& options,
                 const std::string& path, std::span<const neardup::Signature> queries) {
  std::vector<double> save_seconds, load_seconds;
  for (int run = 0; run < 3; ++run) {
    const auto start = Clock::now();
    neardup::OutputFile out;
    neardup::Status status = out.Open(path);
    if (status.ok()) status = index.Save(&out);
    if (status.ok()) status = out.Commit();
    if (!status.ok()) Fail("save", status);
    save_seconds.push_back(Seconds(start));
  }
  const uint64_t file_bytes = ReadWhole(path);
  MapFreshMemory(index.Stats().memory_bytes);
  const uint64_t documents = index.Stats().documents;
  std::printf("save %.2f s (median of %s s; %llu bytes, %.1f bytes/document, %.0f MB/s)\n",
              Median(save_seconds), Joined(save_seconds).c_str(),
              static_cast<unsigned long long>(file_bytes),
              static_cast<double>(file_bytes) / static_cast<double>(documents),
              static_cast<double>(file_bytes) / 1e6 / Median(save_seconds));
  std::unique_ptr<neardup::OnlineIndex> loaded;
  for (int run = 0; run < 3; ++run) {
    loaded.reset();
    const auto start = Clock::now();
    auto opened = neardup::OnlineIndex::Load(path, options);
    if (!opened.ok()) Fail("load", opened.status());
    load_seconds.push_back(Seconds(start));
    loaded = std::move(*opened);
  }
  std::printf("load %.2f s (median of %s s; from the page cache, %.0f MB/s, %.0f documents/s)\n",
              Median(load_seconds), Joined(load_seconds).c_str(),
              static_cast<double>(file_bytes) / 1e6 / Median(load_seconds),
              static_cast<double>(documents) / Median(load_seconds));
  uint64_t differ = 0;
  for (const auto& query : queries)
    differ += *index.QuerySigned(query) != *loaded->QuerySigned(query);
  const neardup::OnlineIndexStats a = index.Stats(), b = loaded->Stats();
  std::printf(
      "load-check %llu of %zu answers differ; documents %llu / %llu, memory %.1f / %.1f "
      "bytes/document (saved / loaded)\n",
      static_cast<unsigned long long>(differ), queries.size(),
      static_cast<unsigned long long>(a.documents), static_cast<unsigned long long>(b.documents),
      static_cast<double>(a.memory_bytes) / static_cast<double>(a.documents),
      static_cast<double>(b.memory_bytes) / static_cast<double>(b.documents));
}

// --load: three loads of an existing file.
int LoadOnly(const neardup::OnlineIndexOptions& options, const std::string& path) {
  const uint64_t file_bytes = ReadWhole(path);
  std::vector<double> seconds;
  // (No MapFreshMemory: the first load shows what a process opening its snapshot pays.)
  uint64_t documents = 0;
  for (int run = 0; run < 3; ++run) {
    const auto start = Clock::now();
    auto loaded = neardup::OnlineIndex::Load(path, options);
    if (!loaded.ok()) Fail("load", loaded.status());
    seconds.push_back(Seconds(start));
    documents = (*loaded)->Stats().documents;
  }
  std::printf(
      "load %.2f s (median of %s s; a new process, from the page cache; %llu bytes, %llu "
      "documents)\n",
      Median(seconds), Joined(seconds).c_str(), static_cast<unsigned long long>(file_bytes),
      static_cast<unsigned long long>(documents));
  return 0;
}

template <typename Fn>
double Parallel(int threads, uint64_t n, Fn fn) {
  const auto start = Clock::now();
  std::atomic<uint64_t> next{0};
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&] {
      while (true) {
        const uint64_t begin = next.fetch_add(1024);
        if (begin >= n) return;
        for (uint64_t i = begin; i < std::min(n, begin + 1024); ++i) fn(i);
      }
    });
  }
  for (auto& w : workers) w.join();
  return Seconds(start);
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // each figure as soon as it is measured
  std::string method = "accurate";
  uint64_t documents = 1000000, queries = 200000;
  int threads = 2;
  std::string sketch_dir, save_path, load_path;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--method")
      method = argv[i + 1];
    else if (flag == "--documents")
      documents = std::strtoull(argv[i + 1], nullptr, 10);
    else if (flag == "--queries")
      queries = std::strtoull(argv[i + 1], nullptr, 10);
    else if (flag == "--threads")
      threads = std::atoi(argv[i + 1]);
    else if (flag == "--sketch-dir")
      sketch_dir = argv[i + 1];
    else if (flag == "--save-load")
      save_path = argv[i + 1];
    else if (flag == "--load")
      load_path = argv[i + 1];
    else {
      std::fprintf(stderr, "online_bench: unknown option %s\n", argv[i]);
      return 2;
    }
  }
  neardup::OnlineIndexOptions options;
  auto parsed = neardup::ParseDedupMethod(method);
  if (!parsed.ok()) {
    std::fprintf(stderr, "online_bench: %s\n", parsed.status().ToString().c_str());
    return 2;
  }
  options.method.method = *parsed;
  options.expected_documents = documents;
  options.sketch_directory = sketch_dir;
  if (!load_path.empty()) return LoadOnly(options, load_path);
  auto created = neardup::OnlineIndex::Create(options);
  if (!created.ok()) {
    std::fprintf(stderr, "online_bench: %s\n", created.status().ToString().c_str());
    return 1;
  }
  auto& index = **created;
  const neardup::DocumentSigner& signer = index.signer();

  // Sign every document (and the queries: documents N.. N+Q, half of them copies of stored ones).
  const uint64_t total = documents + queries;
  std::vector<neardup::Signature> signatures(total);
  uint64_t bytes = 0;
  std::atomic<uint64_t> text_bytes{0};
  const TextMaker maker;
  // Texts are made for a block of documents, then signed: only signing is timed.
  std::atomic<int64_t> signing_ns{0};
  Parallel(threads, (total + 1023) / 1024, [&](uint64_t block) {
    thread_local neardup::DocumentSigner::Session session(signer);
    std::vector<std::string> texts;
    for (uint64_t d = block * 1024; d < std::min(total, (block + 1) * 1024); ++d)
      texts.push_back(maker.Text(d));
    const auto start = Clock::now();
    for (size_t i = 0; i < texts.size(); ++i) {
      text_bytes += texts[i].size();
      if (!session.Sign(texts[i], &signatures[block * 1024 + i]).ok()) std::abort();
    }
    signing_ns +=
        std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start).count();
  });
  const double sign_seconds = static_cast<double>(signing_ns.load()) / 1e9 / threads;
  bytes = text_bytes.load();
  std::printf("sign %.0f documents/s (%d threads, %.1f MB/s, %.0f bytes/document)\n",
              total / sign_seconds, threads, bytes / 1e6 / sign_seconds,
              static_cast<double>(bytes) / total);

  const uint64_t rss_before = neardup::bench::ResidentBytes();
  auto start = Clock::now();
  for (uint64_t d = 0; d < documents; ++d) {
    if (!index.InsertSigned(std::to_string(d), signatures[d]).ok()) std::abort();
  }
  const double insert_seconds = Seconds(start);
  const uint64_t rss_after = neardup::bench::ResidentBytes();
  const neardup::OnlineIndexStats stats = index.Stats();
  std::printf("insert %.0f documents/s (1 thread, signed, %llu documents)\n",
              documents / insert_seconds, static_cast<unsigned long long>(documents));
  std::printf(
      "memory %.1f bytes/document (index's own count), %.1f bytes/document (resident growth)\n",
      static_cast<double>(stats.memory_bytes) / documents,
      static_cast<double>(rss_after - rss_before) / documents);

  if (!save_path.empty()) {
    SaveAndLoad(index, options, save_path, std::span(signatures).subspan(documents));
  }

  std::atomic<uint64_t> matched{0};
  const double query_seconds = Parallel(threads, queries, [&](uint64_t q) {
    auto result = index.QuerySigned(signatures[documents + q]);
    if (!result.ok()) std::abort();
    matched += result->size();
  });
  const neardup::OnlineIndexStats after = index.Stats();
  std::printf(
      "query %.0f queries/s (%d threads, signed, at %llu documents; %.2f matches, %.1f candidates, "
      "%.0f lookups per query)\n",
      queries / query_seconds, threads, static_cast<unsigned long long>(documents),
      static_cast<double>(matched.load()) / queries,
      static_cast<double>(after.queries.candidates) / after.queries.queries,
      static_cast<double>(after.queries.lookups) / after.queries.queries);

  // Texts checked and inserted (kIfNew) by `threads` threads, signing included.
  std::atomic<uint64_t> inserted{0};
  std::vector<std::string> texts(queries);
  Parallel(threads, queries, [&](uint64_t q) { texts[q] = maker.Text(documents + queries + q); });
  const double check_seconds = Parallel(threads, queries, [&](uint64_t q) {
    std::string id = std::to_string(q);
    id.insert(id.begin(), 'q');
    auto result = index.QueryAndInsert(id, texts[q], neardup::InsertPolicy::kIfNew);
    if (!result.ok()) std::abort();
    inserted += result->inserted;
  });
  std::printf("check-and-insert %.0f texts/s (%d threads, signing included; %llu of %llu new)\n",
              queries / check_seconds, threads, static_cast<unsigned long long>(inserted.load()),
              static_cast<unsigned long long>(queries));
  return 0;
}
