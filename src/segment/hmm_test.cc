#include "segment/hmm.h"

#include <gtest/gtest.h>

#include <random>

#include "segment/test_files.h"

namespace neardup::segment_internal {
namespace {

// jieba's PrevStatus: the states each state may follow.
bool MayFollow(int from, int to) {
  switch (to) {
    case kB:
      return from == kE || from == kS;
    case kM:
      return from == kM || from == kB;
    case kS:
      return from == kS || from == kE;
    default:
      return from == kB || from == kM;  // kE
  }
}

// Score of one state sequence, summed as jieba's Viterbi does.
double Score(const HmmModel& model, const std::vector<CharCode>& codes,
             const std::vector<int>& states) {
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
    for (int s = 0; s < 4; ++s)
      model.emit[static_cast<size_t>(c) * 4 + static_cast<size_t>(s)] = p(*rng);
  }
  return model;
}

// Brute force over every allowed sequence ending in E or S: Viterbi's path must reach the best
// score.
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

// A model with every start and transition probability 0 and emissions[t] giving, for the t-th code,
// the states that emit it with log probability 0; every other emission is -100. A path through
// emitting states only scores 0, so two predecessors that both lie on such paths tie exactly.
struct TieCase {
  const char* name;
  std::vector<std::vector<int>> emissions;
  std::vector<uint8_t> jieba_path;
};

HmmModel TieModel(const std::vector<std::vector<int>>& emissions) {
  HmmModel model;
  model.start = {0, 0, 0, 0};
  for (auto& row : model.trans) row.fill(0.0);
  model.emit.assign(static_cast<size_t>(kHanCount) * 4, -100.0);
  for (size_t t = 0; t < emissions.size(); ++t) {
    for (int s : emissions[t]) model.emit[t * 4 + static_cast<size_t>(s)] = 0.0;
  }
  return model;
}

// Each case has one tie that decides the path, at the state named. jieba's viterbi computes
// max((V[t-1][y0] + trans + emit, y0) for y0 in PrevStatus[y]), so equal probabilities go to the
// larger letter (S over E, M over B); the path is then read back from the final E or S.
//  B: codes emitted by {E,S}, {B}, {E}. B at 1 ties between E and S at 0 (both 0): S wins, S B E
//     (the other break gives E B E).
//  M: {B,E,S}, {B,M}, {M}, {E}. M at 1 comes from B (M at 0 scores -100); M at 2 ties between M and
//     B at 1 (both 0): M wins, B M M E (the other break gives S B M E, B at 1 going to S).
//  E: {B,E,S}, {B,M}, {E}. E at 2 ties between B and M at 1: M wins, B M E (the other: S B E).
TEST(Viterbi, BreaksTiesOfEveryStateTowardsTheLargerLetterAsJiebaDoes) {
  const std::vector<TieCase> cases = {
      {"B", {{kE, kS}, {kB}, {kE}}, {kS, kB, kE}},
      {"M", {{kB, kE, kS}, {kB, kM}, {kM}, {kE}}, {kB, kM, kM, kE}},
      {"E", {{kB, kE, kS}, {kB, kM}, {kE}}, {kB, kM, kE}},
  };
  std::vector<uint8_t> states;
  std::vector<std::array<uint8_t, 4>> scratch;
  for (const TieCase& tie : cases) {
    const HmmModel model = TieModel(tie.emissions);
    std::vector<CharCode> codes;
    for (size_t t = 0; t < tie.emissions.size(); ++t) {
      codes.push_back(static_cast<CharCode>(kFirstHanCode + t));
    }
    Viterbi(model, codes, &states, &scratch);
    EXPECT_EQ(states, tie.jieba_path) << "tie at " << tie.name;
  }
}

TEST(HmmModel, LoadsJiebaFormatAndReportsBadFiles) {
  testing::TempFiles files;
  const std::string dir = testing::WriteSmallHmm(
      files,
      "{'B': {'\\u4e00': -3.5},\n 'E': {},\n 'M': {},\n 'S': {'\\u4e00': -1.25, '\\u2236': -2.0}}");
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
  EXPECT_NE(bad.status().message().find("prob_emit.py:2"), std::string::npos)
      << bad.status().message();

  files.Write("hmm/prob_emit.py", "P={'B': {}, 'E': {}, 'M': {}}\n");
  EXPECT_NE(HmmModel::Load(dir).status().message().find("missing one of the states"),
            std::string::npos);

  auto missing = HmmModel::Load(files.dir() + "/nowhere");
  EXPECT_EQ(missing.status().code(), Status::Code::kNotFound);
  EXPECT_NE(missing.status().message().find("nowhere/prob_start.py"), std::string::npos);
}

}  // namespace
}  // namespace neardup::segment_internal
