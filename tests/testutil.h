// Helpers shared by neardup's tests: seeded random text and byte generators, temporary files.
#ifndef NEARDUP_TESTS_TESTUTIL_H_
#define NEARDUP_TESTS_TESTUTIL_H_

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

namespace neardup::testing {

// True when the tests run under AddressSanitizer (make test-asan sets it): use smaller sizes.
inline bool Sanitized() { return std::getenv("NEARDUP_SANITIZED") != nullptr; }

// A text of `words` words drawn from a fixed vocabulary of `vocabulary` lower-case words.
inline std::vector<std::string> RandomWords(std::mt19937_64& rng, size_t words,
                                            size_t vocabulary = 5000) {
  std::vector<std::string> out;
  out.reserve(words);
  for (size_t i = 0; i < words; ++i) {
    uint64_t w = rng() % vocabulary;
    std::string word;
    do {
      word.push_back(static_cast<char>('a' + w % 26));
      w /= 26;
    } while (w != 0);
    word += "x";
    out.push_back(word);
  }
  return out;
}

inline std::string Join(const std::vector<std::string>& words, const std::string& sep = " ") {
  std::string out;
  for (size_t i = 0; i < words.size(); ++i) {
    if (i) out += sep;
    out += words[i];
  }
  return out;
}

// Random bytes biased towards UTF-8 structure: ASCII, valid multi-byte characters (CJK, accented,
// combining marks, full-width, emoji) and, when `invalid` is set, stray bytes.
inline std::string RandomUtf8ish(std::mt19937_64& rng, size_t pieces, bool invalid) {
  static const char* const kPieces[] = {"a",
                                        "B",
                                        " ",
                                        "Z",
                                        "7",
                                        ",",
                                        "\n",
                                        "\t",
                                        "e\xCC\x81",
                                        "\xC3\xA9",
                                        "\xCC\x81",
                                        "\xE4\xB8\xAD",
                                        "\xE6\x96\x87",
                                        "\xE3\x80\x82",
                                        "\xEF\xBC\xA1",
                                        "\xEF\xBC\x91",
                                        "\xE3\x81\x82",
                                        "\xE3\x82\xA2",
                                        "\xF0\x9F\x98\x80",
                                        "\xE2\x80\x8B",
                                        "\xEF\xAC\x81",
                                        "\xC3\x9F",
                                        "\xE1\x84\x80",
                                        "\xE1\x85\xA1",
                                        "\xE2\x84\xAA",
                                        "\xD0\x96",
                                        "\xD9\x85",
                                        "\xE0\xA4\x95\xE0\xA5\x8D"};
  static const char* const kInvalid[] = {
      "\xFF", "\x80", "\xC0\x80", "\xED\xA0\x80", "\xE4\xB8", "\xF4\x90\x80\x80", "\xF0\x9F\x98"};
  std::string out;
  for (size_t i = 0; i < pieces; ++i) {
    if (invalid && rng() % 16 == 0) {
      out += kInvalid[rng() % (sizeof(kInvalid) / sizeof(kInvalid[0]))];
    } else {
      out += kPieces[rng() % (sizeof(kPieces) / sizeof(kPieces[0]))];
    }
  }
  return out;
}

// A file in a fresh temporary directory, removed with the object.
class TempDir {
 public:
  TempDir() {
    std::string templ = (std::filesystem::temp_directory_path() / "neardup-test-XXXXXX").string();
    path_ = ::mkdtemp(templ.data());
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  std::string File(const std::string& name, const std::string& contents) const {
    std::string p = (std::filesystem::path(path_) / name).string();
    std::ofstream(p, std::ios::binary) << contents;
    return p;
  }
  std::string Path(const std::string& name) const {
    return (std::filesystem::path(path_) / name).string();
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace neardup::testing

#endif  // NEARDUP_TESTS_TESTUTIL_H_
