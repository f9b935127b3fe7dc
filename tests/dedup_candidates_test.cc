// End to end, the accurate method must report every pair that shares a band key and whose sketch
// estimate reaches the threshold, including pairs that share one band only: RunDedup's pairs output
// is compared with a brute force over all document pairs, computed with the public Sketcher. Under
// the default design (20 bands of 6 rows) a pair at the threshold shares about five bands, and one
// sharing a single given band turns up once in tens of thousands of edited copies; four bands of
// three rows make such pairs common, so that losing any one band loses a pair.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "neardup/dedup.h"
#include "neardup/method.h"
#include "neardup/simhash.h"
#include "neardup/sketch.h"
#include "testutil.h"

namespace neardup {
namespace {

struct SketchedText {
  std::string text;
  std::vector<uint8_t> sketch;
  std::vector<uint32_t> keys;
};

// Sketches text as RunDedup does with `dedup`'s features, sketch and threshold (rows 0: chosen
// for the threshold).
class Sketches {
 public:
  explicit Sketches(const DedupOptions& dedup) {
    signer_ = std::move(DocumentSigner::Create(dedup.similarity)).value();
    threshold_ = signer_->options().threshold;
    sketcher_ = signer_->sketcher();
  }

  SketchedText Sketch(const std::string& text) {
    auto signature = signer_->Sign(text);
    EXPECT_TRUE(signature.ok());
    return SketchedText{text, signature->sketch, signature->band_keys};
  }

  // The bands whose keys a and b share.
  static std::vector<size_t> SharedBands(const SketchedText& a, const SketchedText& b) {
    std::vector<size_t> shared;
    for (size_t j = 0; j < a.keys.size(); ++j) {
      if (a.keys[j] == b.keys[j]) shared.push_back(j);
    }
    return shared;
  }

  bool Similar(const SketchedText& a, const SketchedText& b) const {
    return sketcher_->Estimate(a.sketch.data(), b.sketch.data()) >= threshold_;
  }

  size_t bands() const { return static_cast<size_t>(sketcher_->options().bands); }

 private:
  double threshold_ = 0;
  std::unique_ptr<DocumentSigner> signer_;
  const Sketcher* sketcher_ = nullptr;
};

// `words` with `changes` of them replaced by words of another vocabulary.
std::string Edited(std::vector<std::string> words, size_t changes, std::mt19937_64& rng) {
  for (size_t c = 0; c < changes; ++c)
    words[rng() % words.size()] = "edit" + std::to_string(rng() % 100000);
  return testing::Join(words);
}

// RunDedup's pairs under `options` (its sketch and threshold) against the brute force, on edited
// copies of random texts and, with_one_band_pairs, a pair sharing only the first band, one sharing
// only the last and one sharing only a middle band: a join that loses one band loses a pair.
void ExpectEveryPair(DedupOptions options, bool with_one_band_pairs) {
  options.boundary_sigmas = 0;  // the sketch decides every pair, as the brute force does
  Sketches sketches(options);
  std::mt19937_64 rng(41);
  std::vector<SketchedText> corpus;
  // Each walk edits a copy of a base text one word at a time, from Jaccard similarity 1 down to
  // below the threshold, through the similarities where pairs share few bands.
  auto add_pair_sharing_only = [&](size_t band) {
    for (int walk = 0; walk < 10000; ++walk) {
      const auto words = testing::RandomWords(rng, 40, 100000);
      const SketchedText base = sketches.Sketch(testing::Join(words));
      std::vector<std::string> edited_words = words;
      for (size_t changes = 1; changes <= words.size(); ++changes) {
        edited_words[rng() % words.size()] = "edit" + std::to_string(rng() % 100000);
        const SketchedText edited = sketches.Sketch(testing::Join(edited_words));
        if (!sketches.Similar(base, edited)) break;
        if (Sketches::SharedBands(base, edited) == std::vector<size_t>{band}) {
          corpus.push_back(base);
          corpus.push_back(edited);
          return true;
        }
      }
    }
    return false;
  };
  if (with_one_band_pairs) {
    ASSERT_TRUE(add_pair_sharing_only(0));
    ASSERT_TRUE(add_pair_sharing_only(sketches.bands() - 1));
    ASSERT_TRUE(add_pair_sharing_only(sketches.bands() / 2));
  }
  // Clusters of edited copies (pairs sharing many bands, some too far apart) and unrelated texts.
  for (int group = 0; group < 30; ++group) {
    const auto words = testing::RandomWords(rng, 60 + rng() % 60, 100000);
    corpus.push_back(sketches.Sketch(testing::Join(words)));
    for (int copy = static_cast<int>(rng() % 4); copy > 0; --copy) {
      corpus.push_back(sketches.Sketch(Edited(words, rng() % 8, rng)));
    }
  }
  std::shuffle(corpus.begin(), corpus.end(), rng);

  std::set<std::pair<std::string, std::string>> want;
  size_t one_band_pairs = 0;
  for (size_t a = 0; a < corpus.size(); ++a) {
    for (size_t b = a + 1; b < corpus.size(); ++b) {
      const auto shared = Sketches::SharedBands(corpus[a], corpus[b]);
      if (shared.empty() || !sketches.Similar(corpus[a], corpus[b])) continue;
      want.insert({"d" + std::to_string(a), "d" + std::to_string(b)});
      one_band_pairs += shared.size() == 1;
    }
  }
  if (with_one_band_pairs) {
    EXPECT_GE(one_band_pairs, 3u);
  }
  EXPECT_GT(want.size(), 30u);

  testing::TempDir dir;
  std::string jsonl;
  for (size_t d = 0; d < corpus.size(); ++d) {
    jsonl += "{\"id\":\"d" + std::to_string(d) + "\",\"text\":\"" + corpus[d].text + "\"}\n";
  }
  options.inputs = {dir.File("corpus.jsonl", jsonl)};
  options.pairs_path = dir.Path("pairs.tsv");
  options.threads = 2;
  auto report = RunDedup(options);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(report->documents, corpus.size());

  std::set<std::pair<std::string, std::string>> got;
  std::ifstream in(options.pairs_path);
  for (std::string line; std::getline(in, line);) {
    std::istringstream fields(line);
    std::string a, b;
    fields >> a >> b;
    // Ids in corpus order: the pair as the brute force names it.
    if (std::stoul(a.substr(1)) > std::stoul(b.substr(1))) std::swap(a, b);
    EXPECT_TRUE(got.insert({a, b}).second) << "pair listed twice: " << line;
  }
  for (const auto& [a, b] : want)
    EXPECT_TRUE(got.count({a, b})) << "pair missing: " << a << " " << b;
  for (const auto& [a, b] : got)
    EXPECT_TRUE(want.count({a, b})) << "pair not in the brute force: " << a << " " << b;
  EXPECT_EQ(report->pairs, want.size());
}

// Four bands of three rows: pairs near the threshold often share one band only.
TEST(DedupCandidates, PairsAreEveryBandSharingPairAboveThreshold) {
  DedupOptions options;
  options.similarity.sketch = SketchOptions{1024, 1, 4, 3};
  ExpectEveryPair(options, /*with_one_band_pairs=*/true);
}

// The default design (20 bands of 6 rows), where a pair near the threshold shares about five bands.
TEST(DedupCandidates, DefaultDesignPairsAreEveryBandSharingPairAboveThreshold) {
  ExpectEveryPair(DedupOptions{}, /*with_one_band_pairs=*/false);
}

}  // namespace
}  // namespace neardup
