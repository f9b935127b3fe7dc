// Internal: the segmentation algorithm of jieba 0.42.1 (jieba/__init__.py and jieba/finalseg),
// transcribed step by step over character codes.
//
// Text is cut into blocks: maximal runs of block characters (re_han_default) and runs of other
// characters. Other characters become words of one character each ("\r\n" is one word). A block is
// cut by the maximum-probability route through its DAG of dictionary words (jieba's get_DAG and
// calc), and in HMM mode, runs of single characters that are not themselves one dictionary word go
// through finalseg: Han runs through the Viterbi HMM, the rest split by re_skip
// ([a-zA-Z0-9]+(\.\d+)?%?).
//
// Words are reported through a callback emit(std::string_view word, int32_t node). The view points
// into the text (kAll may pass a view of a temporary: copy it to keep it). `node` is the word's
// trie node when the route already knows it, kUnknownNode otherwise.
#ifndef NEARDUP_SEGMENT_CUT_ENGINE_H_
#define NEARDUP_SEGMENT_CUT_ENGINE_H_

#include <array>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "segment/char_class.h"
#include "segment/dictionary_data.h"
#include "segment/hmm.h"
#include "text/utf8.h"

namespace neardup::segment_internal {

inline constexpr int32_t kUnknownNode = -2;

// One code point at p: its length (an invalid byte sequence counts as one character U+FFFD).
inline int DecodeCharacter(const unsigned char* p, const unsigned char* end, char32_t* cp) {
  if (*p < 0x80) {
    *cp = *p;
    return 1;
  }
  const int n = text_internal::DecodeUtf8(p, end, cp);
  if (n > 0) return n;
  *cp = text_internal::kReplacementCharacter;
  return n < 0 ? -n : static_cast<int>(end - p);
}

class CutEngine {
 public:
  explicit CutEngine(const DictionaryData& dictionary) : dict_(dictionary) {}

  // The byte offset of the first invalid UTF-8 sequence met since the last call (such a sequence is
  // cut as one character U+FFFD would be), or nullopt. Callers check it instead of a separate pass.
  std::optional<size_t> TakeFirstInvalid() {
    auto offset = first_invalid_;
    first_invalid_.reset();
    return offset;
  }

  // jieba.cut(text, HMM=kHmm).
  template <bool kHmm, typename Emit>
  void CutDefault(std::string_view text, Emit&& emit) {
    ForEachBlock(
        text, [&](std::string_view t) { CutBlock<kHmm>(t, emit); },
        [&](std::string_view t, size_t start, size_t end) {
          const auto* p = reinterpret_cast<const unsigned char*>(t.data());
          for (size_t i = start; i < end;) {
            char32_t cp;
            size_t n = static_cast<size_t>(DecodeCharacter(p + i, p + end, &cp));
            if (cp == '\r' && i + 1 < end && p[i + 1] == '\n') n = 2;
            emit(t.substr(i, n), kUnknownNode);
            i += n;
          }
        });
  }

  // jieba.cut(text, cut_all=True).
  template <typename Emit>
  void CutAll(std::string_view text, Emit&& emit) {
    ForEachBlock(
        text, [&](std::string_view t) { CutBlockAll(t, emit); },
        [&](std::string_view t, size_t start, size_t end) { SplitOnSpace(t, start, end, emit); });
  }

  // With `resolve` set, words of two or more block characters that the route did not already
  // identify are looked up in the trie before they are emitted (node -1: not in the trie).
  void set_resolve_nodes(bool resolve) { resolve_nodes_ = resolve; }

  // The codes of the current block (valid inside block callbacks), for tests.
  const std::vector<CharCode>& codes() const { return codes_; }

 private:
  // DecodeCharacter with a fast path for the three-byte sequences of U+1000..U+CFFF (Han, CJK
  // punctuation), noting where the first invalid sequence is.
  int Decode(const unsigned char* p, const unsigned char* base, const unsigned char* end,
             char32_t* cp) {
    const unsigned lead = *p;
    if (lead < 0x80) {
      *cp = lead;
      return 1;
    }
    if (lead >= 0xE1 && lead <= 0xEC && end - p >= 3 && (p[1] & 0xC0) == 0x80 &&
        (p[2] & 0xC0) == 0x80) {
      *cp = ((lead & 0x0F) << 12) | ((p[1] & 0x3Fu) << 6) | (p[2] & 0x3Fu);
      return 3;
    }
    const int n = text_internal::DecodeUtf8(p, end, cp);
    if (n > 0) return n;
    if (!first_invalid_) first_invalid_ = static_cast<size_t>(p - base);
    *cp = text_internal::kReplacementCharacter;
    return n < 0 ? -n : static_cast<int>(end - p);
  }

  // Calls on_block(text) after loading codes_/offsets_ for each block, on_other(text, start, end)
  // for each run of other characters.
  template <typename OnBlock, typename OnOther>
  void ForEachBlock(std::string_view text, OnBlock&& on_block, OnOther&& on_other) {
    const auto* base = reinterpret_cast<const unsigned char*>(text.data());
    const auto* end = base + text.size();
    const unsigned char* p = base;
    while (p < end) {
      char32_t cp;
      int n = Decode(p, base, end, &cp);
      CharCode code = CodeOf(cp);
      if (code != 0) {
        codes_.clear();
        offsets_.clear();
        while (true) {
          codes_.push_back(code);
          offsets_.push_back(static_cast<uint32_t>(p - base));
          p += n;
          if (p >= end) break;
          n = Decode(p, base, end, &cp);
          code = CodeOf(cp);
          if (code == 0) break;
        }
        offsets_.push_back(static_cast<uint32_t>(p - base));
        on_block(text);
      } else {
        const unsigned char* start = p;
        while (true) {
          p += n;
          if (p >= end) break;
          n = Decode(p, base, end, &cp);
          if (CodeOf(cp) != 0) break;
        }
        on_other(text, static_cast<size_t>(start - base), static_cast<size_t>(p - base));
      }
    }
  }

  template <typename Emit>
  void EmitRange(std::string_view text, size_t a, size_t b, int32_t node, Emit& emit) {
    if (resolve_nodes_ && node == kUnknownNode && b - a >= 2) {
      node = dict_.trie.Find(
          std::u16string_view(reinterpret_cast<const char16_t*>(codes_.data() + a), b - a));
    }
    emit(text.substr(offsets_[a], offsets_[b] - offsets_[a]), node);
  }

  // jieba's get_DAG + calc: route_end_[k] is the last character of the best first word from k.
  void ComputeRoute() {
    const size_t n = codes_.size();
    route_end_.resize(n);
    route_node_.resize(n);
    route_probability_.resize(n + 1);
    route_probability_[n] = 0.0;
    const DoubleArrayTrie& trie = dict_.trie;
    const double no_word = -dict_.log_total;  // log(1) - log(total)
    for (size_t k = n; k-- > 0;) {
      double best = 0;
      size_t best_end = k;
      int32_t best_node = kUnknownNode;
      bool found = false;
      int32_t node = trie.Child(DoubleArrayTrie::kRoot, codes_[k]);
      for (size_t i = k; node >= 0;) {
        const double weight =
            trie.Weight(node);  // log(freq) - log(total) of a word, else kNoWeight
        if (weight != DoubleArrayTrie::kNoWeight) {
          // max() over (probability, end) tuples: a tie goes to the longer word.
          const double p = weight + route_probability_[i + 1];
          if (!found || p >= best) {
            best = p;
            best_end = i;
            best_node = node;
            found = true;
          }
        }
        if (++i == n) break;
        node = trie.Child(node, codes_[i]);
      }
      if (!found) best = no_word + route_probability_[k + 1];
      route_probability_[k] = best;
      route_end_[k] = static_cast<uint32_t>(best_end);
      route_node_[k] = best_node;
    }
  }

  template <bool kHmm, typename Emit>
  void CutBlock(std::string_view text, Emit& emit) {
    ComputeRoute();
    const size_t n = codes_.size();
    size_t buffer_start = n;  // n: no pending single characters
    for (size_t x = 0; x < n;) {
      const size_t y = route_end_[x] + 1;
      const bool buffered = kHmm ? y - x == 1 : (y - x == 1 && IsAlnumCode(codes_[x]));
      if (buffered) {
        if (buffer_start == n) buffer_start = x;
      } else {
        if (buffer_start != n) {
          FlushBuffer<kHmm>(text, buffer_start, x, emit);
          buffer_start = n;
        }
        EmitRange(text, x, y, route_node_[x], emit);
      }
      x = y;
    }
    if (buffer_start != n) FlushBuffer<kHmm>(text, buffer_start, n, emit);
  }

  template <bool kHmm, typename Emit>
  void FlushBuffer(std::string_view text, size_t a, size_t b, Emit& emit) {
    if (!kHmm || b - a == 1) {  // HMM off: the buffer is a run of [a-zA-Z0-9], one word
      EmitRange(text, a, b, kUnknownNode, emit);
      return;
    }
    const auto frequency = dict_.FrequencyOfCodes(
        std::u16string_view(reinterpret_cast<const char16_t*>(codes_.data() + a), b - a));
    if (frequency && *frequency > 0) {
      for (size_t i = a; i < b; ++i) EmitRange(text, i, i + 1, kUnknownNode, emit);
    } else {
      FinalSeg(text, a, b, emit);
    }
  }

  // finalseg.cut: Han runs through the HMM, other runs split by re_skip.
  template <typename Emit>
  void FinalSeg(std::string_view text, size_t a, size_t b, Emit& emit) {
    for (size_t i = a; i < b;) {
      const bool han = IsHanCode(codes_[i]);
      size_t j = i + 1;
      while (j < b && IsHanCode(codes_[j]) == han) ++j;
      if (han) {
        HmmCut(text, i, j, emit);
      } else {
        SkipSplit(text, i, j, emit);
      }
      i = j;
    }
  }

  template <typename Emit>
  void HmmCut(std::string_view text, size_t a, size_t b, Emit& emit) {
    Viterbi(dict_.hmm, std::span<const CharCode>(codes_.data() + a, b - a), &states_, &back_);
    const size_t length = b - a;
    size_t begin = 0, next = 0;
    for (size_t t = 0; t < length; ++t) {
      const uint8_t state = states_[t];
      if (state == kB) {
        begin = t;
      } else if (state == kE) {
        EmitHmmWord(text, a + begin, a + t + 1, emit);
        next = t + 1;
      } else if (state == kS) {
        EmitHmmWord(text, a + t, a + t + 1, emit);
        next = t + 1;
      }
    }
    if (next < length) EmitHmmWord(text, a + next, b, emit);
  }

  template <typename Emit>
  void EmitHmmWord(std::string_view text, size_t a, size_t b, Emit& emit) {
    if (b - a > 1 && !dict_.force_split.empty() &&
        dict_.force_split.count(std::string(text.substr(offsets_[a], offsets_[b] - offsets_[a])))) {
      for (size_t i = a; i < b; ++i) EmitRange(text, i, i + 1, kUnknownNode, emit);
      return;
    }
    EmitRange(text, a, b, kUnknownNode, emit);
  }

  // re.split("([a-zA-Z0-9]+(?:\.\d+)?%?)") keeping the non-empty pieces.
  template <typename Emit>
  void SkipSplit(std::string_view text, size_t a, size_t b, Emit& emit) {
    size_t last = a;
    for (size_t pos = a; pos < b;) {
      if (!IsAlnumCode(codes_[pos])) {
        ++pos;
        continue;
      }
      const size_t start = pos;
      while (pos < b && IsAlnumCode(codes_[pos])) ++pos;
      if (pos + 1 < b && codes_[pos] == kDotCode && IsDigitCode(codes_[pos + 1])) {
        pos += 2;
        while (pos < b && IsDigitCode(codes_[pos])) ++pos;
      }
      if (pos < b && codes_[pos] == kPercentCode) ++pos;
      if (last < start) EmitRange(text, last, start, kUnknownNode, emit);
      EmitRange(text, start, pos, kUnknownNode, emit);
      last = pos;
    }
    if (last < b) EmitRange(text, last, b, kUnknownNode, emit);
  }

  // jieba's __cut_all.
  template <typename Emit>
  void CutBlockAll(std::string_view text, Emit& emit) {
    const size_t n = codes_.size();
    const DoubleArrayTrie& trie = dict_.trie;
    std::vector<size_t> ends;
    long old_j = -1;
    bool eng_scan = false;
    size_t eng_start = 0, eng_end = 0;  // the English buffer while it is one piece of the text
    std::string eng_joined;             // and when it is not
    bool eng_split = false;
    auto flush_eng = [&] {
      if (eng_split) {
        emit(std::string_view(eng_joined), kUnknownNode);
      } else {
        EmitRange(text, eng_start, eng_end, kUnknownNode, emit);
      }
    };
    for (size_t k = 0; k < n; ++k) {
      ends.clear();
      int32_t node = trie.Child(DoubleArrayTrie::kRoot, codes_[k]);
      for (size_t i = k; node >= 0;) {
        if (trie.Value(node) >= 0) ends.push_back(i);
        if (++i == n) break;
        node = trie.Child(node, codes_[i]);
      }
      if (ends.empty()) ends.push_back(k);
      if (eng_scan && !IsAlnumCode(codes_[k])) {
        eng_scan = false;
        flush_eng();
      }
      if (ends.size() == 1 && static_cast<long>(k) > old_j) {
        const size_t last = ends[0];
        if (IsAlnumCode(codes_[k])) {
          if (!eng_scan) {
            eng_scan = true;
            eng_split = false;
            eng_start = k;
            eng_end = last + 1;
          } else if (!eng_split && eng_end == k) {
            eng_end = last + 1;
          } else {
            if (!eng_split) {
              eng_joined.assign(
                  text.substr(offsets_[eng_start], offsets_[eng_end] - offsets_[eng_start]));
              eng_split = true;
            }
            eng_joined.append(text.substr(offsets_[k], offsets_[last + 1] - offsets_[k]));
          }
        }
        if (!eng_scan) EmitRange(text, k, last + 1, kUnknownNode, emit);
        old_j = static_cast<long>(last);
      } else {
        for (size_t j : ends) {
          if (j > k) {
            EmitRange(text, k, j + 1, kUnknownNode, emit);
            old_j = static_cast<long>(j);
          }
        }
      }
    }
    if (eng_scan) flush_eng();
  }

  // re.split("(\r\n|\s)") of a run of other characters, every piece kept (cut_all keeps empty
  // ones).
  template <typename Emit>
  void SplitOnSpace(std::string_view text, size_t start, size_t end, Emit& emit) {
    const auto* p = reinterpret_cast<const unsigned char*>(text.data());
    size_t piece = start;
    for (size_t q = start; q < end;) {
      char32_t cp;
      const auto n = static_cast<size_t>(DecodeCharacter(p + q, p + end, &cp));
      size_t space = 0;
      if (cp == '\r' && q + 1 < end && p[q + 1] == '\n') {
        space = 2;
      } else if (IsPythonSpace(cp)) {
        space = n;
      }
      if (space == 0) {
        q += n;
        continue;
      }
      emit(text.substr(piece, q - piece), kUnknownNode);
      emit(text.substr(q, space), kUnknownNode);
      q += space;
      piece = q;
    }
    emit(text.substr(piece, end - piece), kUnknownNode);
  }

  const DictionaryData& dict_;
  bool resolve_nodes_ = false;
  std::optional<size_t> first_invalid_;
  std::vector<CharCode> codes_;
  std::vector<uint32_t> offsets_;  // byte offset of each code in the text, and of the block's end
  std::vector<uint32_t> route_end_;
  std::vector<int32_t> route_node_;
  std::vector<double> route_probability_;
  std::vector<uint8_t> states_;
  std::vector<std::array<uint8_t, 4>> back_;
};

}  // namespace neardup::segment_internal

#endif  // NEARDUP_SEGMENT_CUT_ENGINE_H_
