// Internal: jieba's hidden Markov model for runs of unknown Han characters (jieba/finalseg).
//
// Four states B (begin), E (end), M (middle), S (single), indexed in that order, which is also the
// order of their letters: Python's max() over (probability, letter) tuples breaks ties towards the
// larger letter, and so does Viterbi() here. Probabilities are natural logarithms; a missing
// emission is jieba's MIN_FLOAT, -3.14e100. Sums are formed in jieba's order, so results are
// bit-identical.
#ifndef NEARDUP_SEGMENT_HMM_H_
#define NEARDUP_SEGMENT_HMM_H_

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "neardup/status.h"
#include "segment/char_class.h"

namespace neardup::segment_internal {

enum HmmState : uint8_t { kB = 0, kE = 1, kM = 2, kS = 3 };

struct HmmModel {
  static constexpr double kMinFloat = -3.14e100;

  std::array<double, 4> start{};
  std::array<std::array<double, 4>, 4> trans{};  // trans[from][to]
  // emit[han_index * 4 + state], han_index = code - kFirstHanCode.
  std::vector<double> emit;

  double Emit(CharCode code, int state) const {
    return emit[static_cast<size_t>(code - kFirstHanCode) * 4 + static_cast<size_t>(state)];
  }

  // Reads prob_start.py, prob_trans.py and prob_emit.py from `directory` (jieba/finalseg). Errors
  // name the file and line.
  static Result<HmmModel> Load(const std::string& directory);
};

// The most probable state sequence of `codes` (all Han), one state per code, written to *states.
// `scratch` holds the back pointers between calls.
void Viterbi(const HmmModel& model, std::span<const CharCode> codes, std::vector<uint8_t>* states,
             std::vector<std::array<uint8_t, 4>>* scratch);

}  // namespace neardup::segment_internal

#endif  // NEARDUP_SEGMENT_HMM_H_
