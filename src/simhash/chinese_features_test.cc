// The fingerprint modes that use jieba's segmenter and TF-IDF weights, checked against features
// computed independently through the public segmentation and keyword APIs.
#include <gtest/gtest.h>

#include "neardup/keywords.h"
#include "neardup/segment.h"
#include "neardup/simhash.h"

namespace neardup {
namespace {

const char kChinese[] =
    "自然语言处理是计算机科学领域与人工智能领域中的一个重要方向。它研究能实现人与计算机之间用自然语"
    "言"
    "进行有效通信的各种理论和方法。自然语言处理是一门融语言学、计算机科学、数学于一体的科学。";

uint64_t Fold(const std::vector<std::pair<std::string, double>>& features) {
  std::vector<uint64_t> hashes;
  std::vector<double> weights;
  for (const auto& [text, weight] : features) {
    hashes.push_back(HashFeature(text));
    weights.push_back(weight);
  }
  return FoldFeatureHashes(hashes.data(), weights.data(), hashes.size());
}

std::shared_ptr<const KeywordModel> Model() {
  auto model = KeywordModel::Default();
  EXPECT_TRUE(model.ok()) << model.status().ToString();
  return model.ok() ? *model : nullptr;
}

TEST(KeywordsMode, IsTheFoldOfExtractTags) {
  FingerprintOptions options;
  options.mode = FeatureMode::kKeywords;
  options.normalize = false;
  options.keyword_count = 8;
  auto fingerprinter = Fingerprinter::Create(options);
  ASSERT_TRUE(fingerprinter.ok()) << fingerprinter.status().ToString();
  auto result = (*fingerprinter)->Fingerprint(kChinese);
  ASSERT_TRUE(result.ok());

  KeywordExtractor extractor(Model());
  auto keywords = extractor.Extract(kChinese, 8);
  ASSERT_TRUE(keywords.ok());
  ASSERT_EQ(keywords->size(), 8u);
  std::vector<std::pair<std::string, double>> features;
  for (const auto& k : *keywords) features.emplace_back(k.word, k.weight);
  EXPECT_EQ(result->simhash, Fold(features));
  EXPECT_EQ(result->feature_count, 8u);
}

TEST(KeywordsMode, AutomaticCountFollowsDocumentLength) {
  FingerprintOptions options;
  EXPECT_EQ(KeywordCountFor(options, 0), 5u);
  EXPECT_EQ(KeywordCountFor(options, 120 * 7), 7u);
  EXPECT_EQ(KeywordCountFor(options, 1 << 30), 200u);
  options.keyword_count = 3;
  EXPECT_EQ(KeywordCountFor(options, 1 << 30), 3u);
  options.keyword_count = -1;
  EXPECT_FALSE(Fingerprinter::Create(options).ok());
}

TEST(TermsMode, ChineseWordsAreWeightedByIdf) {
  FingerprintOptions options;
  options.mode = FeatureMode::kTerms;
  auto fingerprinter = Fingerprinter::Create(options);
  ASSERT_TRUE(fingerprinter.ok());
  const std::string text = std::string("hello ") + kChinese + " world";
  auto result = (*fingerprinter)->Fingerprint(text);
  ASSERT_TRUE(result.ok());

  // The tokeniser cuts at punctuation: each CJK run is segmented on its own.
  const auto model = Model();
  Segmenter segmenter(model->dictionary());
  std::vector<std::pair<std::string, double>> features = {{"hello", 1.0}};
  std::string run;
  auto flush = [&] {
    auto words = segmenter.Cut(run);
    ASSERT_TRUE(words.ok());
    auto idf = IdfTable::Default();
    ASSERT_TRUE(idf.ok());
    for (auto w : *words) {
      const auto value = (*idf)->Find(w);
      features.emplace_back(std::string(w), value ? *value : (*idf)->median());
    }
    run.clear();
  };
  const std::string chinese = kChinese;
  for (size_t i = 0; i < chinese.size(); i += 3) {
    const std::string c = chinese.substr(i, 3);
    if (c == "。" || c == "、") {
      flush();
    } else {
      run += c;
    }
  }
  if (!run.empty()) flush();
  features.emplace_back("world", 1.0);
  EXPECT_EQ(result->simhash, Fold(features));
}

TEST(TermsMode, TextWithoutChineseHasUnitWeights) {
  FingerprintOptions options;
  options.mode = FeatureMode::kTerms;
  auto fingerprinter = Fingerprinter::Create(options);
  ASSERT_TRUE(fingerprinter.ok());
  auto result = (*fingerprinter)->Fingerprint("The quick brown fox, the lazy dog 42");
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result->simhash, Fold({{"the", 1},
                                   {"quick", 1},
                                   {"brown", 1},
                                   {"fox", 1},
                                   {"the", 1},
                                   {"lazy", 1},
                                   {"dog", 1},
                                   {"42", 1}}));
}

TEST(ShinglesMode, ChineseWordsAreTheUnits) {
  FingerprintOptions options;
  options.shingle_size = 2;
  auto fingerprinter = Fingerprinter::Create(options);
  ASSERT_TRUE(fingerprinter.ok());
  auto result = (*fingerprinter)->Fingerprint("我来到北京清华大学");
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result->simhash, Fold({{"我 来到", 1}, {"来到 北京", 1}, {"北京 清华大学", 1}}));
}

// The code points of ASCII and three-byte UTF-8 text (all these tests use), each as its bytes.
std::vector<std::string> CodePoints(std::string_view text) {
  std::vector<std::string> units;
  for (size_t i = 0; i < text.size();) {
    const size_t len = static_cast<unsigned char>(text[i]) >= 0xE0 ? 3 : 1;
    units.emplace_back(text.substr(i, len));
    i += len;
  }
  return units;
}

// Language::kOther cuts Han runs into single characters: the same features as the segmenter sees
// when every character stands alone, with unit weights in terms mode, and no dictionary needed.
TEST(Languages, OtherCutsEveryHanCharacter) {
  const std::string text = std::string("hello ") + kChinese + " world";
  std::string spaced;  // every Han character a token of its own
  for (const std::string& unit : CodePoints(text)) spaced += unit.size() == 3 ? unit + ' ' : unit;
  FingerprintOptions other;
  other.language = Language::kOther;
  FingerprintOptions automatic;
  auto a = Fingerprinter::Create(other), b = Fingerprinter::Create(automatic);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ((*a)->Fingerprint(text)->simhash, (*b)->Fingerprint(spaced)->simhash);
  EXPECT_NE((*a)->Fingerprint(text)->simhash, (*b)->Fingerprint(text)->simhash);

  other.mode = FeatureMode::kTerms;
  auto terms = Fingerprinter::Create(other);
  ASSERT_TRUE(terms.ok());
  std::vector<std::pair<std::string, double>> features = {{"hello", 1.0}};
  for (const std::string& unit : CodePoints(kChinese)) {
    // Punctuation (、。，) is not a word; every Han character is one, weight 1.
    if (unit != "、" && unit != "。" && unit != "，") features.emplace_back(unit, 1.0);
  }
  features.emplace_back("world", 1.0);
  EXPECT_EQ((*terms)->Fingerprint(text)->simhash, Fold(features));

  other.mode = FeatureMode::kKeywords;
  EXPECT_EQ(Fingerprinter::Create(other).status().code(), Status::Code::kInvalidArgument);
  // kChinese segments like kAuto (its dictionary loaded by Create()).
  FingerprintOptions chinese;
  chinese.language = Language::kChinese;
  auto c = Fingerprinter::Create(chinese);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ((*c)->Fingerprint(text)->simhash, (*b)->Fingerprint(text)->simhash);
  EXPECT_EQ(*ParseLanguage("en"), Language::kOther);
  EXPECT_EQ(*ParseLanguage("zh"), Language::kChinese);
  EXPECT_EQ(*ParseLanguage("auto"), Language::kAuto);
  EXPECT_EQ(LanguageName(Language::kOther), "en");
  EXPECT_FALSE(ParseLanguage("fr").ok());
}

TEST(ChineseModes, StreamingGivesTheSameFingerprint) {
  const std::string text =
      std::string("LibreOffice 帮助：") + kChinese + "\r\nＡＢＣ全角，iPhone 6s。";
  for (FeatureMode mode : {FeatureMode::kTerms, FeatureMode::kShingles, FeatureMode::kKeywords}) {
    FingerprintOptions options;
    options.mode = mode;
    auto fingerprinter = Fingerprinter::Create(options);
    ASSERT_TRUE(fingerprinter.ok());
    auto whole = (*fingerprinter)->Fingerprint(text);
    ASSERT_TRUE(whole.ok());
    auto builder = (*fingerprinter)->NewBuilder();
    for (size_t piece : {1, 2, 5, 7}) {
      builder->Reset();
      for (size_t i = 0; i < text.size(); i += piece)
        ASSERT_TRUE(builder->Update(text.substr(i, piece)).ok());
      auto streamed = builder->Finish();
      ASSERT_TRUE(streamed.ok());
      EXPECT_EQ(streamed->simhash, whole->simhash) << FeatureModeName(mode) << " piece " << piece;
    }
  }
}

TEST(KeywordsMode, InvalidUtf8IsReplacedOrRejected) {
  FingerprintOptions options;
  options.mode = FeatureMode::kKeywords;
  auto replace = Fingerprinter::Create(options);
  ASSERT_TRUE(replace.ok());
  auto replaced = (*replace)->Fingerprint("清华大学\xff清华大学");
  ASSERT_TRUE(replaced.ok());
  EXPECT_EQ(replaced->replaced_utf8, 1u);
  options.invalid_utf8 = InvalidUtf8::kReject;
  auto reject = Fingerprinter::Create(options);
  ASSERT_TRUE(reject.ok());
  EXPECT_FALSE((*reject)->Fingerprint("清华大学\xff").ok());
}

}  // namespace
}  // namespace neardup
