// band_recall: how well LSH banding finds the true pairs of a collection, for several band x row
// choices (bench/quality/README.md, "Candidates"). For each choice it prints the candidate pairs
// (distinct pairs sharing a band key, as FindSimilarPairs verifies them), the true pairs among them
// (candidate recall), and the pairs kept after verification at the threshold with their precision
// and recall. Features are the default design's (AccurateFingerprintOptions()).
//
// Usage: band_recall --truth C.truth.tsv [--threshold 0.8] [--bands 20] C.jsonl
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "neardup/input.h"
#include "neardup/simhash.h"
#include "neardup/sketch.h"

namespace {

std::vector<std::string> ReadTexts(const std::string& path) {
  std::vector<std::string> texts;
  auto reader = neardup::LineReader::Open(path);
  if (!reader.ok()) return texts;
  neardup::JsonlParser parser("id", "text");
  neardup::JsonlParser::Fields fields;
  for (std::string line; *(*reader)->ReadLine(&line, uint64_t{1} << 26);) {
    if (parser.Parse(line, &fields).ok()) texts.push_back(fields.text);
  }
  return texts;
}

}  // namespace

int main(int argc, char** argv) {
  std::string truth_path, input;
  double threshold = 0.8;
  int bands = 20;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--truth" && i + 1 < argc) {
      truth_path = argv[++i];
    } else if (arg == "--threshold" && i + 1 < argc) {
      threshold = std::atof(argv[++i]);
    } else if (arg == "--bands" && i + 1 < argc) {
      bands = std::atoi(argv[++i]);
    } else {
      input = arg;
    }
  }
  if (truth_path.empty() || input.empty()) {
    std::fprintf(stderr,
                 "usage: band_recall --truth C.truth.tsv [--threshold T] [--bands B] C.jsonl\n");
    return 2;
  }
  const std::vector<std::string> texts = ReadTexts(input);
  std::set<std::pair<uint32_t, uint32_t>> truth;
  std::ifstream truth_in(truth_path);
  for (uint32_t a, b; truth_in >> a >> b;) {
    truth.insert({a, b});
    truth_in.ignore(1 << 20, '\n');
  }
  auto fingerprinter = neardup::Fingerprinter::Create(neardup::AccurateFingerprintOptions());
  if (!fingerprinter.ok()) {
    std::fprintf(stderr, "band_recall: %s\n", fingerprinter.status().ToString().c_str());
    return 1;
  }
  auto builder = (*fingerprinter)->NewBuilder();
  std::printf("%-8s %8s %10s %10s %8s %8s %8s\n", "bands", "P(J=t)", "candidates", "true cand",
              "cand R", "P", "R");
  for (int rows = 3; rows <= 9; ++rows) {
    auto sketcher = neardup::Sketcher::Create({1024, 1, bands, rows});
    if (!sketcher.ok()) continue;
    std::vector<uint8_t> sketches(texts.size() * (*sketcher)->sketch_bytes());
    std::vector<uint32_t> keys(texts.size() * static_cast<size_t>(bands));
    for (size_t d = 0; d < texts.size(); ++d) {
      builder->Reset();
      if (!builder->Update(texts[d]).ok() || !builder->Finish().ok()) continue;
      const size_t bytes = (*sketcher)->sketch_bytes();
      if (!(*sketcher)
               ->Compute(builder->DistinctFeatureHashes(),
                         std::span(sketches).subspan(d * bytes, bytes),
                         std::span(keys).subspan(d * static_cast<size_t>(bands),
                                                 static_cast<size_t>(bands)))
               .ok()) {
        return 1;
      }
    }
    // Threshold -1 keeps every candidate: candidate recall; then the verified pairs.
    neardup::BandJoinStats stats;
    auto all = neardup::FindSimilarPairs(**sketcher, keys, sketches, {-1, 0}, &stats);
    if (!all.ok()) return 1;
    size_t true_candidates = 0, kept = 0, true_kept = 0;
    for (const auto& p : *all) {
      const bool is_true = truth.count({p.first, p.second}) > 0;
      true_candidates += is_true;
      // Estimates are multiples of 1/512 apart: the float is compared with a margin far below that.
      if (p.jaccard >= threshold - 1e-6) {
        ++kept;
        true_kept += is_true;
      }
    }
    const double n_truth = static_cast<double>(std::max<size_t>(1, truth.size()));
    std::printf("%2dx%-5d %8.4f %10zu %10zu %8.4f %8.4f %8.4f\n", bands, rows,
                neardup::BandCollisionProbability(threshold, bands, rows), all->size(),
                true_candidates, static_cast<double>(true_candidates) / n_truth,
                kept ? static_cast<double>(true_kept) / static_cast<double>(kept) : 1.0,
                static_cast<double>(true_kept) / n_truth);
  }
  return 0;
}
