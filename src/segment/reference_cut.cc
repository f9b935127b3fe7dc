#include "segment/reference_cut.h"

#include <cmath>

#include "segment/char_class.h"

namespace neardup::segment_internal {

bool IsBlockCharacter(char32_t cp) { return CodeOf(cp) != 0; }

std::vector<std::vector<size_t>> ReferenceDag(std::u32string_view sentence,
                                              const FrequencyLookup& frequency) {
  const size_t n = sentence.size();
  std::vector<std::vector<size_t>> dag(n);
  for (size_t k = 0; k < n; ++k) {
    size_t i = k;
    while (i < n) {
      auto f = frequency(sentence.substr(k, i - k + 1));
      if (!f) break;
      if (*f != 0) dag[k].push_back(i);
      ++i;
    }
    if (dag[k].empty()) dag[k].push_back(k);
  }
  return dag;
}

std::vector<std::pair<double, size_t>> ReferenceRoute(std::u32string_view sentence,
                                                      const std::vector<std::vector<size_t>>& dag,
                                                      const FrequencyLookup& frequency,
                                                      int64_t total) {
  const size_t n = sentence.size();
  std::vector<std::pair<double, size_t>> route(n + 1);
  route[n] = {0.0, 0};
  const double log_total = std::log(static_cast<double>(total));
  for (size_t idx = n; idx-- > 0;) {
    bool first = true;
    for (size_t x : dag[idx]) {
      auto f = frequency(sentence.substr(idx, x - idx + 1));
      const int64_t count = f && *f != 0 ? *f : 1;
      const std::pair<double, size_t> candidate{
          std::log(static_cast<double>(count)) - log_total + route[x + 1].first, x};
      if (first || candidate > route[idx]) route[idx] = candidate;
      first = false;
    }
  }
  return route;
}

namespace {

bool IsEnglish(char32_t cp) {
  return (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z') || (cp >= '0' && cp <= '9');
}

void CutBlockNoHmm(std::u32string_view block, const FrequencyLookup& frequency, int64_t total,
                   std::vector<std::u32string>* out) {
  const auto dag = ReferenceDag(block, frequency);
  const auto route = ReferenceRoute(block, dag, frequency, total);
  std::u32string buf;
  for (size_t x = 0; x < block.size();) {
    const size_t y = route[x].second + 1;
    const std::u32string_view word = block.substr(x, y - x);
    if (word.size() == 1 && IsEnglish(word[0])) {
      buf += word;
    } else {
      if (!buf.empty()) out->push_back(std::move(buf));
      buf.clear();
      out->emplace_back(word);
    }
    x = y;
  }
  if (!buf.empty()) out->push_back(std::move(buf));
}

}  // namespace

std::vector<std::u32string> ReferenceCutNoHmm(std::u32string_view sentence,
                                              const FrequencyLookup& frequency, int64_t total) {
  std::vector<std::u32string> out;
  for (size_t i = 0; i < sentence.size();) {
    size_t j = i;
    const bool block = IsBlockCharacter(sentence[i]);
    while (j < sentence.size() && IsBlockCharacter(sentence[j]) == block) ++j;
    if (block) {
      CutBlockNoHmm(sentence.substr(i, j - i), frequency, total, &out);
    } else {
      for (size_t k = i; k < j; ++k) {
        if (sentence[k] == U'\r' && k + 1 < j && sentence[k + 1] == U'\n') {
          out.emplace_back(U"\r\n");
          ++k;
        } else {
          out.emplace_back(1, sentence[k]);
        }
      }
    }
    i = j;
  }
  return out;
}

}  // namespace neardup::segment_internal
