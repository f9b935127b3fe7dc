#include "segment/hmm.h"

#include <gtest/gtest.h>

#include <random>

#include "segment/test_files.h"

namespace neardup::segment_internal {
namespace {

// jieba's PrevStatus: the states each state may follow.
bool MayFollow(int from, int to) {
  switch (to) {
    case kB: return from == kE || from == kS;
    case kM: return from == kM || from == kB;
    case kS: return from == kS || from == kE;
    default: return from == kB || from == kM;  // kE
  }
}

// Score of one state sequence, summed as jieba's Viterbi does.
double Score(const HmmModel& model, const std::vector<CharCode>& codes, const std::vector<int>& states) {
  double v = model.start[states[0]] + model.Emit(codes[0], states[0]);
  for (size_t t = 1; t < codes.size(); ++t) {
    v = v + model.trans[states[t - 1]][states[t]] + model.Emit(codes[t], states[t]);
  }
  return v;
}

HmmModel RandomModel(std::mt19937* rng) {
  std::uniform_real_distribution<double> p(-12.0, -0.1);
  HmmModel model;
  for (auto& s : model.start) s = p(*rng);
  for (auto& row : model.trans) {
    for (auto& t : row) t = p(*rng);
  }
  model.emit.assign(static_cast<size_t>(kHanCount) * 4, HmmModel::kMinFloat);
  for (int c = 0; c < 8; ++c) {
    for (int s = 0; s < 4; ++s) model.emit[static_cast<size_t>(c) * 4 + static_cast<size_t>(s)] = p(*rng);
  }
  return model;
}

// Brute force over every allowed sequence ending in E or S: Viterbi's path must reach the best score.
TEST(Viterbi, ReachesTheBestScoreOfEveryAllowedSequence) {
  std::mt19937 rng(11);
  std::vector<uint8_t> states;
  std::vector<std::array<uint8_t, 4>> scratch;
  for (int trial = 0; trial < 200; ++trial) {
    const HmmModel model = RandomModel(&rng);
    const size_t length = 1 + rng() % 6;
    std::vector<CharCode> codes(length);
    for (auto& c : codes) c = static_cast<CharCode>(kFirstHanCode + rng() % 8);
    double best = -1e308;
    std::vector<int> sequence(length);
    for (size_t index = 0; index < (size_t{1} << (2 * length)); ++index) {
      bool allowed = true;
      for (size_t t = 0; t < length; ++t) {
        sequence[t] = static_cast<int>((index >> (2 * t)) & 3);
        if (t > 0 && !MayFollow(sequence[t - 1], sequence[t])) allowed = false;
      }
      if (!allowed || (sequence.back() != kE && sequence.back() != kS)) continue;
      best = std::max(best, Score(model, codes, sequence));
    }
    Viterbi(model, codes, &states, &scratch);
    std::vector<int> path(states.begin(), states.end());
    for (size_t t = 1; t < length; ++t) EXPECT_TRUE(MayFollow(path[t - 1], path[t]));
    EXPECT_TRUE(path.back() == kE || path.back() == kS);
    EXPECT_EQ(Score(model, codes, path), best) << "trial " << trial;
  }
}

// With every emission missing, all scores tie at the start: jieba's max() picks the larger letter.
TEST(Viterbi, BreaksTiesTowardsTheLargerLetter) {
  HmmModel model;
  model.start = {0, 0, 0, 0};
  for (auto& row : model.trans) row.fill(0.0);
  model.emit.assign(static_cast<size_t>(kHanCount) * 4, 0.0);
  std::vector<uint8_t> states;
  std::vector<std::array<uint8_t, 4>> scratch;
  const std::vector<CharCode> codes(3, kFirstHanCode);
  Viterbi(model, codes, &states, &scratch);
  // Final state: S (over E). S's predecessor: S (over E). So S S S.
  EXPECT_EQ(states, (std::vector<uint8_t>{kS, kS, kS}));
}

TEST(HmmModel, LoadsJiebaFormatAndReportsBadFiles) {
  testing::TempFiles files;
  const std::string dir = testing::WriteSmallHmm(files, "{'B': {'\\u4e00': -3.5},\n 'E': {},\n 'M': {},\n 'S': {'\\u4e00': -1.25, '\\u2236': -2.0}}");
  auto model = HmmModel::Load(dir);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  EXPECT_EQ(model->Emit(kFirstHanCode, kB), -3.5);
  EXPECT_EQ(model->Emit(kFirstHanCode, kS), -1.25);
  EXPECT_EQ(model->Emit(kFirstHanCode, kE), HmmModel::kMinFloat);
  EXPECT_EQ(model->start[kB], -0.26268660809250016);
  EXPECT_EQ(model->trans[kE][kB], -0.5897149736854513);
  EXPECT_EQ(model->trans[kB][kB], HmmModel::kMinFloat);

  files.Write("hmm/prob_emit.py", "P={'B': {'\\u4e00': -3.5,\n 'x': }}\n");
  auto bad = HmmModel::Load(dir);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("prob_emit.py:2"), std::string::npos) << bad.status().message();

  files.Write("hmm/prob_emit.py", "P={'B': {}, 'E': {}, 'M': {}}\n");
  EXPECT_NE(HmmModel::Load(dir).status().message().find("missing one of the states"), std::string::npos);

  auto missing = HmmModel::Load(files.dir() + "/nowhere");
  EXPECT_EQ(missing.status().code(), Status::Code::kNotFound);
  EXPECT_NE(missing.status().message().find("nowhere/prob_start.py"), std::string::npos);
}

}  // namespace
}  // namespace neardup::segment_internal
