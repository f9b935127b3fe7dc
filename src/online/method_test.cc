// MethodOptions defaults, settings lines and DocumentSigner against the pieces it is made of.
#include "neardup/method.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "neardup/hamming.h"

namespace neardup {
namespace {

TEST(MethodOptions, EachMethodTakesItsOwnFeatures) {
  MethodOptions simhash;
  simhash.method = DedupMethod::kSimhash;
  auto resolved = ResolveMethodOptions(simhash);
  ASSERT_TRUE(resolved.ok()) << resolved.status().ToString();
  EXPECT_EQ(resolved->features->shingle_unit, ShingleUnit::kWord);
  EXPECT_EQ(resolved->features->weighting, FeatureWeighting::kOccurrences);
  EXPECT_FALSE(resolved->features->fold_traditional);

  auto accurate = ResolveMethodOptions(MethodOptions{});
  ASSERT_TRUE(accurate.ok());
  EXPECT_EQ(accurate->features->shingle_unit, ShingleUnit::kChar);
  EXPECT_EQ(accurate->features->shingle_size, 5);
  EXPECT_EQ(accurate->features->weighting, FeatureWeighting::kDistinct);
  EXPECT_EQ(accurate->sketch.rows, *ChooseRows(0.8, 20));
}

// Every threshold in (0, 1] has a design: up to 0.97 the rows ChooseRows picks; above, as many as
// the bins hold (more would not fit), which still find a pair at the threshold almost surely.
TEST(MethodOptions, EveryThresholdUpToOneHasADesign) {
  for (const double t : {0.01, 0.5, 0.8, 0.97, 0.98, 0.99, 0.995, 1.0}) {
    MethodOptions o;
    o.threshold = t;
    auto resolved = ResolveMethodOptions(o);
    ASSERT_TRUE(resolved.ok()) << t << ": " << resolved.status().ToString();
    const SketchOptions& s = resolved->sketch;
    EXPECT_LE(s.bands * s.rows, s.bins) << t;
    EXPECT_EQ(s.rows, std::min(*ChooseRows(t, s.bands), s.bins / s.bands)) << t;
    if (s.rows > 1) {
      EXPECT_GE(BandCollisionProbability(t, s.bands, s.rows), 0.995) << t;
    }
    EXPECT_TRUE(DocumentSigner::Create(o).ok()) << t;
  }
  MethodOptions small;
  small.threshold = 0.99;
  small.sketch.bins = 256;  // 12 rows of 20 bands
  auto resolved = ResolveMethodOptions(small);
  ASSERT_TRUE(resolved.ok()) << resolved.status().ToString();
  EXPECT_EQ(resolved->sketch.rows, 12);
}

TEST(MethodOptions, BadSettingsAreNamed) {
  MethodOptions o;
  o.threshold = 0;
  EXPECT_NE(ResolveMethodOptions(o).status().message().find("threshold"), std::string::npos);
  o = {};
  o.k = 8;
  EXPECT_NE(ResolveMethodOptions(o).status().message().find("k must be"), std::string::npos);
  o = {};
  o.features = FingerprintOptions{};  // occurrences: the sketch needs distinct features
  EXPECT_NE(ResolveMethodOptions(o).status().message().find("distinct"), std::string::npos);
  o = {};
  o.sketch.bins = 1000;
  EXPECT_EQ(DocumentSigner::Create(o).status().code(), Status::Code::kInvalidArgument);
  o = {};
  o.method = static_cast<DedupMethod>(7);
  EXPECT_EQ(ResolveMethodOptions(o).status().code(), Status::Code::kInvalidArgument);
}

TEST(SettingsLine, ReadsBackToTheSameLine) {
  std::vector<MethodOptions> cases(5);
  cases[1].method = DedupMethod::kSimhash;
  cases[2].threshold = 0.65;
  cases[2].sketch = {512, 2, 16, 0};
  cases[3].method = DedupMethod::kSimhash;
  cases[3].k = 5;
  cases[3].features = FingerprintOptions{};
  cases[3].features->mode = FeatureMode::kKeywords;
  cases[3].features->keyword_count = 20;
  cases[3].features->normalize = false;
  cases[4].features = AccurateFingerprintOptions();
  cases[4].features->language = Language::kOther;
  cases[4].features->fold_traditional = false;
  for (const MethodOptions& o : cases) {
    auto resolved = ResolveMethodOptions(o);
    ASSERT_TRUE(resolved.ok()) << resolved.status().ToString();
    const std::string line = SettingsLine(*resolved);
    auto parsed = ParseSettingsLine(line);
    ASSERT_TRUE(parsed.ok()) << line << ": " << parsed.status().ToString();
    EXPECT_EQ(SettingsLine(*parsed), line);
    EXPECT_EQ(DescribeSettingsDifference(line, SettingsLine(*parsed)), "");
  }
}

TEST(SettingsLine, DifferencesAreNamed) {
  auto a = *ResolveMethodOptions(MethodOptions{});
  MethodOptions other;
  other.threshold = 0.7;
  other.sketch.bands = 16;
  auto b = *ResolveMethodOptions(other);
  const std::string diff = DescribeSettingsDifference(SettingsLine(a), SettingsLine(b));
  EXPECT_NE(diff.find("threshold 0.8 here, 0.7 in the index"), std::string::npos) << diff;
  EXPECT_NE(diff.find("bands 20x6 here, 16x"), std::string::npos) << diff;
  MethodOptions simhash;
  simhash.method = DedupMethod::kSimhash;
  const std::string methods =
      DescribeSettingsDifference(SettingsLine(a), SettingsLine(*ResolveMethodOptions(simhash)));
  EXPECT_NE(methods.find("method accurate here, simhash in the index"), std::string::npos)
      << methods;
  // lang=zh signs as lang=auto does.
  MethodOptions zh;
  zh.features = AccurateFingerprintOptions();
  zh.features->language = Language::kChinese;
  EXPECT_EQ(DescribeSettingsDifference(SettingsLine(a), SettingsLine(*ResolveMethodOptions(zh))),
            "");
}

TEST(SettingsLine, BadLinesAreRefused) {
  EXPECT_EQ(ParseSettingsLine("").status().code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(ParseSettingsLine("mode=terms").status().code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(ParseSettingsLine("method=fast").status().code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(ParseSettingsLine("method=simhash colour=red").status().code(),
            Status::Code::kInvalidArgument);
  EXPECT_EQ(ParseSettingsLine("method=simhash k=x").status().code(),
            Status::Code::kInvalidArgument);
  EXPECT_EQ(ParseSettingsLine("method=accurate bands=20").status().code(),
            Status::Code::kInvalidArgument);
  EXPECT_EQ(ParseSettingsLine("method=simhash fingerprint=0").status().code(),
            Status::Code::kFailedPrecondition);
  EXPECT_EQ(ParseSettingsLine("method=accurate sketch_version=9").status().code(),
            Status::Code::kFailedPrecondition);
  EXPECT_EQ(ParseSettingsLine("method=simhash k=9").status().code(),
            Status::Code::kInvalidArgument);
  // Lines a signer would refuse are refused here, naming the setting (both found by fuzz_records).
  auto sketch = ParseSettingsLine("method=accurate sketch=1025x1");
  EXPECT_EQ(sketch.status().code(), Status::Code::kInvalidArgument);
  EXPECT_NE(sketch.status().message().find("1025"), std::string::npos);
  auto shingles = ParseSettingsLine("method=accurate mode=shingles:char:75");
  EXPECT_EQ(shingles.status().code(), Status::Code::kInvalidArgument);
  EXPECT_NE(shingles.status().message().find("75"), std::string::npos);
  EXPECT_EQ(ParseSettingsLine("method=simhash mode=shingles:word:65").status().code(),
            Status::Code::kInvalidArgument);
}

TEST(DocumentSigner, SignsAsTheFingerprinterAndSketcherDo) {
  auto signer = DocumentSigner::Create(MethodOptions{});
  ASSERT_TRUE(signer.ok()) << signer.status().ToString();
  auto fingerprinter = Fingerprinter::Create(AccurateFingerprintOptions());
  SketchOptions sketch{1024, 1, 20, *ChooseRows(0.8, 20)};
  auto sketcher = Sketcher::Create(sketch);
  ASSERT_TRUE(fingerprinter.ok() && sketcher.ok());
  auto builder = (*fingerprinter)->NewBuilder();
  DocumentSigner::Session session(**signer);
  for (const std::string text : {"The quick brown fox jumps over the lazy dog near the river bank.",
                                 "繁體中文的文章被轉換成簡體再比較", "x", ""}) {
    Signature signature;
    ASSERT_TRUE(session.Sign(text, &signature).ok());
    builder->Reset();
    ASSERT_TRUE(builder->Update(text).ok());
    auto fingerprint = builder->Finish();
    ASSERT_TRUE(fingerprint.ok());
    EXPECT_EQ(signature.simhash, fingerprint->simhash);
    EXPECT_EQ(signature.empty, fingerprint->empty);
    std::vector<uint8_t> want_sketch((*sketcher)->sketch_bytes());
    std::vector<uint32_t> want_keys(20);
    if (!fingerprint->empty) {
      ASSERT_TRUE(
          (*sketcher)->Compute(builder->DistinctFeatureHashes(), want_sketch, want_keys).ok());
    }
    EXPECT_EQ(signature.sketch, want_sketch) << text;
    EXPECT_EQ(signature.band_keys, want_keys) << text;
    EXPECT_EQ(signature, *(*signer)->Sign(text));
  }
}

TEST(DocumentSigner, ComparesByTheMethodsRule) {
  const std::string a =
      "Near-duplicate detection finds reposted and lightly edited copies of the same article.";
  const std::string b =
      "Near-duplicate detection finds reposted and lightly edited copies of the same article!";
  const std::string c =
      "Something else entirely, about gardening and the best time to plant tomatoes outside.";
  auto accurate = std::move(DocumentSigner::Create(MethodOptions{})).value();
  auto ja = *accurate->Sign(a), jb = *accurate->Sign(b), jc = *accurate->Sign(c),
       empty = *accurate->Sign("□□");
  ASSERT_TRUE(accurate->Compare(ja, jb).has_value());
  EXPECT_GE(*accurate->Compare(ja, jb), 0.8);
  EXPECT_FALSE(accurate->Compare(ja, jc).has_value());
  EXPECT_TRUE(empty.empty);
  EXPECT_FALSE(accurate->Compare(empty, empty).has_value());

  MethodOptions o;
  o.method = DedupMethod::kSimhash;
  auto simhash = std::move(DocumentSigner::Create(o)).value();
  auto sa = *simhash->Sign(a), sc = *simhash->Sign(c);
  EXPECT_TRUE(sa.sketch.empty());
  EXPECT_TRUE(sa.band_keys.empty());
  EXPECT_EQ(simhash->Compare(sa, sa), 0.0);
  EXPECT_EQ(simhash->Compare(sa, sc).has_value(), HammingDistance(sa.simhash, sc.simhash) <= 3);
}

TEST(DocumentSigner, BadTextIsAnErrorNotAnAbort) {
  MethodOptions o;
  o.features = AccurateFingerprintOptions();
  o.features->invalid_utf8 = InvalidUtf8::kReject;
  o.features->max_document_bytes = 16;
  auto signer = std::move(DocumentSigner::Create(o)).value();
  EXPECT_EQ(signer->Sign("bad \xff byte").status().code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(signer->Sign(std::string(100, 'a')).status().code(), Status::Code::kResourceExhausted);
}

}  // namespace
}  // namespace neardup
