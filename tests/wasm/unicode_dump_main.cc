// Prints the lines of wasm/unicode_dump.h for the code points [FIRST, LAST] (decimal), by the
// native build (ICU): what tests/wasm/unicode_test.mjs compares the WebAssembly module with.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "unicode_dump.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s FIRST LAST\n", argv[0]);
    return 2;
  }
  const std::string out =
      neardup::wasm::UnicodeDump(static_cast<uint32_t>(std::strtoul(argv[1], nullptr, 10)),
                                 static_cast<uint32_t>(std::strtoul(argv[2], nullptr, 10)));
  if (std::fwrite(out.data(), 1, out.size(), stdout) != out.size() || std::fflush(stdout) != 0) {
    std::perror("unicode_dump: write");
    return 1;
  }
  return 0;
}
