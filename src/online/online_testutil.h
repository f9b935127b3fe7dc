// Helpers of the online index's tests: a corpus of related texts, and the variants of the index.
#ifndef NEARDUP_ONLINE_ONLINE_TESTUTIL_H_
#define NEARDUP_ONLINE_ONLINE_TESTUTIL_H_

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <utility>
#include <vector>

#include "neardup/online_index.h"

namespace neardup::testing {

// Texts of related documents: bases of 20-60 words from a small vocabulary, each copied with 0-4
// word edits, plus blank and symbol-only lines.
inline std::vector<std::string> MakeCorpus(size_t bases, size_t copies, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<std::string> words;
  for (int i = 0; i < 300; ++i) {
    std::string w;
    const int length = 2 + static_cast<int>(rng() % 7);
    for (int c = 0; c < length; ++c) w += static_cast<char>('a' + rng() % 26);
    words.push_back(w);
  }
  const std::vector<std::string> chinese = {"中文", "文档", "相似", "重复",
                                            "检测", "网页", "新闻", "文章"};
  std::vector<std::vector<std::string>> base_words(bases);
  for (auto& b : base_words) {
    const size_t n = 20 + rng() % 40;
    for (size_t i = 0; i < n; ++i)
      b.push_back(rng() % 10 == 0 ? chinese[rng() % chinese.size()] : words[rng() % words.size()]);
  }
  std::vector<std::string> texts;
  for (size_t i = 0; i < bases * copies; ++i) {
    if (rng() % 40 == 0) {
      texts.push_back(rng() % 2 ? "" : "□□□，。");
      continue;
    }
    std::vector<std::string> w = base_words[rng() % bases];
    const int edits = static_cast<int>(rng() % 5);
    for (int e = 0; e < edits; ++e) {
      const size_t at = rng() % w.size();
      if (rng() % 2) {
        w[at] = words[rng() % words.size()];
      } else if (w.size() > 5) {
        w.erase(w.begin() + static_cast<std::ptrdiff_t>(at));
      }
    }
    std::string text;
    for (const auto& x : w) text += (text.empty() ? "" : " ") + x;
    texts.push_back(text);
  }
  return texts;
}

inline MethodOptions Method(DedupMethod method) {
  MethodOptions o;
  o.method = method;
  return o;
}

// A method, and for kAccurate where the sketches are kept (memory or a file).
struct Variant {
  DedupMethod method;
  bool sketch_file = false;
};

inline OnlineIndexOptions Options(const Variant& variant, MethodOptions method) {
  OnlineIndexOptions options;
  options.method = std::move(method);
  if (variant.sketch_file) options.sketch_directory = ::testing::TempDir();
  return options;
}
inline OnlineIndexOptions Options(const Variant& variant) {
  return Options(variant, Method(variant.method));
}

}  // namespace neardup::testing

#endif  // NEARDUP_ONLINE_ONLINE_TESTUTIL_H_
