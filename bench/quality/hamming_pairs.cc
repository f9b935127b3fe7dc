// hamming_pairs: every pair of fingerprints within Hamming distance k, by exhaustive comparison
// (the exact all-pairs reference the harness applies to a method that only writes fingerprints).
//
// Input: "id<TAB>fingerprint" lines (16 hex digits; `neardup hash` writes them); the id ends at the
// first tab. Output: "id_a<TAB>id_b<TAB>distance" for every pair with distance <= k, a before b in
// input order. Fingerprints marked empty are not special: a method that gives every short text the
// same fingerprint is charged for the pairs it makes.
//
// With --histogram FILE it also writes "distance<TAB>pairs" for distances 0..64 over all pairs.
//
// Usage: hamming_pairs [-k K] [--histogram FILE] < fingerprints.tsv > pairs.tsv
#include <array>
#include <bit>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

int main(int argc, char** argv) {
  int k = 12;
  const char* histogram_path = nullptr;
  for (int i = 1; i < argc; i += 2) {
    const std::string_view arg = argv[i];
    if (i + 1 < argc && arg == "-k") {
      k = std::atoi(argv[i + 1]);
    } else if (i + 1 < argc && arg == "--histogram") {
      histogram_path = argv[i + 1];
    } else {
      std::fprintf(stderr,
                   "usage: hamming_pairs [-k K] [--histogram FILE] < fingerprints > pairs\n");
      return 2;
    }
  }
  std::ios::sync_with_stdio(false);
  std::vector<std::string> ids;
  std::vector<uint64_t> codes;
  size_t line_number = 0;
  for (std::string line; std::getline(std::cin, line);) {
    ++line_number;
    const size_t tab = line.find('\t');
    if (tab == std::string::npos) {
      std::fprintf(stderr, "hamming_pairs: line %zu: expected id<TAB>fingerprint\n", line_number);
      return 1;
    }
    ids.push_back(line.substr(0, tab));
    const size_t end = line.find('\t', tab + 1);
    codes.push_back(std::strtoull(line.substr(tab + 1, end - tab - 1).c_str(), nullptr, 16));
  }
  std::string out;
  std::array<uint64_t, 65> histogram{};
  for (size_t a = 0; a < codes.size(); ++a) {
    const uint64_t code = codes[a];
    for (size_t b = a + 1; b < codes.size(); ++b) {
      const int distance = std::popcount(code ^ codes[b]);
      ++histogram[distance];
      if (distance > k) continue;
      out.append(ids[a]).push_back('\t');
      out.append(ids[b]).push_back('\t');
      out.append(std::to_string(distance)).push_back('\n');
      if (out.size() > (1 << 20)) {
        std::fwrite(out.data(), 1, out.size(), stdout);
        out.clear();
      }
    }
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  if (histogram_path != nullptr) {
    FILE* file = std::fopen(histogram_path, "w");
    if (file == nullptr) {
      std::fprintf(stderr, "hamming_pairs: cannot write %s\n", histogram_path);
      return 1;
    }
    for (int d = 0; d <= 64; ++d) {
      std::fprintf(file, "%d\t%llu\n", d, static_cast<unsigned long long>(histogram[d]));
    }
    std::fclose(file);
  }
  return 0;
}
