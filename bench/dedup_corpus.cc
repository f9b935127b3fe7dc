// Writes a synthetic corpus for the dedup benchmark: N documents made of real paragraphs (one per
// line of SOURCE), each drawn at random and, for a share of them, edited (words deleted, swapped or
// replaced) so that the corpus holds realistic near-duplicates. Deterministic for a seed.
//
// Usage: dedup_corpus SOURCE N [SEED] [chars] > corpus.txt
// With "chars" the units edited are characters (for Chinese, which has no spaces), not words.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: dedup_corpus SOURCE N [SEED] > corpus.txt\n");
    return 2;
  }
  std::ifstream in(argv[1]);
  const bool chars = argc > 4 && std::string(argv[4]) == "chars";
  const std::string separator = chars ? "" : " ";
  std::vector<std::vector<std::string>> paragraphs;
  std::string line;
  while (std::getline(in, line)) {
    std::vector<std::string> words;
    size_t start = 0;
    while (start < line.size()) {
      size_t end;
      if (chars) {  // one UTF-8 character
        const auto lead = static_cast<unsigned char>(line[start]);
        end = start + (lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4);
        words.push_back(line.substr(start, end - start));
        start = end;
        continue;
      }
      end = line.find(' ', start);
      if (end == std::string::npos) end = line.size();
      if (end > start) words.push_back(line.substr(start, end - start));
      start = end + 1;
    }
    if (words.size() >= (chars ? 40u : 8u)) paragraphs.push_back(std::move(words));
  }
  if (paragraphs.empty()) {
    std::fprintf(stderr, "dedup_corpus: no paragraphs of 8+ words in %s\n", argv[1]);
    return 1;
  }
  const unsigned long long n = std::strtoull(argv[2], nullptr, 10);
  std::mt19937_64 rng(argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 1);
  std::string out;
  for (unsigned long long i = 0; i < n; ++i) {
    // Two paragraphs per document (about 300 bytes), a third of documents edited.
    std::vector<std::string> words = paragraphs[rng() % paragraphs.size()];
    const auto& second = paragraphs[rng() % paragraphs.size()];
    words.insert(words.end(), second.begin(), second.end());
    if (rng() % 3 == 0) {
      for (int edits = 1 + static_cast<int>(rng() % 3); edits > 0; --edits) {
        const size_t at = rng() % words.size();
        switch (rng() % 3) {
          case 0:
            words.erase(words.begin() + static_cast<std::ptrdiff_t>(at));
            break;
          case 1:
            std::swap(words[at], words[rng() % words.size()]);
            break;
          default:
            words[at] = chars ? "改" : "edit" + std::to_string(rng() % 1000);
            break;
        }
        if (words.empty()) words.push_back("empty");
      }
    }
    for (size_t w = 0; w < words.size(); ++w) {
      if (w) out.append(separator);
      out.append(words[w]);
    }
    out.push_back('\n');
    if (out.size() >= (1 << 20)) {
      std::fwrite(out.data(), 1, out.size(), stdout);
      out.clear();
    }
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  return 0;
}
