// Signing throughput of one thread, in process: the native side of bench/suites/wasm.sh, which runs
// the WebAssembly build's same loop (bench/wasm/sign_bench.mjs) beside it.
// Usage: sign_throughput SETTINGS_LINE FILE ROUNDS
//   Reads FILE's lines (one document each) into memory, then signs them all ROUNDS times with one
//   DocumentSigner::Session; prints one line per round: "MB/s documents checksum".
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "neardup/method.h"

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s SETTINGS_LINE FILE ROUNDS\n", argv[0]);
    return 2;
  }
  auto options = neardup::ParseSettingsLine(argv[1]);
  if (!options.ok()) {
    std::fprintf(stderr, "sign_throughput: %s\n", options.status().ToString().c_str());
    return 1;
  }
  auto signer = neardup::DocumentSigner::Create(*options);
  if (!signer.ok()) {
    std::fprintf(stderr, "sign_throughput: %s\n", signer.status().ToString().c_str());
    return 1;
  }
  std::ifstream in(argv[2]);
  if (!in) {
    std::fprintf(stderr, "sign_throughput: cannot read %s\n", argv[2]);
    return 1;
  }
  std::vector<std::string> documents;
  size_t bytes = 0;
  for (std::string line; std::getline(in, line);) {
    bytes += line.size();
    documents.push_back(std::move(line));
  }
  neardup::DocumentSigner::Session session(**signer);
  neardup::Signature signature;
  const int rounds = std::atoi(argv[3]);
  for (int round = 0; round < rounds; ++round) {
    uint64_t checksum = 0;
    const auto start = std::chrono::steady_clock::now();
    for (const std::string& document : documents) {
      if (!session.Sign(document, &signature).ok()) return 1;
      checksum += signature.simhash + (signature.band_keys.empty() ? 0 : signature.band_keys[0]);
    }
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("%.2f %zu %llu\n", static_cast<double>(bytes) / seconds / 1e6, documents.size(),
                static_cast<unsigned long long>(checksum));
  }
  return 0;
}
