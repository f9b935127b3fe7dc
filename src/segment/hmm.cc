#include "segment/hmm.h"

#include "segment/python_literal.h"

namespace neardup::segment_internal {
namespace {

int StateIndex(std::u32string_view name) {
  if (name.size() != 1) return -1;
  switch (name[0]) {
    case U'B':
      return kB;
    case U'E':
      return kE;
    case U'M':
      return kM;
    case U'S':
      return kS;
    default:
      return -1;
  }
}

Status StateError(const std::string& path, const PythonValue& value, std::string_view what) {
  return Status::InvalidArgument(path + ":" + std::to_string(value.line) + ": " +
                                 std::string(what));
}

// P = {'B': x, 'E': x, 'M': x, 'S': x} with all four states.
Result<std::array<const PythonValue*, 4>> StateTable(const std::string& path,
                                                     const PythonValue& top) {
  std::array<const PythonValue*, 4> table{};
  if (top.kind != PythonValue::kDict)
    return StateError(path, top, "expected a dict of the states B, E, M, S");
  for (const auto& [key, value] : top.items) {
    const int state = StateIndex(key);
    if (state < 0) return StateError(path, value, "unknown HMM state (expected B, E, M or S)");
    table[static_cast<size_t>(state)] = &value;
  }
  for (const PythonValue* entry : table) {
    if (entry == nullptr) return StateError(path, top, "missing one of the states B, E, M, S");
  }
  return table;
}

}  // namespace

Result<HmmModel> HmmModel::Load(const std::string& directory) {
  HmmModel model;
  const std::string start_path = directory + "/prob_start.py";
  auto start = ParsePythonAssignment(start_path, "P");
  if (!start.ok()) return start.status();
  auto start_table = StateTable(start_path, *start);
  if (!start_table.ok()) return start_table.status();
  for (int s = 0; s < 4; ++s) {
    const PythonValue& v = *(*start_table)[static_cast<size_t>(s)];
    if (v.kind != PythonValue::kNumber) return StateError(start_path, v, "expected a number");
    model.start[static_cast<size_t>(s)] = v.number;
  }

  const std::string trans_path = directory + "/prob_trans.py";
  auto trans = ParsePythonAssignment(trans_path, "P");
  if (!trans.ok()) return trans.status();
  auto trans_table = StateTable(trans_path, *trans);
  if (!trans_table.ok()) return trans_table.status();
  for (auto& row : model.trans) row.fill(kMinFloat);
  for (int from = 0; from < 4; ++from) {
    const PythonValue& row = *(*trans_table)[static_cast<size_t>(from)];
    if (row.kind != PythonValue::kDict) return StateError(trans_path, row, "expected a dict");
    for (const auto& [key, value] : row.items) {
      const int to = StateIndex(key);
      if (to < 0) return StateError(trans_path, value, "unknown HMM state");
      if (value.kind != PythonValue::kNumber)
        return StateError(trans_path, value, "expected a number");
      model.trans[static_cast<size_t>(from)][static_cast<size_t>(to)] = value.number;
    }
  }

  const std::string emit_path = directory + "/prob_emit.py";
  auto emit = ParsePythonAssignment(emit_path, "P");
  if (!emit.ok()) return emit.status();
  auto emit_table = StateTable(emit_path, *emit);
  if (!emit_table.ok()) return emit_table.status();
  model.emit.assign(static_cast<size_t>(kHanCount) * 4, kMinFloat);
  for (int s = 0; s < 4; ++s) {
    const PythonValue& row = *(*emit_table)[static_cast<size_t>(s)];
    if (row.kind != PythonValue::kDict) return StateError(emit_path, row, "expected a dict");
    for (const auto& [key, value] : row.items) {
      if (value.kind != PythonValue::kNumber)
        return StateError(emit_path, value, "expected a number");
      // Only Han characters in U+4E00..U+9FD5 ever reach the model; other keys are kept by jieba
      // but can never be looked up.
      if (key.size() != 1 || key[0] < kHanFirst || key[0] > kHanLast) continue;
      model.emit[static_cast<size_t>(key[0] - kHanFirst) * 4 + static_cast<size_t>(s)] =
          value.number;
    }
  }
  return model;
}

void Viterbi(const HmmModel& model, std::span<const CharCode> codes, std::vector<uint8_t>* states,
             std::vector<std::array<uint8_t, 4>>* scratch) {
  const size_t length = codes.size();
  states->resize(length);
  if (length == 0) return;
  scratch->resize(length);
  auto& back = *scratch;
  const auto& tr = model.trans;
  std::array<double, 4> v;
  for (int s = 0; s < 4; ++s) v[s] = model.start[s] + model.Emit(codes[0], s);
  for (size_t t = 1; t < length; ++t) {
    const double* e = &model.emit[static_cast<size_t>(codes[t] - kFirstHanCode) * 4];
    std::array<double, 4> next;
    // Each state has two predecessors (jieba's PrevStatus); on a tie the larger letter wins.
    const double b_from_e = v[kE] + tr[kE][kB] + e[kB];
    const double b_from_s = v[kS] + tr[kS][kB] + e[kB];
    const bool b_s = b_from_s >= b_from_e;
    next[kB] = b_s ? b_from_s : b_from_e;
    back[t][kB] = b_s ? kS : kE;
    const double m_from_m = v[kM] + tr[kM][kM] + e[kM];
    const double m_from_b = v[kB] + tr[kB][kM] + e[kM];
    const bool m_m = m_from_m >= m_from_b;
    next[kM] = m_m ? m_from_m : m_from_b;
    back[t][kM] = m_m ? kM : kB;
    const double s_from_s = v[kS] + tr[kS][kS] + e[kS];
    const double s_from_e = v[kE] + tr[kE][kS] + e[kS];
    const bool s_s = s_from_s >= s_from_e;
    next[kS] = s_s ? s_from_s : s_from_e;
    back[t][kS] = s_s ? kS : kE;
    const double e_from_b = v[kB] + tr[kB][kE] + e[kE];
    const double e_from_m = v[kM] + tr[kM][kE] + e[kE];
    const bool e_m = e_from_m >= e_from_b;
    next[kE] = e_m ? e_from_m : e_from_b;
    back[t][kE] = e_m ? kM : kB;
    v = next;
  }
  uint8_t state = v[kS] >= v[kE] ? kS : kE;
  for (size_t t = length; t-- > 0;) {
    (*states)[t] = state;
    if (t > 0) state = back[t][state];
  }
}

}  // namespace neardup::segment_internal
