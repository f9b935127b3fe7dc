// Accuracy floor: neardup's default fingerprint, at the default distance, on the small labelled
// collections of tests/data/quality (README there: what they hold, where from, under which licence).
// The truth is exact Jaccard similarity of character 5-shingles >= 0.8 (bench/quality/jaccard_join),
// independent of neardup. A change that lowers F1 below the floor fails here; the floors sit a little
// under the F1 measured when they were set (bench/quality/README.md), so raise them with every gain.
#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "neardup/hamming.h"
#include "neardup/input.h"
#include "neardup/simhash.h"

namespace neardup {
namespace {

constexpr int kDefaultDistance = 3;  // the default k of neardup compare

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
  auto fingerprinter = Fingerprinter::Create(FingerprintOptions{});
  EXPECT_TRUE(fingerprinter.ok());
  std::vector<uint64_t> codes;
  for (const std::string& text : texts) {
    auto result = (*fingerprinter)->Fingerprint(text);
    EXPECT_TRUE(result.ok());
    codes.push_back(result.ok() ? result->simhash : 0);
  }
  size_t found = 0, correct = 0;
  for (size_t a = 0; a < codes.size(); ++a) {
    for (size_t b = a + 1; b < codes.size(); ++b) {
      if (HammingDistance(codes[a], codes[b]) > kDefaultDistance) continue;
      ++found;
      correct += truth.count({static_cast<int>(a), static_cast<int>(b)});
    }
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
  EXPECT_GE(ScoreDefaults("long").f1, 0.57);  // measured 0.597 (word 3-shingles, k=3)
}

TEST(QualityTest, ShortVariantsKeepF1AboveFloor) {
  EXPECT_GE(ScoreDefaults("short").f1, 0.62);  // measured 0.655
}

}  // namespace
}  // namespace neardup
