#include "neardup/dedup.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>

#include "neardup/hamming.h"
#include "neardup/index_file.h"
#include "neardup/method.h"
#include "neardup/sketch.h"
#include "testutil.h"

namespace neardup {
namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) lines.push_back(line);
  return lines;
}

// A corpus of random documents, some of them with near-duplicate copies (one word changed) and
// exact copies, shuffled.
std::vector<std::string> MakeCorpus(uint64_t seed, size_t originals) {
  std::mt19937_64 rng(seed);
  std::vector<std::string> docs;
  for (size_t i = 0; i < originals; ++i) {
    auto words = testing::RandomWords(rng, 150 + rng() % 100);
    docs.push_back(testing::Join(words));
    if (rng() % 3 == 0) {
      words[rng() % words.size()] = "edited";
      docs.push_back(testing::Join(words));
    }
    if (rng() % 5 == 0) docs.push_back(docs.back());
  }
  std::shuffle(docs.begin(), docs.end(), rng);
  return docs;
}

// The expected outcome computed the slow, obvious way: brute-force pairs within k over the
// library's fingerprints, connected components by repeated relabelling, the first document of each
// kept.
struct Expected {
  std::set<size_t> kept;
  std::map<size_t, size_t> dup_to_kept;
  size_t pairs = 0;
  size_t clusters = 0;
};

// Components of the graph whose edges are the pairs (i < j) for which is_pair holds.
Expected Components(size_t n, const std::function<bool(size_t, size_t)>& is_pair) {
  std::vector<size_t> label(n);
  for (size_t i = 0; i < n; ++i) label[i] = i;
  std::vector<std::pair<size_t, size_t>> edges;
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = i + 1; j < n; ++j) {
      if (is_pair(i, j)) edges.emplace_back(i, j);
    }
  }
  Expected e;
  e.pairs = edges.size();
  for (bool changed = true; changed;) {
    changed = false;
    for (auto [i, j] : edges) {
      if (label[i] != label[j]) {
        label[i] = label[j] = std::min(label[i], label[j]);
        changed = true;
      }
    }
  }
  std::map<size_t, size_t> sizes;
  for (size_t i = 0; i < n; ++i) ++sizes[label[i]];
  for (auto& [l, count] : sizes) e.clusters += count >= 2;
  for (size_t i = 0; i < n; ++i) {
    if (label[i] == i) {
      e.kept.insert(i);
    } else {
      e.dup_to_kept[i] = label[i];
    }
  }
  return e;
}

Expected BruteForce(const std::vector<std::string>& docs, int k) {
  auto f = std::move(Fingerprinter::Create({})).value();
  std::vector<uint64_t> fps;
  for (const auto& d : docs) fps.push_back(f->Fingerprint(d)->simhash);
  return Components(docs.size(),
                    [&](size_t i, size_t j) { return HammingDistance(fps[i], fps[j]) <= k; });
}

// Sketches and band keys of the documents, computed through the public API one by one.
struct Signatures {
  std::unique_ptr<Sketcher> sketcher;
  std::vector<std::vector<uint8_t>> sketches;
  std::vector<std::vector<uint32_t>> keys;
  std::vector<std::vector<uint64_t>> features;  // distinct feature hashes, ascending

  // The exact Jaccard similarity of the feature sets.
  double ExactJaccard(size_t i, size_t j) const {
    const auto& a = features[i];
    const auto& b = features[j];
    if (a.empty() && b.empty()) return 1;
    std::vector<uint64_t> both;
    std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(both));
    return static_cast<double>(both.size()) /
           static_cast<double>(a.size() + b.size() - both.size());
  }

  double Jaccard(size_t i, size_t j) const {
    return *sketcher->EstimateJaccard(sketches[i], sketches[j]);
  }
  bool ShareBand(size_t i, size_t j) const {
    for (size_t b = 0; b < keys[i].size(); ++b) {
      if (keys[i][b] == keys[j][b]) return true;
    }
    return false;
  }
};

Signatures Sign(const std::vector<std::string>& docs, double threshold) {
  auto fingerprinter = std::move(Fingerprinter::Create(AccurateFingerprintOptions())).value();
  Signatures s;
  s.sketcher = std::move(Sketcher::Create({1024, 1, 20, *ChooseRows(threshold, 20)})).value();
  auto builder = fingerprinter->NewBuilder();
  for (const auto& d : docs) {
    builder->Reset();
    EXPECT_TRUE(builder->Update(d).ok());
    EXPECT_TRUE(builder->Finish().ok());
    s.sketches.emplace_back(s.sketcher->sketch_bytes());
    s.keys.emplace_back(20);
    const auto hashes = builder->DistinctFeatureHashes();
    s.features.emplace_back(hashes.begin(), hashes.end());
    std::sort(s.features.back().begin(), s.features.back().end());
    EXPECT_TRUE(
        s.sketcher->Compute(builder->DistinctFeatureHashes(), s.sketches.back(), s.keys.back())
            .ok());
  }
  return s;
}

std::string Score(double jaccard) {
  char text[16];
  std::snprintf(text, sizeof(text), "%.4f", jaccard);
  return text;
}

// Originals with copies edited at several strengths (pairs fall on both sides of the threshold),
// exact copies, and Chinese texts printed in Traditional and in Simplified characters (the same
// text once folded: 這個們說時來會對國學 are the Traditional forms of 这个们说时来会对国学).
std::vector<std::string> MakeGradedCorpus(uint64_t seed, size_t originals) {
  std::mt19937_64 rng(seed);
  const std::u32string traditional = U"這個們說時來會對國學", simplified = U"这个们说时来会对国学";
  const std::u32string common = U"的是人有在不了和中大上为";
  std::vector<std::string> docs;
  for (size_t i = 0; i < originals; ++i) {
    if (i % 8 == 0) {
      std::string trad, simp;
      for (int c = 0; c < 60 + static_cast<int>(rng() % 60); ++c) {
        const bool folded = rng() % 2 == 0;
        const size_t t = rng() % traditional.size(), m = rng() % common.size();
        const char32_t a = folded ? traditional[t] : common[m],
                       b = folded ? simplified[t] : common[m];
        for (auto [cp, out] : {std::pair{a, &trad}, std::pair{b, &simp}}) {
          out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
          out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
          out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
        }
      }
      docs.push_back(trad);
      docs.push_back(simp);
      continue;
    }
    auto words = testing::RandomWords(rng, 80 + rng() % 120);
    docs.push_back(testing::Join(words));
    for (size_t copies = rng() % 4; copies > 0; --copies) {
      auto edited = words;
      const double strength =
          0.005 * static_cast<double>(rng() % 30);  // up to 15% of words replaced
      for (auto& w : edited) {
        if (static_cast<double>(rng() % 1000) / 1000 < strength)
          w = testing::RandomWords(rng, 1)[0];
      }
      docs.push_back(testing::Join(edited));
    }
    if (rng() % 5 == 0) docs.push_back(docs.back());
  }
  std::shuffle(docs.begin(), docs.end(), rng);
  return docs;
}

class DedupTest : public ::testing::Test {
 protected:
  DedupOptions Options(const std::string& input) {
    DedupOptions o;
    o.inputs = {input};
    o.kept_path = dir_.Path("kept.txt");
    o.dups_path = dir_.Path("dups.tsv");
    o.clusters_path = dir_.Path("clusters.jsonl");
    o.pairs_path = dir_.Path("pairs.tsv");
    o.report_path = dir_.Path("report.json");
    return o;
  }
  testing::TempDir dir_;
};

TEST_F(DedupTest, SimhashMethodEqualsBruteForce) {
  for (int k : {0, 3, 6}) {
    auto docs = MakeCorpus(static_cast<uint64_t>(k) + 1, 120);
    std::string input = dir_.File("corpus.txt", testing::Join(docs, "\n") + "\n");
    DedupOptions o = Options(input);
    o.similarity.method = DedupMethod::kSimhash;
    o.similarity.features = FingerprintOptions{};
    o.similarity.k = k;
    auto report = RunDedup(o);
    ASSERT_TRUE(report.ok()) << report.status().ToString();
    Expected e = BruteForce(docs, k);
    EXPECT_EQ(report->documents, docs.size());
    EXPECT_EQ(report->kept, e.kept.size());
    EXPECT_EQ(report->pairs, e.pairs);
    EXPECT_EQ(report->clusters, e.clusters);
    std::string want_kept;
    for (size_t i : e.kept) want_kept += docs[i] + "\n";
    EXPECT_EQ(ReadFile(o.kept_path), want_kept);
    std::string want_dups;
    auto f = std::move(Fingerprinter::Create({})).value();
    for (auto [dup, kept] : e.dup_to_kept) {
      want_dups += std::to_string(dup + 1) + "\t" + std::to_string(kept + 1) + "\t" +
                   std::to_string(HammingDistance(f->Fingerprint(docs[dup])->simhash,
                                                  f->Fingerprint(docs[kept])->simhash)) +
                   "\n";
    }
    EXPECT_EQ(ReadFile(o.dups_path), want_dups);
    EXPECT_EQ(Lines(ReadFile(o.pairs_path)).size(), e.pairs);
    EXPECT_EQ(Lines(ReadFile(o.clusters_path)).size(), e.clusters);
  }
}

TEST_F(DedupTest, AccurateMethodEqualsBruteForce) {
  for (double threshold : {0.8, 0.6}) {
    auto docs = MakeGradedCorpus(threshold == 0.8 ? 21 : 22, testing::Sanitized() ? 60 : 150);
    std::string input = dir_.File("corpus.txt", testing::Join(docs, "\n") + "\n");
    DedupOptions o = Options(input);
    o.similarity.threshold = threshold;
    o.boundary_sigmas =
        0;  // the sketch decides every pair (AccurateBoundaryPairsAreDecidedExactly)
    auto report = RunDedup(o);
    ASSERT_TRUE(report.ok()) << report.status().ToString();
    const Signatures sig = Sign(docs, threshold);
    std::vector<std::string> want_pairs;
    size_t near_threshold = 0;
    Expected e = Components(docs.size(), [&](size_t i, size_t j) {
      const double jaccard = sig.Jaccard(i, j);
      near_threshold += std::abs(jaccard - threshold) < 0.1;
      if (!sig.ShareBand(i, j) || jaccard < threshold) return false;
      want_pairs.push_back(std::to_string(i + 1) + "\t" + std::to_string(j + 1) + "\t" +
                           Score(jaccard));
      return true;
    });
    EXPECT_GT(near_threshold, 10u) << "the corpus must test the threshold";
    EXPECT_EQ(report->documents, docs.size());
    EXPECT_EQ(report->kept, e.kept.size());
    EXPECT_EQ(report->pairs, e.pairs);
    EXPECT_EQ(report->clusters, e.clusters);
    std::string want_kept;
    for (size_t i : e.kept) want_kept += docs[i] + "\n";
    EXPECT_EQ(ReadFile(o.kept_path), want_kept);
    std::string want_dups;
    for (auto [dup, kept] : e.dup_to_kept) {
      want_dups += std::to_string(dup + 1) + "\t" + std::to_string(kept + 1) + "\t" +
                   Score(sig.Jaccard(dup, kept)) + "\n";
    }
    EXPECT_EQ(ReadFile(o.dups_path), want_dups);
    auto got_pairs = Lines(ReadFile(o.pairs_path));
    std::sort(got_pairs.begin(), got_pairs.end());
    std::sort(want_pairs.begin(), want_pairs.end());
    EXPECT_EQ(got_pairs, want_pairs);
    EXPECT_EQ(Lines(ReadFile(o.clusters_path)).size(), e.clusters);
    // Every Traditional text is paired with its Simplified printing (identical once folded).
    size_t cjk_pairs = 0;
    for (const auto& line : want_pairs) cjk_pairs += line.ends_with("\t1.0000");
    EXPECT_GT(cjk_pairs, 5u);
  }
}

// With the default boundary, a pair whose estimate lies within three standard deviations (at its
// sizes) of the threshold is decided by its exact Jaccard similarity, which the pairs file shows;
// the others by the estimate. Pairs of two documents in exact form have an exact estimate.
TEST_F(DedupTest, AccurateBoundaryPairsAreDecidedExactly) {
  const double threshold = 0.8;
  auto docs = MakeGradedCorpus(21, testing::Sanitized() ? 60 : 150);
  std::string input = dir_.File("corpus.txt", testing::Join(docs, "\n") + "\n");
  DedupOptions o = Options(input);
  ASSERT_EQ(o.boundary_sigmas, 3);
  auto report = RunDedup(o);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  const Signatures sig = Sign(docs, threshold);
  const SketchOptions& sketch = sig.sketcher->options();
  const size_t capacity = sig.sketcher->exact_capacity();
  std::vector<std::string> want_pairs;
  size_t boundary = 0, flipped = 0;
  Components(docs.size(), [&](size_t i, size_t j) {
    if (!sig.ShareBand(i, j)) return false;
    const size_t a = sig.features[i].size(), b = sig.features[j].size();
    const double margin =
        a <= capacity && b <= capacity ? 0 : 3 * EstimateSpread(sketch, threshold, a, b);
    double jaccard = sig.Jaccard(i, j);
    if (jaccard < threshold - margin) return false;
    if (margin > 0 && jaccard < threshold + margin) {
      ++boundary;
      const double exact = sig.ExactJaccard(i, j);
      flipped += (exact >= threshold) != (jaccard >= threshold);
      jaccard = exact;
    }
    if (jaccard < threshold) return false;
    want_pairs.push_back(std::to_string(i + 1) + "\t" + std::to_string(j + 1) + "\t" +
                         Score(jaccard));
    return true;
  });
  // (Components may skip pairs already connected: count the boundary pairs over all of them.)
  boundary = 0;
  for (size_t i = 0; i < docs.size(); ++i) {
    for (size_t j = i + 1; j < docs.size(); ++j) {
      const size_t a = sig.features[i].size(), b = sig.features[j].size();
      if (!sig.ShareBand(i, j) || (a <= capacity && b <= capacity)) continue;
      const double margin = 3 * EstimateSpread(sketch, threshold, a, b);
      boundary += std::abs(sig.Jaccard(i, j) - threshold) < margin;
    }
  }
  EXPECT_GT(boundary, 10u) << "the corpus must have pairs near the threshold";
  EXPECT_GT(flipped, 0u) << "some must be decided otherwise than by the sketch";
  // The job counts pairs of groups of identical signatures (the Traditional and Simplified
  // printings of a text are one group), at most the pairs of documents.
  EXPECT_GT(report->boundary_pairs, 0u);
  EXPECT_LE(report->boundary_pairs, boundary);
  EXPECT_EQ(report->boundary_left, 0u);
  auto got_pairs = Lines(ReadFile(o.pairs_path));
  std::sort(got_pairs.begin(), got_pairs.end());
  std::sort(want_pairs.begin(), want_pairs.end());
  EXPECT_EQ(got_pairs, want_pairs);
  // Without the pairs file, the same clusters: the linear join decides the boundary pairs it needs.
  o.pairs_path.clear();
  o.clusters_path = dir_.Path("clusters2.jsonl");
  auto clustered = RunDedup(o);
  ASSERT_TRUE(clustered.ok()) << clustered.status().ToString();
  EXPECT_EQ(clustered->kept, report->kept);
  EXPECT_EQ(ReadFile(o.clusters_path), ReadFile(dir_.Path("clusters.jsonl")));
  EXPECT_TRUE(clustered->warnings.empty());
  // The memory limit bounds how many documents the exact decision holds at once, never which pairs
  // it decides: the smallest limit gives the same pairs, every one decided exactly.
  DedupOptions small = Options(input);
  small.memory_limit = 128 << 10;
  small.pairs_path = dir_.Path("pairs-small.tsv");
  auto limited = RunDedup(small);
  ASSERT_TRUE(limited.ok()) << limited.status().ToString();
  EXPECT_EQ(limited->boundary_pairs, report->boundary_pairs);
  EXPECT_EQ(limited->boundary_left, 0u);
  EXPECT_EQ(ReadFile(small.pairs_path), ReadFile(dir_.Path("pairs.tsv")));
}

// Without a pairs file, the linear join verifies a candidate only when the other document is not
// already in its cluster (as the earlier bands left them): fewer pairs, the same kept documents,
// duplicates and clusters on any thread count (runs here are short: every pair of a run is
// checked).
TEST_F(DedupTest, ClusteringWithoutAllPairsGivesTheSameOutputs) {
  std::mt19937_64 rng(23);
  std::vector<std::string> docs = MakeGradedCorpus(24, testing::Sanitized() ? 40 : 100);
  for (int base = 0; base < 4; ++base) {  // large clusters: many light edits of one document
    const auto words = testing::RandomWords(rng, 150);
    for (int copy = 0; copy < 25; ++copy) {
      auto edited = words;
      edited[rng() % edited.size()] = testing::RandomWords(rng, 1)[0];
      docs.push_back(testing::Join(edited));
    }
  }
  std::shuffle(docs.begin(), docs.end(), rng);
  const std::string input = dir_.File("corpus.txt", testing::Join(docs, "\n") + "\n");
  const DedupOptions all = Options(input);
  auto full = RunDedup(all);
  ASSERT_TRUE(full.ok()) << full.status().ToString();
  EXPECT_TRUE(full->pairs_complete);
  EXPECT_GE(full->pairs, 4u * 25 * 24 / 2);
  for (int threads : {1, 2, 3}) {
    DedupOptions o = Options(input);
    o.pairs_path.clear();
    o.kept_path = dir_.Path("kept2.txt");
    o.dups_path = dir_.Path("dups2.tsv");
    o.clusters_path = dir_.Path("clusters2.jsonl");
    o.threads = threads;
    auto fast = RunDedup(o);
    ASSERT_TRUE(fast.ok()) << fast.status().ToString();
    EXPECT_FALSE(fast->pairs_complete);
    EXPECT_LT(fast->pairs, full->pairs);
    EXPECT_EQ(fast->kept, full->kept);
    EXPECT_EQ(fast->clusters, full->clusters);
    EXPECT_EQ(fast->cluster_size_histogram, full->cluster_size_histogram);
    EXPECT_EQ(ReadFile(o.kept_path), ReadFile(all.kept_path)) << threads;
    EXPECT_EQ(ReadFile(o.dups_path), ReadFile(all.dups_path)) << threads;
    EXPECT_EQ(ReadFile(o.clusters_path), ReadFile(all.clusters_path)) << threads;
    // all_pairs asks for every verification without the file.
    o.all_pairs = true;
    auto counted = RunDedup(o);
    ASSERT_TRUE(counted.ok());
    EXPECT_TRUE(counted->pairs_complete);
    EXPECT_EQ(counted->pairs, full->pairs);
  }
}

TEST_F(DedupTest, SameOutputForAnyThreadCount) {
  auto docs = MakeCorpus(7, 3000);
  std::string input = dir_.File("corpus.txt", testing::Join(docs, "\n") + "\n");
  std::map<std::string, std::string> first;
  for (int threads : {1, 2, 5, 1}) {
    DedupOptions o = Options(input);
    o.threads = threads;
    ASSERT_TRUE(RunDedup(o).ok());
    for (const auto& path : {o.kept_path, o.dups_path, o.clusters_path, o.pairs_path}) {
      if (first.count(path)) {
        EXPECT_EQ(ReadFile(path), first[path]) << path << " with " << threads << " threads";
      } else {
        first[path] = ReadFile(path);
      }
    }
  }
}

// The duplicates file is made 65,536 documents at a time on every thread: a corpus of three such
// stretches, with duplicates in each, gives the same file at any thread count, one line per
// duplicate in input order, each naming an earlier kept document (exact copies at 1.0000).
TEST_F(DedupTest, DuplicatesFileOfSeveralStretchesForAnyThreadCount) {
  std::mt19937_64 rng(21);
  std::vector<std::string> docs;
  std::vector<bool> copy;
  for (size_t i = 0; i < 140000; ++i) {
    const bool is_copy = i > 0 && rng() % 4 == 0;
    docs.push_back(is_copy ? docs[rng() % i] : testing::Join(testing::RandomWords(rng, 14)));
    copy.push_back(is_copy);
  }
  const std::string input = dir_.File("corpus.txt", testing::Join(docs, "\n") + "\n");
  for (DedupMethod method : {DedupMethod::kAccurate, DedupMethod::kSimhash}) {
    std::string first;
    for (int threads : {1, 3}) {
      SCOPED_TRACE(::testing::Message()
                   << "method " << static_cast<int>(method) << " threads " << threads);
      DedupOptions o = Options(input);
      o.pairs_path.clear();  // the default method's sketches are then spilled
      o.similarity.method = method;
      if (method == DedupMethod::kSimhash) o.similarity.features = FingerprintOptions{};
      o.threads = threads;
      auto report = RunDedup(o);
      ASSERT_TRUE(report.ok()) << report.status().ToString();
      const std::string dups = ReadFile(o.dups_path);
      const std::vector<std::string> lines = Lines(dups);
      ASSERT_EQ(lines.size(), report->duplicates);
      uint64_t previous = 0, copies = 0, late = 0;
      for (const std::string& line : lines) {
        std::vector<std::string> fields(1);
        for (char c : line) {
          if (c == '\t') {
            fields.emplace_back();
          } else {
            fields.back().push_back(c);
          }
        }
        ASSERT_EQ(fields.size(), 3u) << line;
        const uint64_t dup = std::stoull(fields[0]), kept = std::stoull(fields[1]);
        EXPECT_GT(dup, previous) << line;
        EXPECT_LT(kept, dup) << line;
        previous = dup;
        if (copy[dup - 1] && docs[dup - 1] == docs[kept - 1]) {
          ++copies;
          EXPECT_EQ(fields[2], method == DedupMethod::kSimhash ? "0" : "1.0000") << line;
        }
        late += dup > 2 * 65536;
      }
      EXPECT_GT(copies, 30000u);
      EXPECT_GT(late, 1000u);
      if (first.empty()) first = dups;
      EXPECT_EQ(dups, first);
    }
  }
}

TEST_F(DedupTest, KeepRules) {
  const std::string base =
      testing::Join(testing::RandomWords(*std::make_unique<std::mt19937_64>(3).get(), 200));
  // Four versions of one document: lengths differ, fingerprints stay within k.
  std::vector<std::string> docs = {
      R"({"id":"a","text":")" + base + R"(","score":1})",
      R"({"id":"b","text":")" + base + R"( extra words","score":5})",
      R"({"id":"c","text":")" + base + R"( more","score":2})",
      R"({"id":"d","text":"completely different text about something else entirely","score":0})",
  };
  std::string input = dir_.File("docs.jsonl", testing::Join(docs, "\n") + "\n");
  struct Case {
    KeepRule rule;
    std::string kept_id;
  } cases[] = {{KeepRule::kFirst, "a"},
               {KeepRule::kLast, "c"},
               {KeepRule::kLongest, "b"},
               {KeepRule::kShortest, "a"},
               {KeepRule::kPriority, "b"}};
  for (const auto& c : cases) {
    DedupOptions o = Options(input);
    o.keep = c.rule;
    o.priority_field = "score";
    o.similarity.k = 7;
    auto report = RunDedup(o);
    ASSERT_TRUE(report.ok()) << report.status().ToString();
    ASSERT_EQ(report->kept, 2u);
    auto kept = Lines(ReadFile(o.kept_path));
    ASSERT_EQ(kept.size(), 2u);
    EXPECT_NE(kept[0].find("\"id\":\"" + c.kept_id + "\""), std::string::npos) << kept[0];
    EXPECT_EQ(kept[1], docs[3]);  // input lines are copied byte for byte
    auto clusters = ReadFile(o.clusters_path);
    EXPECT_NE(clusters.find("{\"representative\":\"" + c.kept_id + "\",\"size\":3,"),
              std::string::npos)
        << clusters;
  }
}

TEST_F(DedupTest, BadDocumentsFailOrAreSkipped) {
  std::string input = dir_.File("bad.jsonl",
                                "{\"text\":\"a good document with several words in it\"}\n"
                                "{\"text\": broken\n"
                                "{\"text\":\"\"}\n"
                                "{\"other\":\"no text field\"}\n"
                                "{\"text\":\"bad \xFF byte but replaced with several words\"}\n");
  DedupOptions o = Options(input);
  auto failed = RunDedup(o);
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.status().message().find(input + ":2: malformed JSON"), std::string::npos)
      << failed.status().message();
  for (const auto& path :
       {o.kept_path, o.dups_path, o.clusters_path, o.pairs_path, o.report_path}) {
    EXPECT_FALSE(std::filesystem::exists(path)) << path;
  }
  // The outputs share the input's folder: after the failed run it holds the input and nothing else,
  // no output and no temporary file beside one.
  ASSERT_EQ(std::filesystem::path(o.kept_path).parent_path(),
            std::filesystem::path(input).parent_path());
  std::vector<std::string> left;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::filesystem::path(input).parent_path())) {
    left.push_back(entry.path().filename().string());
  }
  std::sort(left.begin(), left.end());
  EXPECT_EQ(left, std::vector<std::string>{"bad.jsonl"});

  o.on_error = ErrorPolicy::kSkip;
  auto skipped = RunDedup(o);
  ASSERT_TRUE(skipped.ok()) << skipped.status().ToString();
  EXPECT_EQ(skipped->skipped, 2u);
  EXPECT_EQ(skipped->documents, 3u);  // the empty text is a document without features, kept
  EXPECT_EQ(skipped->empty_documents, 1u);
  ASSERT_EQ(skipped->first_errors.size(), 2u);
  EXPECT_NE(skipped->first_errors[1].find(":4: no text field 'text'"), std::string::npos);
  auto kept = Lines(ReadFile(o.kept_path));
  ASSERT_EQ(kept.size(), 3u);
  EXPECT_EQ(kept[1], "{\"text\":\"\"}");
  EXPECT_NE(kept[2].find("replaced"), std::string::npos);
}

// Documents without an id field are named by their line, counting skipped lines, per file.
TEST_F(DedupTest, LineIdsCountSkippedLines) {
  std::string a =
      dir_.File("a.txt", "alpha beta gamma delta epsilon\n\n!!!\nalpha beta gamma delta epsilon\n");
  std::string b = dir_.File("b.jsonl",
                            "{\"text\":\"alpha beta gamma delta epsilon\"}\n"
                            "{\"id\":\"named\",\"text\":\"alpha beta gamma delta epsilon\"}\n");
  DedupOptions o = Options(a);
  o.on_error = ErrorPolicy::kSkip;
  ASSERT_TRUE(RunDedup(o).ok());
  // The score of identical texts: estimated Jaccard 1 (the accurate default).
  EXPECT_EQ(ReadFile(o.dups_path), "4\t1\t1.0000\n");
  o.inputs = {a, b};
  ASSERT_TRUE(RunDedup(o).ok());
  EXPECT_EQ(ReadFile(o.dups_path), a + ":4\t" + a + ":1\t1.0000\n" + b + ":1\t" + a +
                                       ":1\t1.0000\nnamed\t" + a + ":1\t1.0000\n");
}

TEST_F(DedupTest, FailureLeavesExistingOutputsAlone) {
  std::string input = dir_.File("bad.txt", "fine line of words\n\n");
  DedupOptions o = Options(input);
  o.empty = EmptyPolicy::kFail;
  std::ofstream(o.kept_path) << "previous result\n";
  auto failed = RunDedup(o);
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().message(),
            input +
                ":2: no features: a blank line or text of symbols only (--empty "
                "keep or drop lets it through) (--on-error skip leaves such "
                "documents out)");
  EXPECT_EQ(ReadFile(o.kept_path), "previous result\n");
}

TEST_F(DedupTest, CancelWritesNothing) {
  auto docs = MakeCorpus(9, 2000);
  std::string input = dir_.File("corpus.txt", testing::Join(docs, "\n") + "\n");
  DedupOptions o = Options(input);
  std::atomic<bool> cancel{true};
  o.cancel = &cancel;
  auto report = RunDedup(o);
  ASSERT_FALSE(report.ok());
  EXPECT_EQ(report.status().code(), Status::Code::kCancelled);
  EXPECT_FALSE(std::filesystem::exists(o.kept_path));
}

TEST_F(DedupTest, FoldersCompressionAndMixedFormats) {
  std::filesystem::create_directories(dir_.Path("tree/sub"));
  std::ofstream(dir_.Path("tree/b.txt")) << "second file words here and there again\n";
  std::ofstream(dir_.Path("tree/sub/c.jsonl"))
      << "{\"id\":\"x\",\"text\":\"second file words here and there again\"}\n";
  std::ofstream(dir_.Path("tree/a.txt")) << "first file with its own words only\n";
  ASSERT_EQ(std::system(("gzip " + dir_.Path("tree/a.txt")).c_str()), 0);
  DedupOptions o = Options(dir_.Path("tree"));
  auto report = RunDedup(o);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(report->documents, 3u);
  EXPECT_EQ(report->duplicates, 1u);
  EXPECT_EQ(ReadFile(o.kept_path),
            "first file with its own words only\nsecond file words here and there again\n");
  // Identical texts: estimated Jaccard 1.
  EXPECT_EQ(ReadFile(o.dups_path), "x\t" + dir_.Path("tree/b.txt") + ":1\t1.0000\n");
}

TEST_F(DedupTest, AgainstASavedIndex) {
  for (DedupMethod method : {DedupMethod::kSimhash, DedupMethod::kAccurate}) {
    const FingerprintOptions features =
        method == DedupMethod::kSimhash ? FingerprintOptions{} : AccurateFingerprintOptions();
    auto docs = MakeCorpus(11, 300);
    std::vector<std::string> day1(docs.begin(), docs.begin() + 200),
        day2(docs.begin() + 150, docs.end());
    std::string jsonl1, jsonl2;
    for (size_t i = 0; i < day1.size(); ++i)
      jsonl1 += "{\"id\":\"d1-" + std::to_string(i) + "\",\"text\":\"" + day1[i] + "\"}\n";
    for (size_t i = 0; i < day2.size(); ++i)
      jsonl2 += "{\"id\":\"d2-" + std::to_string(i) + "\",\"text\":\"" + day2[i] + "\"}\n";
    DedupOptions first = Options(dir_.File("day1.jsonl", jsonl1));
    first.similarity.method = method;
    first.similarity.features = features;
    first.save_index = dir_.Path("day1.idx");
    auto r1 = RunDedup(first);
    ASSERT_TRUE(r1.ok()) << r1.status().ToString();
    ASSERT_TRUE(std::filesystem::exists(first.save_index + ".ids"));
    const std::string day1_kept = ReadFile(first.kept_path);  // the second run writes the same path
    DedupOptions second = Options(dir_.File("day2.jsonl", jsonl2));
    second.similarity.method = method;
    second.similarity.features = features;
    second.against_indexes = {first.save_index};
    auto r2 = RunDedup(second);
    ASSERT_TRUE(r2.ok()) << r2.status().ToString();
    // The 50 documents of day 2 that day 1 had (or their near copies) are duplicates of the index.
    EXPECT_GE(r2->duplicates_of_index, 50u);
    auto dups = ReadFile(second.dups_path);
    EXPECT_NE(dups.find("\td1-"), std::string::npos) << "day-1 ids are named through INDEX.ids";
    if (method == DedupMethod::kAccurate) continue;  // AgainstAnAccurateIndexEqualsBruteForce
    // Nothing of day 2 that is kept is within k of a document the index holds (day 1's kept ones).
    auto f = std::move(Fingerprinter::Create(features)).value();
    auto text_of = [](const std::string& line) {
      const auto start = line.find("\"text\":\"") + 8;
      return line.substr(start, line.size() - start - 2);
    };
    std::vector<uint64_t> indexed;
    for (const auto& line : Lines(day1_kept))
      indexed.push_back(f->Fingerprint(text_of(line))->simhash);
    for (const auto& line : Lines(ReadFile(second.kept_path))) {
      EXPECT_EQ(CountWithin(indexed, f->Fingerprint(text_of(line))->simhash, 3), 0u) << line;
    }
  }
}

// Documents as JSONL lines with ids prefix + number.
std::string Jsonl(const std::vector<std::string>& docs, const std::string& prefix) {
  std::string out;
  for (size_t i = 0; i < docs.size(); ++i) {
    out += "{\"id\":\"" + prefix + std::to_string(i) + "\",\"text\":\"" + docs[i] + "\"}\n";
  }
  return out;
}

// The id and text of a JSONL line written by Jsonl.
std::string IdOf(const std::string& line) {
  const auto start = line.find("\"id\":\"") + 6;
  return line.substr(start, line.find('"', start) - start);
}
std::string TextOf(const std::string& line) {
  const auto start = line.find("\"text\":\"") + 8;
  return line.substr(start, line.size() - start - 2);
}

// Day 2 against day 1's index of the default (accurate) method: exactly the day-2 documents with a
// near-duplicate among day 1's kept documents (DocumentSigner::Compare, over all pairs) are
// duplicates of the index, each named with its best match (the highest Jaccard, then the first).
TEST_F(DedupTest, AgainstAnAccurateIndexEqualsBruteForce) {
  auto docs = MakeGradedCorpus(31, testing::Sanitized() ? 60 : 150);
  const size_t cut = docs.size() * 6 / 10;
  const std::vector<std::string> day1(docs.begin(),
                                      docs.begin() + static_cast<std::ptrdiff_t>(cut));
  const std::vector<std::string> day2(docs.end() - static_cast<std::ptrdiff_t>(cut), docs.end());
  DedupOptions first = Options(dir_.File("day1.jsonl", Jsonl(day1, "d1-")));
  first.save_index = dir_.Path("day1.idx");
  auto r1 = RunDedup(first);
  ASSERT_TRUE(r1.ok()) << r1.status().ToString();
  auto info = ReadIndexFileInfo(first.save_index);
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(info->kind, IndexFileKind::kSignatures);
  EXPECT_EQ(info->documents, r1->kept);
  auto signer = std::move(DocumentSigner::Create({})).value();
  EXPECT_EQ(info->settings, signer->settings());
  std::vector<std::pair<std::string, Signature>> indexed;  // day 1's kept documents, in order
  for (const auto& line : Lines(ReadFile(first.kept_path)))
    indexed.emplace_back(IdOf(line), *signer->Sign(TextOf(line)));

  DedupOptions second = Options(dir_.File("day2.jsonl", Jsonl(day2, "d2-")));
  second.against_indexes = {first.save_index};
  auto r2 = RunDedup(second);
  ASSERT_TRUE(r2.ok()) << r2.status().ToString();
  EXPECT_TRUE(r2->warnings.empty());
  std::map<std::string, std::string> want;  // day-2 id -> "day-1 id<TAB>score"
  size_t below_one = 0;
  for (size_t i = 0; i < day2.size(); ++i) {
    const Signature signature = *signer->Sign(day2[i]);
    std::optional<double> best;
    std::string best_id;
    for (const auto& [id, stored] : indexed) {
      auto jaccard = signer->Compare(signature, stored);
      if (jaccard && (!best || *jaccard > *best)) {
        best = jaccard;
        best_id = id;
      }
    }
    if (!best) continue;
    want["d2-" + std::to_string(i)] = best_id + "\t" + Score(*best);
    below_one += *best < 1;
  }
  EXPECT_GT(want.size(), 10u);
  EXPECT_GT(below_one, 3u) << "the corpus must have near copies, not only exact ones";
  std::map<std::string, std::string> got;
  for (const auto& line : Lines(ReadFile(second.dups_path))) {
    const auto tab = line.find('\t');
    if (line.compare(tab + 1, 3, "d1-") == 0) got[line.substr(0, tab)] = line.substr(tab + 1);
  }
  EXPECT_EQ(got, want);
  EXPECT_EQ(r2->duplicates_of_index, want.size());
}

// An index built with other settings is refused, naming the difference; against_settings runs with
// the index's own settings; several indexes must agree.
TEST_F(DedupTest, AgainstAnIndexOfOtherSettings) {
  auto docs = MakeGradedCorpus(41, 40);
  const std::string input = dir_.File("day.jsonl", Jsonl(docs, "d-"));
  DedupOptions first = Options(input);
  first.save_index = dir_.Path("a.idx");
  auto r1 = RunDedup(first);
  ASSERT_TRUE(r1.ok()) << r1.status().ToString();
  DedupOptions other = Options(input);
  other.similarity.threshold = 0.7;
  other.save_index = dir_.Path("b.idx");
  other.kept_path = dir_.Path("b.txt");
  ASSERT_TRUE(RunDedup(other).ok());

  DedupOptions o = Options(input);
  o.similarity.threshold = 0.7;
  o.against_indexes = {first.save_index};
  auto refused = RunDedup(o);
  ASSERT_EQ(refused.status().code(), Status::Code::kInvalidArgument);
  EXPECT_NE(refused.status().message().find(first.save_index + " was built with other settings: "),
            std::string::npos)
      << refused.status().ToString();
  EXPECT_NE(refused.status().message().find("threshold 0.7 here, 0.8 in the index"),
            std::string::npos)
      << refused.status().ToString();

  o.similarity.method = DedupMethod::kSimhash;
  refused = RunDedup(o);
  ASSERT_EQ(refused.status().code(), Status::Code::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("method simhash here, accurate in the index"),
            std::string::npos)
      << refused.status().ToString();

  // The index's settings taken for the run: the same outputs as a run given them.
  o.against_settings = true;
  auto taken = RunDedup(o);
  ASSERT_TRUE(taken.ok()) << taken.status().ToString();
  EXPECT_NE(taken->settings.find("method=accurate"), std::string::npos) << taken->settings;
  EXPECT_NE(taken->settings.find("threshold=0.8"), std::string::npos) << taken->settings;
  EXPECT_GE(taken->duplicates_of_index, r1->kept);  // each kept document finds itself
  const std::string taken_dups = ReadFile(o.dups_path);
  DedupOptions given = Options(input);
  given.against_indexes = {first.save_index};
  ASSERT_TRUE(RunDedup(given).ok());
  EXPECT_EQ(ReadFile(given.dups_path), taken_dups);

  // Several indexes: they must agree with the run, and (against_settings) with each other.
  given.against_indexes = {first.save_index, other.save_index};
  refused = RunDedup(given);
  ASSERT_EQ(refused.status().code(), Status::Code::kInvalidArgument);
  EXPECT_NE(refused.status().message().find(
                other.save_index + " was built with other settings: bands 20x6 here, "
                                   "20x4 in the index; threshold 0.8 here, 0.7 in the index"),
            std::string::npos)
      << refused.status().ToString();
  o.against_indexes = {first.save_index, other.save_index};
  refused = RunDedup(o);
  ASSERT_EQ(refused.status().code(), Status::Code::kInvalidArgument);
  EXPECT_NE(refused.status().message().find(other.save_index + " and " + first.save_index +
                                            " were built with different settings: bands 20x4 in " +
                                            other.save_index + ", 20x6 in " + first.save_index +
                                            "; threshold 0.7 in " + other.save_index + ", 0.8 in " +
                                            first.save_index),
            std::string::npos)
      << refused.status().ToString();
  o.against_indexes = {};
  EXPECT_EQ(RunDedup(o).status().code(),
            Status::Code::kInvalidArgument);  // no index to take them from
}

// A version-1 index (tests/data/index_v1, written before index files recorded their settings) is
// still read: matched by its fingerprints with a warning that its settings could not be checked.
TEST_F(DedupTest, AgainstAVersionOneIndex) {
  const std::string dir = std::string(NEARDUP_SOURCE_DIR) + "/tests/data/index_v1/";
  DedupOptions o = Options(dir + "corpus.txt");
  o.similarity.method = DedupMethod::kSimhash;
  o.against_indexes = {dir + "simhash.idx"};
  auto report = RunDedup(o);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(report->duplicates_of_index, 10u);
  ASSERT_EQ(report->warnings.size(), 1u);
  EXPECT_NE(report->warnings[0].find(dir + "simhash.idx records no settings"), std::string::npos)
      << report->warnings[0];
  std::string want;
  for (int line = 1; line <= 10; ++line)
    want += std::to_string(line) + "\told-" + std::to_string(line - 1) + "\t0\n";
  EXPECT_EQ(ReadFile(o.dups_path), want);
  o.against_settings = true;
  auto refused = RunDedup(o);
  ASSERT_EQ(refused.status().code(), Status::Code::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("records no settings"), std::string::npos)
      << refused.status().ToString();
}

TEST_F(DedupTest, BadOptions) {
  DedupOptions o;
  EXPECT_FALSE(RunDedup(o).ok());
  o.inputs = {dir_.Path("missing.txt")};
  auto missing = RunDedup(o);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), Status::Code::kNotFound);
  o.inputs = {dir_.File("x.txt", "words\n")};
  o.similarity.k = 9;
  EXPECT_EQ(RunDedup(o).status().code(), Status::Code::kInvalidArgument);
  o.similarity.k = 3;
  o.keep = KeepRule::kPriority;
  EXPECT_EQ(RunDedup(o).status().code(), Status::Code::kInvalidArgument);
  o.keep = KeepRule::kFirst;
  for (double bad : {0.0, -0.5, 1.5}) {
    o.similarity.threshold = bad;
    EXPECT_EQ(RunDedup(o).status().code(), Status::Code::kInvalidArgument) << bad;
  }
  o.similarity.threshold = 0.8;
  o.similarity.features = AccurateFingerprintOptions();
  o.similarity.features->weighting =
      FeatureWeighting::kOccurrences;  // the sketch needs distinct features
  EXPECT_EQ(RunDedup(o).status().code(), Status::Code::kInvalidArgument);
  o.similarity.features = AccurateFingerprintOptions();
  o.similarity.features->folding_table = dir_.Path("no-such-table.ocd2");
  auto no_table = RunDedup(o);
  EXPECT_EQ(no_table.status().code(), Status::Code::kNotFound);
  EXPECT_NE(no_table.status().message().find("libopencc-data"), std::string::npos);
  o.similarity.features = AccurateFingerprintOptions();
  o.similarity.sketch.bins = 1000;
  EXPECT_EQ(RunDedup(o).status().code(), Status::Code::kInvalidArgument);
  o.similarity.sketch.bins = 1024;
  EXPECT_TRUE(RunDedup(o).ok());
}

// Documents without features (blank lines, symbols only) are kept or dropped, never matched: not
// with each other (their fingerprints and sketches are all zero), not with an index, in both
// methods.
TEST_F(DedupTest, DocumentsWithoutFeaturesAreNeverMatched) {
  const std::string input = dir_.File(
      "mixed.txt",
      "alpha beta gamma delta epsilon zeta\n\n!!! ???\n\xE2\x96\xA1\xE2\x96\xA1\xEF\xBC\x8C\n"
      "alpha beta gamma delta epsilon zeta\n\n");
  for (DedupMethod method : {DedupMethod::kAccurate, DedupMethod::kSimhash}) {
    DedupOptions o = Options(input);
    o.similarity.method = method;
    if (method == DedupMethod::kSimhash) o.similarity.features = FingerprintOptions{};
    o.save_index = dir_.Path("day.idx");
    auto kept = RunDedup(o);
    ASSERT_TRUE(kept.ok()) << kept.status().ToString();
    EXPECT_EQ(kept->documents, 6u);
    EXPECT_EQ(kept->empty_documents, 4u);
    EXPECT_EQ(kept->kept, 5u);
    EXPECT_EQ(kept->duplicates, 1u);
    EXPECT_EQ(
        ReadFile(o.kept_path),
        "alpha beta gamma delta epsilon zeta\n\n!!! ???\n\xE2\x96\xA1\xE2\x96\xA1\xEF\xBC\x8C\n\n");
    EXPECT_EQ(Lines(ReadFile(o.dups_path)).size(), 1u);
    EXPECT_EQ(ReadFile(o.pairs_path).find("\t2\t"), std::string::npos);
    EXPECT_NE(ReadFile(o.report_path).find("\"empty_documents\":4,\"empty_documents_kept\":true"),
              std::string::npos);

    // Against the saved index (which holds only the document with features): the empty ones stay.
    DedupOptions again = Options(input);
    again.similarity.method = method;
    again.similarity.features = o.similarity.features;
    again.against_indexes = {o.save_index};
    again.kept_path = dir_.Path("again.txt");
    auto second = RunDedup(again);
    ASSERT_TRUE(second.ok()) << second.status().ToString();
    EXPECT_EQ(second->duplicates_of_index, 2u);
    EXPECT_EQ(ReadFile(again.kept_path), "\n!!! ???\n\xE2\x96\xA1\xE2\x96\xA1\xEF\xBC\x8C\n\n");

    o.empty = EmptyPolicy::kDrop;
    o.save_index.clear();
    auto dropped = RunDedup(o);
    ASSERT_TRUE(dropped.ok()) << dropped.status().ToString();
    EXPECT_EQ(dropped->kept, 1u);
    EXPECT_EQ(dropped->duplicates, 1u);
    EXPECT_EQ(dropped->kept + dropped->duplicates + dropped->empty_documents, dropped->documents);
    EXPECT_EQ(ReadFile(o.kept_path), "alpha beta gamma delta epsilon zeta\n");
  }
}

// The report is the same from run to run but for the fields it names as run-dependent.
TEST_F(DedupTest, ReportNamesTheFieldsThatVary) {
  auto docs = MakeCorpus(21, 3000);
  const std::string input = dir_.File("corpus.txt", testing::Join(docs, "\n") + "\n");
  DedupOptions o = Options(input);
  o.pairs_path.clear();  // clustering mode: the linear join, as deterministic as every pair
  auto first = RunDedup(o);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->RunDependentFields(), (std::vector<std::string>{"stages", "seconds"}));
  for (int run = 0; run < 3; ++run) {
    o.threads = 1 + run % 2;
    auto again = RunDedup(o);
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(again->kept, first->kept);
    EXPECT_EQ(again->duplicates, first->duplicates);
    EXPECT_EQ(again->clusters, first->clusters);
    EXPECT_EQ(again->cluster_size_histogram, first->cluster_size_histogram);
    EXPECT_EQ(again->empty_documents, first->empty_documents);
    EXPECT_EQ(again->pairs, first->pairs);
    EXPECT_EQ(again->candidates, first->candidates);
    EXPECT_EQ(again->boundary_pairs, first->boundary_pairs);
  }
  o.pairs_path = dir_.Path("pairs.tsv");
  auto all = RunDedup(o);
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->RunDependentFields(), (std::vector<std::string>{"stages", "seconds"}));
  auto all_again = RunDedup(o);
  ASSERT_TRUE(all_again.ok());
  EXPECT_EQ(all_again->pairs, all->pairs);
  EXPECT_EQ(all_again->candidates, all->candidates);
  EXPECT_NE(ReadFile(o.report_path).find("\"run_dependent\":[\"stages\",\"seconds\"]"),
            std::string::npos);
}

TEST_F(DedupTest, RepeatedIdsAreCountedOrRefused) {
  std::string a = dir_.File("a.jsonl",
                            "{\"id\":\"x\",\"text\":\"one two three four five\"}\n"
                            "{\"id\":\"y\",\"text\":\"six seven eight nine ten\"}\n");
  std::string b = dir_.File("b.jsonl",
                            "{\"id\":\"z\",\"text\":\"eleven twelve thirteen\"}\n"
                            "{\"id\":\"y\",\"text\":\"fourteen fifteen sixteen\"}\n"
                            "{\"id\":\"x\",\"text\":\"seventeen eighteen nineteen\"}\n"
                            "{\"id\":\"y\",\"text\":\"twenty twenty-one twenty-two\"}\n");
  DedupOptions o = Options(a);
  o.inputs = {a, b};
  auto report = RunDedup(o);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(report->duplicate_ids, 3u);
  ASSERT_EQ(report->warnings.size(), 1u);
  EXPECT_EQ(report->warnings[0], "3 documents have the id of an earlier document (first: 'y' at " +
                                     a + ":2 and " + b +
                                     ":2); outputs name them alike (--unique-ids refuses them)");
  EXPECT_NE(ReadFile(o.report_path).find("\"duplicate_ids\":3,"), std::string::npos);
  o.unique_ids = true;
  report = RunDedup(o);
  ASSERT_FALSE(report.ok());
  EXPECT_EQ(report.status().message(), "id y appears twice: " + a + ":2 and " + b + ":2");
  // Documents named by their lines never repeat, even in several files.
  std::string text = dir_.File("c.txt", "one two three four five\n");
  std::string copy = dir_.File("d.txt", "one two three four five\n");
  o.inputs = {text, copy};
  report = RunDedup(o);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(report->duplicate_ids, 0u);
  // The same file twice would be read twice: refused, naming it.
  o.inputs = {text, text};
  report = RunDedup(o);
  ASSERT_FALSE(report.ok());
  EXPECT_EQ(report.status().code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(report.status().message(), text + " is given twice: give each input once");
}

TEST_F(DedupTest, FieldsNoDocumentHasAreRefused) {
  std::string input = dir_.File("a.jsonl", "{\"id\":\"x\",\"text\":\"one two three four five\"}\n");
  DedupOptions o = Options(input);
  o.id_field = "url";
  ASSERT_TRUE(RunDedup(o).ok());  // named by their lines
  std::filesystem::remove(o.kept_path);
  o.require_id_field = true;
  auto report = RunDedup(o);
  ASSERT_FALSE(report.ok());
  EXPECT_EQ(report.status().message(), "no document has the id field 'url'");
  EXPECT_FALSE(std::filesystem::exists(o.kept_path));
  o = Options(input);
  o.keep = KeepRule::kPriority;
  o.priority_field = "score";
  report = RunDedup(o);
  ASSERT_FALSE(report.ok());
  EXPECT_EQ(report.status().message(),
            "no document has the priority field 'score' (a JSONL number field)");
  o.threads = 1025;
  EXPECT_FALSE(RunDedup(o).ok());
}

TEST_F(DedupTest, InputNamesFoldersAndByteOrderMarks) {
  // .json is plain text, with one warning; .JSONL is JSON Lines.
  const std::string line = "{\"id\":\"x\",\"text\":\"one two three four five\"}\n";
  std::string json = dir_.File("a.json", line + line);
  DedupOptions o = Options(json);
  auto report = RunDedup(o);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(ReadFile(o.dups_path), "2\t1\t1.0000\n");
  ASSERT_EQ(report->warnings.size(), 1u);
  EXPECT_EQ(report->warnings[0].rfind(json + ": read as plain text", 0), 0u) << report->warnings[0];
  EXPECT_NE(ReadFile(o.report_path).find("\"warnings\":[\"" + json + ": read as plain text"),
            std::string::npos);
  std::string upper = dir_.File("B.JSONL", line);
  o.inputs = {upper};
  report = RunDedup(o);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_TRUE(report->warnings.empty());
  // JSON Lines under another name: read as plain text, with a warning naming the file (after a
  // byte order mark and around white space too); with --format plain, or a first line that only
  // starts with '{', none.
  const std::string txt = dir_.File("c.txt", "\xEF\xBB\xBF " + line + line);
  o.inputs = {txt};
  report = RunDedup(o);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(ReadFile(o.dups_path), "2\t1\t1.0000\n");
  ASSERT_EQ(report->warnings.size(), 1u);
  EXPECT_EQ(report->warnings[0].rfind(txt + ": its first line looks like a JSON object", 0), 0u)
      << report->warnings[0];
  o.format = InputFormat::kPlain;
  report = RunDedup(o);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_TRUE(report->warnings.empty());
  o.format = InputFormat::kAuto;
  o.inputs = {dir_.File("d.txt", "{braces} open a line of plain text\n" + line)};
  report = RunDedup(o);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_TRUE(report->warnings.empty());
  // A byte order mark is in no text or id, and the kept copy keeps it.
  std::string bom = dir_.File(
      "bom.jsonl", "\xEF\xBB\xBF" + line + "{\"id\":\"y\",\"text\":\"one two three four five\"}\n");
  o.inputs = {bom};
  ASSERT_TRUE(RunDedup(o).ok());
  EXPECT_EQ(ReadFile(o.dups_path), "y\tx\t1.0000\n");
  EXPECT_EQ(ReadFile(o.kept_path), "\xEF\xBB\xBF" + line);
  // An empty folder is refused.
  std::filesystem::create_directories(dir_.Path("empty"));
  o.inputs = {dir_.Path("empty")};
  report = RunDedup(o);
  ASSERT_FALSE(report.ok());
  EXPECT_EQ(report.status().message(), dir_.Path("empty") + ": the folder holds no files");
}

}  // namespace
}  // namespace neardup
