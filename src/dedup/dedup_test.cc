#include "neardup/dedup.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>

#include "neardup/hamming.h"
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

// A corpus of random documents, some of them with near-duplicate copies (one word changed) and exact
// copies, shuffled.
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

// The expected outcome computed the slow, obvious way: brute-force pairs within k over the library's
// fingerprints, connected components by repeated relabelling, the first document of each kept.
struct Expected {
  std::set<size_t> kept;
  std::map<size_t, size_t> dup_to_kept;
  size_t pairs = 0;
  size_t clusters = 0;
};

Expected BruteForce(const std::vector<std::string>& docs, int k) {
  auto f = std::move(Fingerprinter::Create({})).value();
  std::vector<uint64_t> fps;
  for (const auto& d : docs) fps.push_back(f->Fingerprint(d)->simhash);
  std::vector<size_t> label(docs.size());
  for (size_t i = 0; i < docs.size(); ++i) label[i] = i;
  Expected e;
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t i = 0; i < docs.size(); ++i) {
      for (size_t j = i + 1; j < docs.size(); ++j) {
        if (HammingDistance(fps[i], fps[j]) <= k && label[i] != label[j]) {
          label[i] = label[j] = std::min(label[i], label[j]);
          changed = true;
        }
      }
    }
  }
  for (size_t i = 0; i < docs.size(); ++i) {
    for (size_t j = i + 1; j < docs.size(); ++j) e.pairs += HammingDistance(fps[i], fps[j]) <= k;
  }
  std::map<size_t, size_t> sizes;
  for (size_t i = 0; i < docs.size(); ++i) ++sizes[label[i]];
  for (auto& [l, n] : sizes) e.clusters += n >= 2;
  for (size_t i = 0; i < docs.size(); ++i) {
    if (label[i] == i) {
      e.kept.insert(i);
    } else {
      e.dup_to_kept[i] = label[i];
    }
  }
  return e;
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

TEST_F(DedupTest, EqualsBruteForce) {
  for (int k : {0, 3, 6}) {
    auto docs = MakeCorpus(static_cast<uint64_t>(k) + 1, 120);
    std::string input = dir_.File("corpus.txt", testing::Join(docs, "\n") + "\n");
    DedupOptions o = Options(input);
    o.k = k;
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
                                                  f->Fingerprint(docs[kept])->simhash)) + "\n";
    }
    EXPECT_EQ(ReadFile(o.dups_path), want_dups);
    EXPECT_EQ(Lines(ReadFile(o.pairs_path)).size(), e.pairs);
    EXPECT_EQ(Lines(ReadFile(o.clusters_path)).size(), e.clusters);
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

TEST_F(DedupTest, KeepRules) {
  const std::string base = testing::Join(testing::RandomWords(*std::make_unique<std::mt19937_64>(3).get(), 200));
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
  } cases[] = {{KeepRule::kFirst, "a"}, {KeepRule::kLast, "c"}, {KeepRule::kLongest, "b"},
               {KeepRule::kShortest, "a"}, {KeepRule::kPriority, "b"}};
  for (const auto& c : cases) {
    DedupOptions o = Options(input);
    o.keep = c.rule;
    o.priority_field = "score";
    o.k = 7;
    auto report = RunDedup(o);
    ASSERT_TRUE(report.ok()) << report.status().ToString();
    ASSERT_EQ(report->kept, 2u);
    auto kept = Lines(ReadFile(o.kept_path));
    ASSERT_EQ(kept.size(), 2u);
    EXPECT_NE(kept[0].find("\"id\":\"" + c.kept_id + "\""), std::string::npos) << kept[0];
    EXPECT_EQ(kept[1], docs[3]);  // input lines are copied byte for byte
    auto clusters = ReadFile(o.clusters_path);
    EXPECT_NE(clusters.find("{\"representative\":\"" + c.kept_id + "\",\"size\":3,"), std::string::npos)
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
  for (const auto& path : {o.kept_path, o.dups_path, o.clusters_path, o.pairs_path, o.report_path}) {
    EXPECT_FALSE(std::filesystem::exists(path)) << path;
  }
  EXPECT_TRUE(std::filesystem::is_empty(std::filesystem::path(o.kept_path).parent_path()) ||
              std::filesystem::exists(input));  // no temporary files left beside the outputs
  size_t files = 0;
  for (auto& entry : std::filesystem::directory_iterator(std::filesystem::path(input).parent_path())) {
    (void)entry;
    ++files;
  }
  EXPECT_EQ(files, 1u);  // only the input: no temporary output left

  o.on_error = ErrorPolicy::kSkip;
  auto skipped = RunDedup(o);
  ASSERT_TRUE(skipped.ok()) << skipped.status().ToString();
  EXPECT_EQ(skipped->skipped, 3u);
  EXPECT_EQ(skipped->documents, 2u);
  ASSERT_EQ(skipped->first_errors.size(), 3u);
  EXPECT_NE(skipped->first_errors[1].find(":3: empty text"), std::string::npos);
  EXPECT_NE(skipped->first_errors[2].find(":4: no text field 'text'"), std::string::npos);
  auto kept = Lines(ReadFile(o.kept_path));
  ASSERT_EQ(kept.size(), 2u);
  EXPECT_NE(kept[1].find("replaced"), std::string::npos);
}

// Documents without an id field are named by their line, counting skipped lines, per file.
TEST_F(DedupTest, LineIdsCountSkippedLines) {
  std::string a = dir_.File("a.txt", "alpha beta gamma delta epsilon\n\n!!!\nalpha beta gamma delta epsilon\n");
  std::string b = dir_.File("b.jsonl", "{\"text\":\"alpha beta gamma delta epsilon\"}\n"
                                       "{\"id\":\"named\",\"text\":\"alpha beta gamma delta epsilon\"}\n");
  DedupOptions o = Options(a);
  o.on_error = ErrorPolicy::kSkip;
  ASSERT_TRUE(RunDedup(o).ok());
  EXPECT_EQ(ReadFile(o.dups_path), "4\t1\t0\n");
  o.inputs = {a, b};
  ASSERT_TRUE(RunDedup(o).ok());
  EXPECT_EQ(ReadFile(o.dups_path), a + ":4\t" + a + ":1\t0\n" + b + ":1\t" + a + ":1\t0\nnamed\t" + a + ":1\t0\n");
}

TEST_F(DedupTest, FailureLeavesExistingOutputsAlone) {
  std::string input = dir_.File("bad.txt", "fine line of words\n\n");
  DedupOptions o = Options(input);
  std::ofstream(o.kept_path) << "previous result\n";
  ASSERT_FALSE(RunDedup(o).ok());
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
  std::ofstream(dir_.Path("tree/sub/c.jsonl")) << "{\"id\":\"x\",\"text\":\"second file words here and there again\"}\n";
  std::ofstream(dir_.Path("tree/a.txt")) << "first file with its own words only\n";
  ASSERT_EQ(std::system(("gzip " + dir_.Path("tree/a.txt")).c_str()), 0);
  DedupOptions o = Options(dir_.Path("tree"));
  auto report = RunDedup(o);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(report->documents, 3u);
  EXPECT_EQ(report->duplicates, 1u);
  EXPECT_EQ(ReadFile(o.kept_path), "first file with its own words only\nsecond file words here and there again\n");
  EXPECT_EQ(ReadFile(o.dups_path), dir_.Path("tree/sub/c.jsonl").substr(0, 0) + "x\t" + dir_.Path("tree/b.txt") + ":1\t0\n");
}

TEST_F(DedupTest, AgainstASavedIndex) {
  auto docs = MakeCorpus(11, 300);
  std::vector<std::string> day1(docs.begin(), docs.begin() + 200), day2(docs.begin() + 150, docs.end());
  std::string jsonl1, jsonl2;
  for (size_t i = 0; i < day1.size(); ++i) jsonl1 += "{\"id\":\"d1-" + std::to_string(i) + "\",\"text\":\"" + day1[i] + "\"}\n";
  for (size_t i = 0; i < day2.size(); ++i) jsonl2 += "{\"id\":\"d2-" + std::to_string(i) + "\",\"text\":\"" + day2[i] + "\"}\n";
  DedupOptions first = Options(dir_.File("day1.jsonl", jsonl1));
  first.save_index = dir_.Path("day1.idx");
  auto r1 = RunDedup(first);
  ASSERT_TRUE(r1.ok()) << r1.status().ToString();
  ASSERT_TRUE(std::filesystem::exists(first.save_index + ".ids"));
  DedupOptions second = Options(dir_.File("day2.jsonl", jsonl2));
  second.against_indexes = {first.save_index};
  auto r2 = RunDedup(second);
  ASSERT_TRUE(r2.ok()) << r2.status().ToString();
  // The 50 documents of day 2 that day 1 had (or their near copies) are duplicates of the index.
  EXPECT_GE(r2->duplicates_of_index, 50u);
  auto dups = ReadFile(second.dups_path);
  EXPECT_NE(dups.find("\td1-"), std::string::npos) << "day-1 ids are named through INDEX.ids";
  // Nothing of day 2 that is kept is near a day-1 document.
  auto f = std::move(Fingerprinter::Create({})).value();
  std::vector<uint64_t> day1_fps;
  for (const auto& d : day1) day1_fps.push_back(f->Fingerprint(d)->simhash);
  for (const auto& line : Lines(ReadFile(second.kept_path))) {
    const auto start = line.find("\"text\":\"") + 8;
    const auto text = line.substr(start, line.size() - start - 2);
    EXPECT_EQ(CountWithin(day1_fps, f->Fingerprint(text)->simhash, 3), 0u) << line;
  }
}

TEST_F(DedupTest, BadOptions) {
  DedupOptions o;
  EXPECT_FALSE(RunDedup(o).ok());
  o.inputs = {dir_.Path("missing.txt")};
  auto missing = RunDedup(o);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), Status::Code::kNotFound);
  o.inputs = {dir_.File("x.txt", "words\n")};
  o.k = 9;
  EXPECT_EQ(RunDedup(o).status().code(), Status::Code::kInvalidArgument);
  o.k = 3;
  o.keep = KeepRule::kPriority;
  EXPECT_EQ(RunDedup(o).status().code(), Status::Code::kInvalidArgument);
}

}  // namespace
}  // namespace neardup
