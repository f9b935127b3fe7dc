// Stored fingerprints must stay valid: every vector of data/fingerprint_vectors.tsv is recomputed.
// A failure here means the change alters the fingerprint of existing documents.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>

#include "kat_modes.h"
#include "neardup/cpu.h"
#include "simd_levels.h"

namespace neardup {
namespace {

std::map<int, std::string> LoadTexts() {
  std::ifstream in(std::string(NEARDUP_SOURCE_DIR) + "/tests/data/kat_texts.txt");
  std::map<int, std::string> texts;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (!line.empty() && line[0] != '#') texts[number] = testing::Unescape(line);
    if (line.empty()) texts[number] = "";
  }
  return texts;
}

TEST(KnownAnswerTest, EveryVectorOnEverySimdLevel) {
  auto texts = LoadTexts();
  ASSERT_GE(texts.size(), 10u);
  std::ifstream in(std::string(NEARDUP_SOURCE_DIR) + "/tests/data/fingerprint_vectors.tsv");
  ASSERT_TRUE(in.good());
  std::string line;
  size_t checked = 0;
  std::map<std::string, std::unique_ptr<Fingerprinter>> fingerprinters;
  std::vector<std::tuple<std::string, int, uint64_t>> vectors;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    std::string spec, hex;
    int number;
    fields >> spec >> number >> hex;
    vectors.emplace_back(spec, number, std::stoull(hex, nullptr, 16));
  }
  for (const auto& spec : testing::KnownAnswerModes()) {
    size_t count = 0;
    for (const auto& v : vectors) count += std::get<0>(v) == spec;
    EXPECT_EQ(count, texts.size()) << "mode " << spec << " lacks vectors: regenerate them";
  }
  for (SimdLevel level : testing::SimdLevelsToTest()) {
    SetSimdLevel(level);
    for (const auto& [spec, number, expected] : vectors) {
      auto& f = fingerprinters[spec];
      if (!f) {
        auto options = testing::ParseModeSpec(spec);
        ASSERT_TRUE(options.ok()) << spec;
        auto created = Fingerprinter::Create(*options);
        ASSERT_TRUE(created.ok()) << spec;
        f = std::move(created).value();
      }
      ASSERT_TRUE(texts.count(number)) << "no text on line " << number;
      auto result = f->Fingerprint(texts[number]);
      ASSERT_TRUE(result.ok());
      EXPECT_EQ(result->simhash, expected)
          << "mode " << spec << ", text line " << number << ", simd " << SimdLevelName(level);
      ++checked;
    }
  }
  SetSimdLevel(DetectedSimdLevel());
  EXPECT_GT(checked, 0u);
}

// Stored sketches must stay valid too: every vector of data/sketch_vectors.tsv is recomputed.
TEST(KnownAnswerTest, EverySketchVector) {
  auto texts = LoadTexts();
  std::ifstream in(std::string(NEARDUP_SOURCE_DIR) + "/tests/data/sketch_vectors.tsv");
  ASSERT_TRUE(in.good());
  auto fingerprinter = Fingerprinter::Create(AccurateFingerprintOptions());
  auto sketcher = Sketcher::Create({});
  ASSERT_TRUE(fingerprinter.ok() && sketcher.ok());
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line[0] != '#') lines.push_back(line);
  }
  EXPECT_EQ(lines.size(), texts.size());
  for (SimdLevel level : testing::SimdLevelsToTest()) {
    SetSimdLevel(level);
    for (const std::string& line : lines) {
      const int number = std::stoi(line.substr(0, line.find('\t')));
      ASSERT_TRUE(texts.count(number)) << "no text on line " << number;
      auto want = testing::SketchVector(**fingerprinter, **sketcher, number, texts[number]);
      ASSERT_TRUE(want.ok());
      EXPECT_EQ(*want, line) << "text line " << number << ", simd " << SimdLevelName(level);
    }
  }
  SetSimdLevel(DetectedSimdLevel());
}

}  // namespace
}  // namespace neardup
