// Fuzz target: the storage entry points: a saved index file, and compressed line input, given bytes
// that may be damaged anywhere. Loading must fail cleanly (an error that says why, no index) or
// give a usable index that round-trips: saved and loaded again, it holds as many fingerprints,
// answers a query the same, and saves to the same bytes. A violation aborts, which libFuzzer and
// the replay both report.
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "neardup/index.h"
#include "neardup/input.h"

namespace {

std::string WriteTemp(const uint8_t* data, size_t size, const char* suffix) {
  static const std::string base = "/tmp/neardup-fuzz-" + std::to_string(::getpid());
  std::string path = base + suffix;
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return "";
  std::fwrite(data, 1, size, f);
  std::fclose(f);
  return path;
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Saves `index`, loads the copy, and aborts unless the copy matches it: the same size, the same
// answers to `queries`, and the same bytes when saved again.
void CheckRoundTrip(const neardup::Index& index, const std::vector<uint64_t>& queries) {
  static const std::string base = "/tmp/neardup-fuzz-" + std::to_string(::getpid());
  const std::string first = base + ".saved1.idx", second = base + ".saved2.idx";
  if (!neardup::SaveIndex(index, first).ok()) std::abort();
  auto copy = neardup::LoadIndex(first);
  if (!copy.ok()) std::abort();
  if ((*copy)->Stats().size != index.Stats().size) std::abort();
  const int k = std::min(3, index.Stats().max_exact_k);
  auto want = index.QueryBatch(queries, k, 1), got = (*copy)->QueryBatch(queries, k, 1);
  if (want.ok() != got.ok()) std::abort();
  if (want.ok() && (want->offsets != got->offsets || want->matches != got->matches)) std::abort();
  if (!neardup::SaveIndex(**copy, second).ok() || ReadAll(first) != ReadAll(second)) std::abort();
  std::remove(first.c_str());
  std::remove(second.c_str());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string index_path = WriteTemp(data, size, ".idx");
  for (bool map_file : {false, true}) {
    neardup::LoadOptions options;
    options.map_file = map_file;
    auto index = neardup::LoadIndex(index_path, options);
    if (!index.ok()) {
      if (index.status().message().empty()) std::abort();
      continue;
    }
    (void)(*index)->Query(0x0123456789abcdefULL, 3);
    (void)(*index)->Stats();
    // Every aligned 8-byte word of the file as a fingerprint: the stored ones are among them.
    std::vector<uint64_t> queries;
    for (size_t at = 0; at + 8 <= size && queries.size() < 4096; at += 8) {
      uint64_t word;
      std::memcpy(&word, data + at, 8);
      queries.push_back(word);
    }
    CheckRoundTrip(**index, queries);
  }
  std::remove(index_path.c_str());
  for (const char* suffix : {".gz", ".zst"}) {
    const std::string path = WriteTemp(data, size, suffix);
    auto reader = neardup::LineReader::Open(path);
    if (reader.ok()) {
      std::string line;
      for (int i = 0; i < 1000; ++i) {
        auto more = (*reader)->ReadLine(&line, 1 << 20);
        if (!more.ok() || !*more) break;
      }
    }
    std::remove(path.c_str());
  }
  return 0;
}
