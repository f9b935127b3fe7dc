// Accuracy floor: neardup's default design (the accurate method of `neardup dedup`: character
// 5-gram sets, LSH band candidates verified by the sketch at estimated Jaccard >= 0.8;
// doc/candidates.md) on the small labelled collections of tests/data/quality (README there: what
// they hold, where from, under which licence). The truth is exact Jaccard similarity of character
// 5-shingles >= 0.8 (bench/quality/jaccard_join), independent of neardup. A change that lowers F1
// below the floor fails here; the floors sit a little under the F1 measured when they were set
// (bench/quality/README.md), so raise them with every gain.
#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "neardup/dedup.h"
#include "neardup/input.h"
#include "neardup/method.h"
#include "neardup/simhash.h"
#include "neardup/sketch.h"

namespace neardup {
namespace {

const std::string kDataDir = std::string(NEARDUP_SOURCE_DIR) + "/tests/data/quality/";

std::vector<std::string> ReadTexts(const std::string& path) {
  auto reader = LineReader::Open(path);
  EXPECT_TRUE(reader.ok()) << reader.status().ToString();
  if (!reader.ok()) return {};
  JsonlParser parser("id", "text");
  JsonlParser::Fields fields;
  std::vector<std::string> texts;
  std::string line;
  while (true) {
    auto more = (*reader)->ReadLine(&line, uint64_t{1} << 24);
    EXPECT_TRUE(more.ok());
    if (!more.ok() || !*more) break;
    EXPECT_TRUE(parser.Parse(line, &fields).ok()) << path << ":" << (*reader)->line_number();
    // Ids are row numbers: the truth file names documents by them.
    EXPECT_EQ(fields.id, std::to_string(texts.size()));
    texts.push_back(fields.text);
  }
  return texts;
}

std::set<std::pair<int, int>> ReadTruth(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << path;
  std::set<std::pair<int, int>> pairs;
  int a, b;
  double jaccard;
  while (in >> a >> b >> jaccard) pairs.insert({a, b});
  return pairs;
}

struct Scores {
  double precision = 0, recall = 0, f1 = 0;
};

Scores ScoreDefaults(const std::string& name) {
  const std::vector<std::string> texts = ReadTexts(kDataDir + name + ".jsonl");
  const std::set<std::pair<int, int>> truth = ReadTruth(kDataDir + name + ".truth.tsv");
  // The defaults of DedupOptions, through the library's public pieces.
  const DedupOptions defaults;
  auto signer = DocumentSigner::Create(defaults.similarity);
  EXPECT_TRUE(signer.ok()) << signer.status().ToString();
  if (!signer.ok()) return {};
  const size_t bytes = (*signer)->sketch_bytes(), bands = (*signer)->bands();
  std::vector<uint8_t> sketches(texts.size() * bytes);
  std::vector<uint32_t> keys(texts.size() * bands);
  DocumentSigner::Session session(**signer);
  for (size_t d = 0; d < texts.size(); ++d) {
    uint64_t simhash = 0;
    bool empty = false;
    EXPECT_TRUE(session
                    .Sign(texts[d], SignatureSlot{&simhash, &empty,
                                                  std::span(sketches).subspan(d * bytes, bytes),
                                                  std::span(keys).subspan(d * bands, bands)})
                    .ok());
  }
  const double threshold = (*signer)->options().threshold;
  auto pairs = FindSimilarPairs(*(*signer)->sketcher(), keys, sketches, {threshold, 0});
  EXPECT_TRUE(pairs.ok());
  const size_t found = pairs.ok() ? pairs->size() : 0;
  size_t correct = 0;
  for (const SimilarPair& p : pairs.ok() ? *pairs : std::vector<SimilarPair>{}) {
    correct += truth.count({static_cast<int>(p.first), static_cast<int>(p.second)});
  }
  Scores scores;
  scores.precision = found ? static_cast<double>(correct) / found : 1.0;
  scores.recall = truth.empty() ? 1.0 : static_cast<double>(correct) / truth.size();
  const double sum = scores.precision + scores.recall;
  scores.f1 = sum > 0 ? 2 * scores.precision * scores.recall / sum : 0;
  std::printf("%s: %zu documents, %zu true pairs, %zu found, precision %.3f recall %.3f F1 %.3f\n",
              name.c_str(), texts.size(), truth.size(), found, scores.precision, scores.recall,
              scores.f1);
  return scores;
}

TEST(QualityTest, CollectionsAreWhatTheFloorsWereSetOn) {
  EXPECT_EQ(ReadTexts(kDataDir + "long.jsonl").size(), 140u);
  EXPECT_EQ(ReadTruth(kDataDir + "long.truth.tsv").size(), 53u);
  EXPECT_EQ(ReadTexts(kDataDir + "short.jsonl").size(), 356u);
  EXPECT_EQ(ReadTruth(kDataDir + "short.truth.tsv").size(), 113u);
}

TEST(QualityTest, LongEditedCopiesKeepF1AboveFloor) {
  // Measured 0.961 (P 1.000, R 0.925) with the accurate default; the classic word 3-shingles at k=3
  // measured 0.597.
  EXPECT_GE(ScoreDefaults("long").f1, 0.95);
}

TEST(QualityTest, ShortVariantsKeepF1AboveFloor) {
  // Measured 0.991 (P 1.000, R 0.982); word 3-shingles at k=3 measured 0.655.
  EXPECT_GE(ScoreDefaults("short").f1, 0.985);
}

}  // namespace
}  // namespace neardup
