// jaccard_join: every pair of documents whose character-shingle sets have Jaccard similarity at or
// above a threshold, computed exactly (the ground truth of the quality harness,
// bench/quality/README.md).
//
// Input: one normalised document per line on stdin (bench/quality/collection.py writes them). The
// set of a document is its distinct substrings of n code points; a non-empty line shorter than n
// code points has one shingle, the whole line; an empty line has no shingles and pairs with
// nothing. Output: "a<TAB>b<TAB>jaccard" for each pair a < b (0-based line numbers), sorted.
//
// Method: the prefix-filtering all-pairs join (Bayardo et al., "Scaling up all pairs similarity
// search", WWW 2007). Shingles are mapped to exact integer ids (no hashing), ranked by increasing
// document frequency, and each set is sorted by rank. If J(x, y) >= t then |x & y| >= t * |x| and
// t * |y|, so the first |x| - ceil(t |x|) + 1 ranks of x share a rank with the same prefix of y.
// Documents are visited by increasing size; each probes an inverted index of the prefixes seen so
// far, skipping entries shorter than ceil(t |x|) (the size filter), and every candidate is verified
// with an exact merge. The threshold is compared in integers: inter * 1000 >= round(t * 1000) *
// union.
//
// Usage: jaccard_join [--shingle N] [--threshold T] < normalised.txt > truth.tsv
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <numeric>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace {

struct Options {
  int shingle = 5;
  int64_t threshold_per_mille = 800;
};

bool ParseOptions(int argc, char** argv, Options* options) {
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (i + 1 >= argc) return false;
    if (arg == "--shingle") {
      options->shingle = std::atoi(argv[++i]);
    } else if (arg == "--threshold") {
      options->threshold_per_mille = std::llround(std::atof(argv[++i]) * 1000);
    } else {
      return false;
    }
  }
  return options->shingle >= 1 && options->threshold_per_mille > 0 &&
         options->threshold_per_mille <= 1000;
}

// Byte offsets of the code points of a valid UTF-8 line, plus the end offset.
std::vector<uint32_t> CodePointOffsets(std::string_view line) {
  std::vector<uint32_t> offsets;
  for (uint32_t i = 0; i < line.size(); ++i) {
    if ((static_cast<unsigned char>(line[i]) & 0xC0) != 0x80) offsets.push_back(i);
  }
  offsets.push_back(static_cast<uint32_t>(line.size()));
  return offsets;
}

// Distinct shingle ids of every line (ids in order of first appearance), and how many ids there
// are.
std::vector<std::vector<uint32_t>> ShingleSets(const std::vector<std::string>& lines, int n,
                                               uint32_t* id_count) {
  std::unordered_map<std::string_view, uint32_t> ids;
  std::vector<std::vector<uint32_t>> sets(lines.size());
  for (size_t d = 0; d < lines.size(); ++d) {
    std::string_view line = lines[d];
    if (line.empty()) continue;
    const std::vector<uint32_t> offsets = CodePointOffsets(line);
    const size_t points = offsets.size() - 1;
    const size_t count = points < static_cast<size_t>(n) ? 1 : points - n + 1;
    for (size_t i = 0; i < count; ++i) {
      const size_t end = std::min(points, i + n);
      std::string_view shingle = line.substr(offsets[i], offsets[end] - offsets[i]);
      auto [it, inserted] = ids.try_emplace(shingle, static_cast<uint32_t>(ids.size()));
      sets[d].push_back(it->second);
    }
    std::sort(sets[d].begin(), sets[d].end());
    sets[d].erase(std::unique(sets[d].begin(), sets[d].end()), sets[d].end());
  }
  *id_count = static_cast<uint32_t>(ids.size());
  return sets;
}

// Replaces ids by their rank in order of increasing document frequency and sorts each set.
void RankByFrequency(uint32_t id_count, std::vector<std::vector<uint32_t>>* sets) {
  std::vector<uint32_t> frequency(id_count, 0);
  for (const auto& set : *sets) {
    for (uint32_t id : set) ++frequency[id];
  }
  std::vector<uint32_t> order(id_count);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](uint32_t a, uint32_t b) { return frequency[a] < frequency[b]; });
  std::vector<uint32_t> rank(id_count);
  for (uint32_t r = 0; r < id_count; ++r) rank[order[r]] = r;
  for (auto& set : *sets) {
    for (uint32_t& id : set) id = rank[id];
    std::sort(set.begin(), set.end());
  }
}

size_t IntersectionSize(const std::vector<uint32_t>& a, const std::vector<uint32_t>& b) {
  size_t i = 0, j = 0, shared = 0;
  while (i < a.size() && j < b.size()) {
    if (a[i] < b[j]) {
      ++i;
    } else if (b[j] < a[i]) {
      ++j;
    } else {
      ++shared, ++i, ++j;
    }
  }
  return shared;
}

struct Pair {
  uint32_t a, b;
  double jaccard;
};

std::vector<Pair> Join(const std::vector<std::vector<uint32_t>>& sets, uint32_t id_count,
                       int64_t t_per_mille) {
  std::vector<uint32_t> order;
  for (uint32_t d = 0; d < sets.size(); ++d) {
    if (!sets[d].empty()) order.push_back(d);
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](uint32_t a, uint32_t b) { return sets[a].size() < sets[b].size(); });
  // Smallest overlap a set of size s needs with a set at least as large: ceil(t * s).
  auto min_overlap = [&](size_t s) {
    return static_cast<size_t>((static_cast<int64_t>(s) * t_per_mille + 999) / 1000);
  };
  std::vector<std::vector<uint32_t>> postings(id_count);  // documents, in visiting order
  std::vector<size_t> posting_start(id_count, 0);         // entries before it are too short
  std::vector<uint32_t> seen_by(sets.size(), UINT32_MAX);
  std::vector<uint32_t> candidates;
  std::vector<Pair> pairs;
  for (uint32_t x : order) {
    const auto& set = sets[x];
    const size_t need = min_overlap(set.size());
    const size_t prefix = set.size() - need + 1;
    candidates.clear();
    for (size_t p = 0; p < prefix; ++p) {
      const uint32_t token = set[p];
      auto& list = postings[token];
      size_t& start = posting_start[token];
      while (start < list.size() && sets[list[start]].size() < need) ++start;
      for (size_t i = start; i < list.size(); ++i) {
        const uint32_t y = list[i];
        if (seen_by[y] == x) continue;
        seen_by[y] = x;
        candidates.push_back(y);
      }
    }
    for (uint32_t y : candidates) {
      const size_t shared = IntersectionSize(set, sets[y]);
      const size_t total = set.size() + sets[y].size() - shared;
      if (static_cast<int64_t>(shared) * 1000 >= t_per_mille * static_cast<int64_t>(total)) {
        pairs.push_back({std::min(x, y), std::max(x, y), static_cast<double>(shared) / total});
      }
    }
    for (size_t p = 0; p < prefix; ++p) postings[set[p]].push_back(x);
  }
  std::sort(pairs.begin(), pairs.end(),
            [](const Pair& l, const Pair& r) { return l.a != r.a ? l.a < r.a : l.b < r.b; });
  return pairs;
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  if (!ParseOptions(argc, argv, &options)) {
    std::fprintf(stderr, "usage: jaccard_join [--shingle N] [--threshold T] < lines > pairs\n");
    return 2;
  }
  std::ios::sync_with_stdio(false);
  std::vector<std::string> lines;
  for (std::string line; std::getline(std::cin, line);) lines.push_back(std::move(line));
  uint32_t id_count = 0;
  auto sets = ShingleSets(lines, options.shingle, &id_count);
  RankByFrequency(id_count, &sets);
  const std::vector<Pair> pairs = Join(sets, id_count, options.threshold_per_mille);
  std::string out;
  char buffer[64];
  for (const Pair& pair : pairs) {
    std::snprintf(buffer, sizeof buffer, "%u\t%u\t%.4f\n", pair.a, pair.b, pair.jaccard);
    out.append(buffer);
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  std::fprintf(stderr, "jaccard_join: %zu documents, %u distinct shingles, %zu pairs\n",
               lines.size(), id_count, pairs.size());
  return 0;
}
