// Fuzz target: the storage entry points: a saved index file, and compressed line input, given bytes
// that may be damaged anywhere. Loading must fail cleanly or give a usable index, never crash.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

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

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string index_path = WriteTemp(data, size, ".idx");
  for (bool map_file : {false, true}) {
    neardup::LoadOptions options;
    options.map_file = map_file;
    auto index = neardup::LoadIndex(index_path, options);
    if (index.ok()) {
      (void)(*index)->Query(0x0123456789abcdefULL, 3);
      (void)(*index)->Stats();
    }
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
