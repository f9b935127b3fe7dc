// The boundary decision's pieces against plain references: the margin against the sketch's
// measured spread, the documents' lines against the lines written, and the exact Jaccard
// similarity against a brute force over the texts written.
#include "dedup/boundary.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <optional>
#include <random>
#include <set>
#include <span>
#include <string>
#include <unordered_set>

#include "dedup/document_lines.h"
#include "testutil.h"

namespace neardup::dedup_internal {
namespace {

using ::testing::HasSubstr;

TEST(BoundaryMarginTest, ValueAtTheDefaultsAndLimits) {
  const SketchOptions defaults{1024, 1, 20, 6};
  // sigma = sqrt(0.9 * 0.1 / 1024) / 0.5 = 0.01875 (doc/candidates.md: 0.0188).
  EXPECT_NEAR(BoundaryMargin(defaults, 0.8), 3 * 0.01875, 1e-6);
  EXPECT_NEAR(BoundaryMargin(defaults, 0.8, 1.0), 0.01875, 1e-6);
  // The other 128-byte sketches of doc/candidates.md: 512 x 2 bits 0.0210, 128 x 8 bits 0.0354.
  EXPECT_NEAR(BoundaryMargin({512, 2, 20, 6}, 0.8, 1.0), 0.0210, 5e-5);
  EXPECT_NEAR(BoundaryMargin({128, 8, 16, 6}, 0.8, 1.0), 0.0354, 5e-5);
  EXPECT_LT(BoundaryMargin({4096, 1, 20, 6}, 0.8), BoundaryMargin(defaults, 0.8));
  EXPECT_LT(BoundaryMargin(defaults, 0.95), BoundaryMargin(defaults, 0.8));
  EXPECT_EQ(BoundaryMargin(defaults, 1.0), 0.0);
}

// Two sets of about `size` distinct hashes each with Jaccard similarity near `target`, and that
// similarity. The sketch reads a hash's top 23 bits: they are distinct, so that the sets'
// similarity is the sketch's too.
struct SetPair {
  std::vector<uint64_t> a, b;
  double jaccard = 0;
};

SetPair MakeSetPair(std::mt19937_64& rng, size_t size, double target) {
  const auto unique =
      std::max<size_t>(1, static_cast<size_t>(std::llround(size * (1 - target) / (1 + target))));
  const size_t common = size - unique;
  std::unordered_set<uint64_t> tops;
  std::vector<uint64_t> hashes;
  while (hashes.size() < common + 2 * unique) {
    const uint64_t top = rng() >> 41;
    if (tops.insert(top).second) hashes.push_back((top << 41) | (rng() >> 23));
  }
  SetPair pair;
  const auto split = static_cast<std::ptrdiff_t>(common);
  pair.a.assign(hashes.begin(), hashes.begin() + split + static_cast<std::ptrdiff_t>(unique));
  pair.b.assign(hashes.begin(), hashes.begin() + split);
  pair.b.insert(pair.b.end(), hashes.end() - static_cast<std::ptrdiff_t>(unique), hashes.end());
  pair.jaccard = static_cast<double>(common) / static_cast<double>(common + 2 * unique);
  return pair;
}

// The estimate's error for each pair.
struct Spread {
  double deviation = 0;  // root mean square error
  int outside = 0;       // errors beyond the margin
};

Spread MeasureSpread(const Sketcher& sketcher, const std::vector<SetPair>& pairs,
                     const std::function<double(const SetPair&)>& margin) {
  std::vector<uint8_t> sketch_a(sketcher.sketch_bytes()), sketch_b(sketch_a.size());
  std::vector<uint32_t> keys(static_cast<size_t>(sketcher.options().bands));
  Spread spread;
  for (const SetPair& pair : pairs) {
    EXPECT_TRUE(sketcher.Compute(pair.a, sketch_a, keys).ok());
    EXPECT_TRUE(sketcher.Compute(pair.b, sketch_b, keys).ok());
    const double error = sketcher.Estimate(sketch_a.data(), sketch_b.data()) - pair.jaccard;
    spread.deviation += error * error;
    if (std::abs(error) > margin(pair)) ++spread.outside;
  }
  spread.deviation = std::sqrt(spread.deviation / static_cast<double>(pairs.size()));
  return spread;
}

// Sets of known Jaccard similarity near 0.8, larger than the bins, sketched by the public Sketcher:
// the estimates' spread matches the formula, and 3 sigma holds all but a few (a normal estimate
// leaves 0.27% outside).
TEST(BoundaryMarginTest, EstimatesNearTheThresholdFallWithinIt) {
  const SketchOptions options{1024, 1, 20, 6};
  auto sketcher = Sketcher::Create(options);
  ASSERT_TRUE(sketcher.ok()) << sketcher.status().ToString();
  const double margin = BoundaryMargin(options, 0.8);
  std::mt19937_64 rng(80);
  std::vector<SetPair> pairs;
  for (int i = 0; i < 1000; ++i) {
    pairs.push_back(MakeSetPair(rng, 1100 + rng() % 4000, 0.77 + 0.06 * (rng() % 1000) / 1000.0));
  }
  const Spread spread = MeasureSpread(**sketcher, pairs, [&](const SetPair&) { return margin; });
  EXPECT_LE(spread.outside, 10) << "deviation " << spread.deviation;
  EXPECT_NEAR(spread.deviation, margin / 3, 0.15 * margin / 3) << spread.outside << " outside";
}

// Smaller sets fill fewer bins and spread more: the fixed margin misses many of them, the pair's
// margin holds them.
TEST(BoundaryMarginTest, PairMarginHoldsSmallSets) {
  const SketchOptions options{1024, 1, 20, 6};
  auto sketcher = Sketcher::Create(options);
  ASSERT_TRUE(sketcher.ok()) << sketcher.status().ToString();
  const double fixed = BoundaryMargin(options, 0.8);
  EXPECT_EQ(PairBoundaryMargin(options, 0.8, 5000, 5000), fixed);
  EXPECT_EQ(PairBoundaryMargin(options, 0.8, 1000, 1000), fixed);  // union 1111 > 1024 bins
  EXPECT_NEAR(PairBoundaryMargin(options, 0.8, 90, 90), fixed * std::sqrt(1024 / 100.0), 1e-9);
  EXPECT_EQ(PairBoundaryMargin(options, 1.0, 50, 50), 0.0);
  std::mt19937_64 rng(81);
  for (size_t size : {50, 100, 200, 400, 800}) {
    std::vector<SetPair> pairs;
    for (int i = 0; i < 500; ++i) pairs.push_back(MakeSetPair(rng, size, 0.8));
    const Spread own = MeasureSpread(**sketcher, pairs, [&](const SetPair& p) {
      return PairBoundaryMargin(options, 0.8, p.a.size(), p.b.size());
    });
    EXPECT_LE(own.outside, 5) << size << " features, deviation " << own.deviation;
    if (size <= 200) {
      const Spread at_fixed =
          MeasureSpread(**sketcher, pairs, [&](const SetPair&) { return fixed; });
      EXPECT_GT(at_fixed.outside, 25) << size << " features";
    }
  }
}

// One line of a test input, and what pass 1 makes of it.
struct TestLine {
  std::string raw;   // as written, line end included
  bool bad = false;  // skipped by pass 1 (--on-error skip)
  std::string text;  // the document's text (lines that are not bad)
};

// Texts in families of near-duplicates (a few words or characters changed), so that pairs have
// every Jaccard similarity from 0 to 1.
class TextMaker {
 public:
  explicit TextMaker(uint64_t seed) : rng_(seed) {}

  std::vector<std::string> EnglishFamily() {
    std::vector<std::string> words = testing::RandomWords(rng_, 60 + rng_() % 80, 3000);
    std::vector<std::string> family = {testing::Join(words)};
    for (size_t edits : {1, 3, 8}) {
      for (size_t e = 0; e < edits; ++e) words[rng_() % words.size()] = "edit" + Number();
      family.push_back(testing::Join(words));
    }
    return family;
  }

  std::vector<std::string> ChineseFamily() {
    std::vector<uint32_t> characters(40 + rng_() % 60);
    for (uint32_t& c : characters) c = 0x4E00 + static_cast<uint32_t>(rng_() % 400);
    std::vector<std::string> family = {Utf8(characters)};
    for (size_t edits : {1, 2, 6}) {
      for (size_t e = 0; e < edits; ++e) {
        characters[rng_() % characters.size()] = 0x5E00 + static_cast<uint32_t>(rng_() % 400);
      }
      family.push_back(Utf8(characters));
    }
    return family;
  }

 private:
  std::string Number() { return std::to_string(rng_() % 100000); }

  static std::string Utf8(const std::vector<uint32_t>& characters) {
    std::string out;
    for (uint32_t c : characters) {  // all in U+0800..U+FFFF: three bytes
      out.push_back(static_cast<char>(0xE0 | (c >> 12)));
      out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    }
    return out;
  }

  std::mt19937_64 rng_;
};

constexpr uint64_t kMaxLineBytes = 4000;

// A plain-text input: a byte order mark on line 1, CRLF line ends, no line end on the last line;
// blank and symbol-only lines (documents without features) and invalid UTF-8 and over-long lines
// (bad) between the members of each family.
std::vector<TestLine> PlainLines(TextMaker* maker) {
  std::vector<TestLine> lines;
  auto text = [&](const std::string& t, const char* end = "\n") {
    lines.push_back({t + end, false, t});
  };
  auto bad = [&](const std::string& raw) { lines.push_back({raw + "\n", true, ""}); };
  const std::string first = maker->EnglishFamily()[0];
  lines.push_back({"\xEF\xBB\xBF" + first + "\n", false, first});
  for (int f = 0; f < 6; ++f) {
    const auto family = f % 2 == 0 ? maker->EnglishFamily() : maker->ChineseFamily();
    text(family[0]);
    bad("invalid \xFF\xFE utf-8 " + family[1]);
    text(family[1], "\r\n");
    text("");
    text(family[2]);
    bad(std::string(kMaxLineBytes + 10, 'y'));
    text("!!! --- ...");
    text(family[3], f == 5 ? "" : "\n");
  }
  return lines;
}

// A JSONL input: escapes in the text, empty and symbol-only texts, and malformed lines, lines
// without the text field and invalid UTF-8 (bad) between the members of each family.
std::vector<TestLine> JsonlLines(TextMaker* maker) {
  std::vector<TestLine> lines;
  int id = 0;
  auto text = [&](const std::string& t) {
    lines.push_back(
        {R"({"id":"b)" + std::to_string(++id) + R"(","text":")" + t + "\"}\n", false, t});
  };
  auto bad = [&](const std::string& raw) { lines.push_back({raw + "\n", true, ""}); };
  lines.push_back({R"({"id":"escaped","text":"tab\there \"quoted\" \u4e2d\u6587 words"})"
                   "\n",
                   false, "tab\there \"quoted\" \xE4\xB8\xAD\xE6\x96\x87 words"});
  for (int f = 0; f < 6; ++f) {
    const auto family = f % 2 == 1 ? maker->EnglishFamily() : maker->ChineseFamily();
    bad(R"({"id":"cut","text":")" + family[0]);
    text(family[0]);
    text(family[1]);
    bad(R"({"id":"utf8","text":"bad )"
        "\xC0\x80"
        R"( bytes"})");
    text("");
    text(family[2]);
    bad(R"({"id":"no text"})");
    text("?!");
    text(family[3]);
  }
  return lines;
}

std::string Contents(const std::vector<TestLine>& lines) {
  std::string out;
  for (const TestLine& line : lines) out += line.raw;
  return out;
}

// The inputs written to a temporary folder, and their lines by input-line ordinal.
struct TestInputs {
  testing::TempDir dir;
  std::vector<std::vector<TestLine>> files;
  std::vector<std::string> paths;

  TestInputs() {
    TextMaker maker(5);
    files = {PlainLines(&maker), JsonlLines(&maker)};
    paths = {dir.File("a.txt", Contents(files[0])), dir.File("b.jsonl", Contents(files[1]))};
  }

  // Every line of every file, in order.
  std::vector<TestLine> AllLines() const {
    std::vector<TestLine> all;
    for (const auto& file : files) all.insert(all.end(), file.begin(), file.end());
    return all;
  }
};

DedupOptions TestOptions(const TestInputs& inputs) {
  DedupOptions options;
  options.inputs = inputs.paths;
  options.on_error = ErrorPolicy::kSkip;
  options.max_line_bytes = kMaxLineBytes;
  FingerprintOptions features = AccurateFingerprintOptions();
  features.invalid_utf8 = InvalidUtf8::kReject;  // invalid UTF-8 makes a bad document
  options.similarity.features = features;
  return options;
}

std::unique_ptr<DocumentSigner> TestSigner(const DedupOptions& options) {
  auto signer = DocumentSigner::Create(options.similarity);
  EXPECT_TRUE(signer.ok()) << signer.status().ToString();
  return signer.ok() ? std::move(*signer) : nullptr;
}

// Pass 1 as the job runs it.
struct PassOne {
  std::vector<InputFile> files;
  DocumentTable table;
};

// at_random: pass 1 records where the documents' lines are, so that ExactJaccards reads them at
// random (DocumentLinesAt); else it reads the inputs in order (DocumentLines).
PassOne RunPassOne(const DedupOptions& options, const DocumentSigner& signer, int threads,
                   const std::string& spool, bool at_random = false) {
  PassOne pass;
  auto files = ExpandInputs(options, spool);
  EXPECT_TRUE(files.ok()) << files.status().ToString();
  if (!files.ok()) return pass;
  pass.files = *files;
  std::atomic<uint64_t> documents{0}, bytes{0};
  Signatures signatures;
  const Status status = ReadDocuments(pass.files, options, signer, threads, &documents, &bytes,
                                      &pass.table, &signatures, 0, at_random);
  EXPECT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(DocumentLinesAt::Available(pass.table, pass.files.size()), at_random);
  return pass;
}

// The expected text of each document of a table: the lines that are not bad, or (a shard) the
// lines it lists.
std::vector<std::string> ExpectedTexts(const TestInputs& inputs, const DocumentTable& table) {
  const std::vector<TestLine> all = inputs.AllLines();
  std::vector<std::string> texts;
  if (!table.ordinals.empty()) {
    for (uint64_t ordinal : table.ordinals) texts.push_back(all[ordinal].text);
    return texts;
  }
  for (const TestLine& line : all) {
    if (!line.bad) texts.push_back(line.text);
  }
  return texts;
}

// The reference: each text's distinct feature hashes as a std::set, Jaccard by counting.
class BruteForce {
 public:
  BruteForce(const DocumentSigner& signer, const std::vector<std::string>& texts) {
    auto builder = signer.fingerprinter().NewBuilder();
    for (const std::string& text : texts) {
      builder->Reset();
      EXPECT_TRUE(builder->Update(text).ok());
      EXPECT_TRUE(builder->Finish().ok());
      const auto hashes = builder->DistinctFeatureHashes();
      sets_.emplace_back(hashes.begin(), hashes.end());
    }
  }

  double Jaccard(uint32_t a, uint32_t b) const {
    const std::set<uint64_t>& x = sets_[a];
    const std::set<uint64_t>& y = sets_[b];
    if (x.empty() && y.empty()) return 1.0;
    std::vector<uint64_t> both;
    std::set_intersection(x.begin(), x.end(), y.begin(), y.end(), std::back_inserter(both));
    std::set<uint64_t> either = x;
    either.insert(y.begin(), y.end());
    return static_cast<double>(both.size()) / static_cast<double>(either.size());
  }

 private:
  std::vector<std::set<uint64_t>> sets_;
};

// Every pair (both orders for some, a document with itself for some), shuffled.
std::vector<DocumentPair> AllPairs(size_t documents) {
  std::vector<DocumentPair> pairs;
  for (uint32_t a = 0; a < documents; ++a) {
    for (uint32_t b = a; b < documents; ++b) {
      if (a == b && a % 5 != 0) continue;
      pairs.push_back({a, b});
      if ((a + b) % 7 == 0) pairs.push_back({b, a});
    }
  }
  std::shuffle(pairs.begin(), pairs.end(), std::mt19937_64(3));
  return pairs;
}

// SortHashes against std::sort: uniform hashes of every size around its cut-offs, and sets that
// crowd its buckets (one top-bits value, small values, runs) or arrive sorted or reversed.
TEST(SortHashesTest, SortsAsStdSort) {
  std::mt19937_64 rng(11);
  std::vector<uint64_t> scratch;
  std::vector<uint32_t> starts;
  auto check = [&](std::vector<uint64_t> hashes, const std::string& what) {
    std::vector<uint64_t> want = hashes;
    std::sort(want.begin(), want.end());
    SortHashes(&hashes, &scratch, &starts);
    ASSERT_EQ(hashes, want) << what << ", " << want.size() << " hashes";
  };
  for (size_t n : {0, 1, 2, 31, 32, 33, 63, 64, 65, 250, 1000, 4097, 20000}) {
    std::set<uint64_t> distinct;
    while (distinct.size() < n) distinct.insert(rng());
    std::vector<uint64_t> uniform(distinct.begin(), distinct.end());
    check(uniform, "sorted");
    check(std::vector<uint64_t>(uniform.rbegin(), uniform.rend()), "reversed");
    std::shuffle(uniform.begin(), uniform.end(), rng);
    check(uniform, "uniform");
    std::vector<uint64_t> crowded, small, runs;
    for (size_t i = 0; i < n; ++i) {
      crowded.push_back((uint64_t{0xABCDE} << 44) | (rng() >> 20));
      small.push_back(i * 977 % 100003);
      runs.push_back((rng() & ~uint64_t{0xFFFF}) | (i % 40));
    }
    check(crowded, "one top-bits value");
    check(small, "small values");
    check(runs, "runs of 40");
  }
}

TEST(DocumentLinesTest, EveryDocumentAtItsLine) {
  const TestInputs inputs;
  const DedupOptions options = TestOptions(inputs);
  const auto signer = TestSigner(options);
  ASSERT_NE(signer, nullptr);
  const PassOne pass = RunPassOne(options, *signer, 2, inputs.dir.Path("stdin"));
  // Where the test put each document: its file, line and text.
  struct Where {
    size_t file;
    uint64_t line;
    std::string text;
  };
  std::vector<Where> want;
  std::vector<uint64_t> bad_lines;
  uint64_t ordinal = 0;
  for (size_t f = 0; f < inputs.files.size(); ++f) {
    for (size_t i = 0; i < inputs.files[f].size(); ++i, ++ordinal) {
      const TestLine& line = inputs.files[f][i];
      if (line.bad) {
        bad_lines.push_back(ordinal);
      } else {
        want.push_back({f, i + 1, line.text});
      }
    }
  }
  // The test's idea of the bad lines is pass 1's, so line numbers and document numbers differ.
  ASSERT_EQ(pass.table.bad_lines, bad_lines);
  ASSERT_EQ(pass.table.size(), want.size());
  DocumentLines lines(pass.files, pass.table, options.max_line_bytes);
  DocumentLine line;
  for (uint32_t d = 0; d < want.size(); ++d) {
    auto more = lines.Next(&line);
    ASSERT_TRUE(more.ok() && *more) << d << " " << more.status().ToString();
    EXPECT_EQ(line.document, d);
    EXPECT_EQ(line.file, want[d].file) << d;
    EXPECT_EQ(line.line_number, want[d].line) << d;
    if (!pass.files[line.file].jsonl) {
      EXPECT_EQ(line.text(), want[d].text) << d;
    }
  }
  auto more = lines.Next(&line);
  ASSERT_TRUE(more.ok()) << more.status().ToString();
  EXPECT_FALSE(*more);
  EXPECT_EQ(lines.documents(), want.size());
}

// Every document's line read at random, alone or among others (random subsets, which read nearby
// lines together), is the line read in order: on the whole inputs and on shard tables.
TEST(DocumentLinesAtTest, SameLinesAsReadingInOrder) {
  const TestInputs inputs;
  DedupOptions options = TestOptions(inputs);
  const auto signer = TestSigner(options);
  ASSERT_NE(signer, nullptr);
  std::mt19937_64 rng(17);
  for (int shards : {0, 3}) {
    options.shard_count = shards;
    for (int shard = 0; shard < std::max(shards, 1); ++shard) {
      options.shard_index = shard;
      const PassOne pass = RunPassOne(options, *signer, 2, inputs.dir.Path("stdin"), true);
      ASSERT_GT(pass.table.size(), 10u);
      std::vector<DocumentLine> in_order;
      std::vector<std::string> raws;
      DocumentLines lines(pass.files, pass.table, options.max_line_bytes);
      for (DocumentLine line;;) {
        auto more = lines.Next(&line);
        ASSERT_TRUE(more.ok()) << more.status().ToString();
        if (!*more) break;
        in_order.push_back(line);
        raws.emplace_back(line.raw);
      }
      ASSERT_EQ(in_order.size(), pass.table.size());
      for (int round = 0; round < 20; ++round) {
        std::vector<uint32_t> chosen;
        const uint64_t keep = round == 0 ? 1 : 1 + rng() % 4;  // every one, or about 1 in `keep`
        for (uint32_t d = 0; d < pass.table.size(); ++d) {
          if (rng() % keep == 0) chosen.push_back(d);
        }
        DocumentLinesAt at(pass.files, pass.table, options.max_line_bytes, chosen);
        for (uint32_t d : chosen) {
          DocumentLine line;
          auto more = at.Next(&line);
          ASSERT_TRUE(more.ok() && *more) << d << " " << more.status().ToString();
          EXPECT_EQ(line.document, d);
          EXPECT_EQ(line.file, in_order[d].file) << d;
          EXPECT_EQ(line.line_number, in_order[d].line_number) << d;
          EXPECT_EQ(line.raw, raws[d]) << d;
          EXPECT_EQ(line.text(), line.line_number == 1 ? StripByteOrderMark(StripLineEnd(raws[d]))
                                                       : StripLineEnd(raws[d]))
              << d;
        }
        DocumentLine line;
        auto more = at.Next(&line);
        ASSERT_TRUE(more.ok());
        EXPECT_FALSE(*more);
      }
    }
  }
}

// Compares ExactJaccards on every pair of a pass's documents with the brute force.
// Every pair of AllPairs over a pass's documents, with its Jaccard similarity by brute force.
struct ExpectedJaccards {
  std::vector<DocumentPair> pairs;
  std::vector<double> jaccards;
  size_t between = 0;  // pairs strictly between 0.3 and 1: the ones a shifted mapping changes most
};

ExpectedJaccards BruteForceJaccards(const TestInputs& inputs, const DocumentSigner& signer,
                                    const PassOne& pass) {
  const std::vector<std::string> texts = ExpectedTexts(inputs, pass.table);
  EXPECT_EQ(texts.size(), pass.table.size());
  const BruteForce reference(signer, texts);
  ExpectedJaccards expected;
  expected.pairs = AllPairs(texts.size());
  for (const DocumentPair& pair : expected.pairs) {
    const double jaccard = reference.Jaccard(pair.first, pair.second);
    expected.jaccards.push_back(jaccard);
    expected.between += jaccard > 0.3 && jaccard < 1;
  }
  return expected;
}

// ExactJaccards of the first `count` expected pairs (a random sample: they are shuffled).
void CheckAgainstBruteForce(const DedupOptions& options, const DocumentSigner& signer,
                            const PassOne& pass, const ExpectedJaccards& expected, int threads,
                            size_t budget, size_t count = SIZE_MAX) {
  const JobSettings settings{options, signer.options(), signer, threads};
  count = std::min(count, expected.pairs.size());
  auto got = ExactJaccards(pass.files, pass.table, settings, std::span(expected.pairs).first(count),
                           budget);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  ASSERT_EQ(got->size(), count);
  for (size_t i = 0; i < count; ++i) {
    ASSERT_DOUBLE_EQ((*got)[i], expected.jaccards[i])
        << "pair " << expected.pairs[i].first << ", " << expected.pairs[i].second << " threads "
        << threads << " budget " << budget;
  }
}

TEST(ExactJaccardsTest, EqualsBruteForceWithEveryBudgetAndThreadCount) {
  const TestInputs inputs;
  const DedupOptions options = TestOptions(inputs);
  const auto signer = TestSigner(options);
  ASSERT_NE(signer, nullptr);
  for (bool at_random : {false, true}) {
    const PassOne pass = RunPassOne(options, *signer, 2, inputs.dir.Path("stdin"), at_random);
    ASSERT_GT(pass.table.bad_lines.size(), 10u);
    ASSERT_GT(pass.table.empty_documents.size(), 10u);
    const ExpectedJaccards expected = BruteForceJaccards(inputs, *signer, pass);
    EXPECT_GE(expected.between, 20u);
    for (int threads : {1, 3}) {
      // All at once; a few documents a pass; every pair alone (a budget below any one set: a pass
      // a pair, so a sample of 400 pairs).
      CheckAgainstBruteForce(options, *signer, pass, expected, threads, size_t{1} << 30);
      CheckAgainstBruteForce(options, *signer, pass, expected, threads, size_t{8 * 600});
      CheckAgainstBruteForce(options, *signer, pass, expected, threads, 1, 400);
    }
  }
}

// A decompressed input has no offsets to read at random: pass 1 records none, and the inputs are
// read in order.
TEST(ExactJaccardsTest, DecompressedInputsAreReadInOrder) {
  TestInputs inputs;
  const std::string gz = inputs.dir.Path("a.txt.gz");
  ASSERT_EQ(std::system(("gzip -c " + inputs.paths[0] + " > " + gz).c_str()), 0);
  inputs.paths[0] = gz;
  const DedupOptions options = TestOptions(inputs);
  const auto signer = TestSigner(options);
  ASSERT_NE(signer, nullptr);
  const PassOne pass = RunPassOne(options, *signer, 2, inputs.dir.Path("stdin"), false);
  EXPECT_EQ(pass.table.line_offsets.documents(), 0u);
  CheckAgainstBruteForce(options, *signer, pass, BruteForceJaccards(inputs, *signer, pass), 2,
                         size_t{1} << 30);
}

// A shard's table lists its documents' lines (table.ordinals): the other shards' lines are passed
// over.
TEST(ExactJaccardsTest, EqualsBruteForceOnShardTables) {
  const TestInputs inputs;
  DedupOptions options = TestOptions(inputs);
  const auto signer = TestSigner(options);
  ASSERT_NE(signer, nullptr);
  options.shard_count = 3;
  for (int shard = 0; shard < options.shard_count; ++shard) {
    options.shard_index = shard;
    for (bool at_random : {false, true}) {
      const PassOne pass = RunPassOne(options, *signer, 2, inputs.dir.Path("stdin"), at_random);
      ASSERT_EQ(pass.table.ordinals.size(), pass.table.size());
      CheckAgainstBruteForce(options, *signer, pass, BruteForceJaccards(inputs, *signer, pass), 2,
                             size_t{8 * 400});
    }
  }
}

TEST(ExactJaccardsTest, InputsChangedAfterPassOneAreNamed) {
  struct Change {
    const char* name;
    size_t file;
    std::function<void(std::vector<TestLine>*)> edit;
    const char* where;  // reading in order
    // Reading at random: where, or nothing when only reading in order sees the change.
    const char* where_at_random;
  };
  // The line end of line `line` (1-based) moved into the next line, the file's size kept: read in
  // order, as many lines of the same lengths overall, so only the texts change.
  auto move_line_end = [](size_t line) {
    return [line](std::vector<TestLine>* l) {
      std::string& raw = (*l)[line - 1].raw;
      std::string& next = (*l)[line].raw;
      raw.back() = 'x';
      ASSERT_GT(next.size(), 3u);
      next[1] = '\n';
    };
  };
  const Change changes[] = {
      {"cut short", 1, [](std::vector<TestLine>* l) { l->resize(l->size() - 4); },
       "b.jsonl:", "b.jsonl:"},
      {"a line gone", 0, [](std::vector<TestLine>* l) { l->erase(l->begin() + 5); },
       "a.txt:", "a.txt:"},
      // Only the file's length tells, read at random: no document's line moved.
      {"a line added at the end", 1,
       [](std::vector<TestLine>* l) {
         l->push_back({"{\"text\": \"more\"}\n", false, "more"});
       },
       "b.jsonl:", "b.jsonl:"},
      {"a line more", 0,
       [](std::vector<TestLine>* l) {
         l->insert(l->begin() + 1, {"more\n", false, ""});
       },
       "a.txt:", "a.txt:"},
      {"a document now bad", 1, [](std::vector<TestLine>* l) { l->back().raw = "{\"text\": 1}\n"; },
       "b.jsonl:", "b.jsonl:"},
      {"a document now too long", 0,
       [](std::vector<TestLine>* l) {
         (*l)[3].raw.assign(kMaxLineBytes + 1, 'z');
         (*l)[3].raw.push_back('\n');
       },
       "a.txt:4", "a.txt:"},
      // Line 22 of a.txt is document 16, whose offset pass 1 recorded (every 16th document's): it
      // no longer starts after a line end. (Read in order, a change of the texts alone.)
      {"a line end moved", 0, move_line_end(21), nullptr,
       "a.txt:22: the input changed since pass 1 (its line no longer starts"},
  };
  for (const Change& change : changes) {
    for (bool at_random : {false, true}) {
      const char* where = at_random ? change.where_at_random : change.where;
      if (where == nullptr) continue;
      TestInputs inputs;
      const DedupOptions options = TestOptions(inputs);
      const auto signer = TestSigner(options);
      ASSERT_NE(signer, nullptr);
      const PassOne pass = RunPassOne(options, *signer, 2, inputs.dir.Path("stdin"), at_random);
      const std::string before = Contents(inputs.files[change.file]);
      change.edit(&inputs.files[change.file]);
      const std::string after = Contents(inputs.files[change.file]);
      if (change.where == nullptr) {
        ASSERT_EQ(after.size(), before.size()) << change.name;
      }
      inputs.dir.File(change.file == 0 ? "a.txt" : "b.jsonl", after);
      // Pairs of the first and of the last document of a file: every document of it is read in
      // order, and these at random (document 17 from document 16's offset).
      const auto last = static_cast<uint32_t>(pass.table.size() - 1);
      const uint32_t in_a = change.file == 0 ? 2 : 0;
      ASSERT_EQ(pass.table.Location(16), inputs.paths[0] + ":22");
      const std::vector<DocumentPair> pairs = {{0, in_a}, {in_a, 17}, {17, last}};
      const JobSettings settings{options, signer->options(), *signer, 2};
      auto got = ExactJaccards(pass.files, pass.table, settings, pairs, size_t{1} << 20);
      ASSERT_FALSE(got.ok()) << change.name << " at random " << at_random;
      EXPECT_EQ(got.status().code(), Status::Code::kInternal) << change.name;
      EXPECT_THAT(got.status().message(), HasSubstr(where)) << change.name << " " << at_random;
      EXPECT_THAT(got.status().message(), HasSubstr("changed since pass 1")) << change.name;
    }
  }
}

TEST(ExactJaccardsTest, RefusesBadCallsAndStopsWhenCancelled) {
  const TestInputs inputs;
  DedupOptions options = TestOptions(inputs);
  const auto signer = TestSigner(options);
  ASSERT_NE(signer, nullptr);
  const PassOne pass = RunPassOne(options, *signer, 1, inputs.dir.Path("stdin"));
  const JobSettings settings{options, signer->options(), *signer, 1};
  const auto n = static_cast<uint32_t>(pass.table.size());
  auto outside =
      ExactJaccards(pass.files, pass.table, settings, std::vector<DocumentPair>{{0, n}}, 1 << 20);
  EXPECT_EQ(outside.status().code(), Status::Code::kInvalidArgument);
  auto none = ExactJaccards(pass.files, pass.table, settings, {}, 1 << 20);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());

  MethodOptions simhash;
  simhash.method = DedupMethod::kSimhash;
  auto simhash_signer = DocumentSigner::Create(simhash);
  ASSERT_TRUE(simhash_signer.ok());
  const JobSettings simhash_settings{options, (*simhash_signer)->options(), **simhash_signer, 1};
  auto refused = ExactJaccards(pass.files, pass.table, simhash_settings,
                               std::vector<DocumentPair>{{0, 1}}, 1 << 20);
  EXPECT_EQ(refused.status().code(), Status::Code::kInvalidArgument);

  std::atomic<bool> cancel{true};
  options.cancel = &cancel;
  auto cancelled =
      ExactJaccards(pass.files, pass.table, settings, std::vector<DocumentPair>{{0, 1}}, 1 << 20);
  EXPECT_EQ(cancelled.status().code(), Status::Code::kCancelled);
}

}  // namespace
}  // namespace neardup::dedup_internal
