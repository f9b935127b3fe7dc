// The Redis backend of the index store (neardup/index_store.h) on a running Redis (Cluster).
// Cases, in order, on one fresh prefix:
//   insert   pipelined bulk insert (IndexStore::InsertBatch of --batch documents at a time) of
//            --docs documents signed beforehand (the signing is timed apart)
//   memory   the servers' used_memory after the insert, less before, per stored document
//   compact  IndexStore::Compact (buckets rewritten at their exact size), and the memory after it
//   query    --clients processes, each with its own connections, query --queries stored documents'
//            signatures one at a time (QuerySigned): latency percentiles over all, and the rate
// Documents: 60-160 words from a 20,000-word vocabulary, one in ten a lightly edited copy.
// Usage: redis_bench LOCATION [--docs N] [--batch B] [--method accurate|simhash] [--queries Q]
//        [--clients C] [--threads T]
// LOCATION is redis://HOST:PORT/PREFIX or redis-cluster://HOST:PORT,.../PREFIX; the prefix should
// be fresh (the bench refuses one that holds documents).
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "neardup/index_store.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Flags {
  std::string location;
  size_t docs = 1000000;
  size_t batch = 20000;
  std::string method = "accurate";
  size_t queries = 20000;
  int clients = 2;
  int threads = 2;
};

[[noreturn]] void Die(const std::string& message) {
  std::fprintf(stderr, "redis_bench: %s\n", message.c_str());
  std::exit(1);
}

double Seconds(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

Flags ParseFlags(int argc, char** argv) {
  Flags flags;
  if (argc < 2) Die("usage: redis_bench LOCATION [--docs N] [--batch B] [--method M] ...");
  flags.location = argv[1];
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string name = argv[i];
    const std::string value = argv[i + 1];
    if (name == "--docs") {
      flags.docs = std::stoull(value);
    } else if (name == "--batch") {
      flags.batch = std::stoull(value);
    } else if (name == "--method") {
      flags.method = value;
    } else if (name == "--queries") {
      flags.queries = std::stoull(value);
    } else if (name == "--clients") {
      flags.clients = std::stoi(value);
    } else if (name == "--threads") {
      flags.threads = std::stoi(value);
    } else {
      Die("unknown flag " + name);
    }
  }
  return flags;
}

std::vector<std::string> Vocabulary() {
  std::mt19937_64 rng(1);
  std::vector<std::string> words;
  for (int i = 0; i < 20000; ++i) {
    std::string w;
    const int length = 3 + static_cast<int>(rng() % 8);
    for (int c = 0; c < length; ++c) w += static_cast<char>('a' + rng() % 26);
    words.push_back(w);
  }
  return words;
}

// Document i, the same on every call.
std::string Text(const std::vector<std::string>& words, size_t i) {
  std::mt19937_64 rng(i % 10 == 9 ? i - 1 : i);
  const size_t n = 60 + rng() % 100;
  std::vector<std::string> chosen;
  for (size_t w = 0; w < n; ++w) chosen.push_back(words[rng() % words.size()]);
  if (i % 10 == 9) chosen[i % chosen.size()] = "edited";  // a copy of document i - 1, edited
  std::string text;
  for (const auto& w : chosen) {
    if (!text.empty()) text += ' ';
    text += w;
  }
  return text;
}

std::string Id(size_t i) {
  std::string id = "doc-";
  id.append(std::to_string(i));
  return id;
}

neardup::IndexStoreOptions Options(const Flags& flags) {
  neardup::IndexStoreOptions options;
  neardup::MethodOptions method;
  method.method =
      flags.method == "simhash" ? neardup::DedupMethod::kSimhash : neardup::DedupMethod::kAccurate;
  options.store.method = method;
  options.store.expected_documents = flags.docs;
  return options;
}

// Each child process queries its share and writes its latencies (microseconds) to `fd`.
void QueryChild(const Flags& flags, const std::vector<neardup::Signature>& signatures, int child,
                int fd) {
  auto store = neardup::IndexStore::Open(flags.location, Options(flags));
  if (!store.ok()) Die(store.status().ToString());
  std::mt19937_64 rng(static_cast<uint64_t>(child) + 100);
  std::vector<float> latencies;
  const size_t n = flags.queries / static_cast<size_t>(flags.clients);
  for (size_t q = 0; q < n; ++q) {
    const auto& s = signatures[rng() % signatures.size()];
    const auto start = Clock::now();
    auto matches = (*store)->QuerySigned(s);
    if (!matches.ok()) Die(matches.status().ToString());
    latencies.push_back(static_cast<float>(Seconds(start) * 1e6));
  }
  const char* p = reinterpret_cast<const char*>(latencies.data());
  size_t left = latencies.size() * sizeof(float);
  while (left > 0) {
    const ssize_t w = write(fd, p, left);
    if (w <= 0) Die("cannot write latencies");
    p += w;
    left -= static_cast<size_t>(w);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const Flags flags = ParseFlags(argc, argv);
  auto store = neardup::IndexStore::Open(flags.location, Options(flags));
  if (!store.ok()) Die(store.status().ToString());
  if ((*store)->Stats().index.documents != 0) Die(flags.location + " already holds documents");
  const std::vector<std::string> words = Vocabulary();
  // Signing, on --threads threads (timed apart from the insert).
  auto start = Clock::now();
  std::vector<neardup::SignedDocument> documents(flags.docs);
  std::uint64_t text_bytes = 0;
  {
    std::vector<std::thread> threads;
    std::vector<uint64_t> bytes(static_cast<size_t>(flags.threads), 0);
    for (int t = 0; t < flags.threads; ++t) {
      threads.emplace_back([&, t] {
        neardup::DocumentSigner::Session session((*store)->signer());
        for (size_t i = static_cast<size_t>(t); i < flags.docs;
             i += static_cast<size_t>(flags.threads)) {
          const std::string text = Text(words, i);
          bytes[static_cast<size_t>(t)] += text.size();
          documents[i].id = Id(i);
          if (!session.Sign(text, &documents[i].signature).ok()) Die("cannot sign");
        }
      });
    }
    for (auto& t : threads) t.join();
    for (uint64_t b : bytes) text_bytes += b;
  }
  const double sign_seconds = Seconds(start);
  const uint64_t memory_before = (*store)->Stats().remote_memory_bytes;
  start = Clock::now();
  for (size_t i = 0; i < documents.size(); i += flags.batch) {
    const size_t n = std::min(flags.batch, documents.size() - i);
    auto r = (*store)->InsertBatch(std::span(documents).subspan(i, n));
    if (!r.ok()) Die(r.status().ToString());
  }
  const double insert_seconds = Seconds(start);
  const neardup::StoreStats stats = (*store)->Stats();
  const double per_document =
      static_cast<double>(stats.remote_memory_bytes - memory_before) / stats.index.documents;
  std::printf("documents %zu (%.1f MB of text), signed in %.2f s on %d threads\n", flags.docs,
              text_bytes / 1e6, sign_seconds, flags.threads);
  std::printf("insert %.2f s: %.0f documents/s (batches of %zu)\n", insert_seconds,
              flags.docs / insert_seconds, flags.batch);
  std::printf("memory used_memory +%.1f MB: %.1f bytes/document\n",
              (stats.remote_memory_bytes - memory_before) / 1e6, per_document);
  // The buckets rewritten at their exact size (IndexStore::Compact).
  auto compacted = (*store)->Compact();
  if (!compacted.ok()) Die(compacted.status().ToString());
  std::printf("compact %.2f s: %llu buckets, used_memory +%.1f MB: %.1f bytes/document\n",
              compacted->seconds, static_cast<unsigned long long>(compacted->buckets),
              (compacted->memory_after - memory_before) / 1e6,
              static_cast<double>(compacted->memory_after - memory_before) / stats.index.documents);
  // Queries from separate processes.
  std::vector<neardup::Signature> signatures;
  for (size_t i = 0; i < documents.size(); i += 7) signatures.push_back(documents[i].signature);
  documents.clear();
  documents.shrink_to_fit();
  store->reset();
  std::vector<int> fds;
  std::vector<pid_t> pids;
  start = Clock::now();
  for (int c = 0; c < flags.clients; ++c) {
    int pipe_fds[2];
    if (pipe(pipe_fds) != 0) Die("pipe");
    const pid_t pid = fork();
    if (pid == 0) {
      close(pipe_fds[0]);
      QueryChild(flags, signatures, c, pipe_fds[1]);
      close(pipe_fds[1]);
      _exit(0);
    }
    close(pipe_fds[1]);
    fds.push_back(pipe_fds[0]);
    pids.push_back(pid);
  }
  std::vector<float> latencies;
  for (int fd : fds) {
    float buffer[1024];
    ssize_t r;
    std::string rest;
    while ((r = read(fd, buffer, sizeof(buffer))) > 0) {
      rest.append(reinterpret_cast<const char*>(buffer), static_cast<size_t>(r));
    }
    const size_t n = rest.size() / sizeof(float);
    const auto* values = reinterpret_cast<const float*>(rest.data());
    latencies.insert(latencies.end(), values, values + n);
    close(fd);
  }
  for (pid_t pid : pids) {
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) Die("a query process failed");
  }
  const double query_seconds = Seconds(start);
  std::sort(latencies.begin(), latencies.end());
  auto percentile = [&](double p) {
    return latencies.empty() ? 0.0 : latencies[static_cast<size_t>(p * (latencies.size() - 1))];
  };
  std::printf("query %zu from %d processes: %.0f queries/s, p50 %.3f ms, p99 %.3f ms\n",
              latencies.size(), flags.clients, latencies.size() / query_seconds,
              percentile(0.5) / 1000, percentile(0.99) / 1000);
  return 0;
}
