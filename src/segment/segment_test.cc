#include "neardup/segment.h"

#include <gtest/gtest.h>

#include <random>

#include "segment/cut_engine.h"
#include "segment/dictionary_data.h"
#include "segment/reference_cut.h"
#include "segment/test_files.h"
#include "text/utf8.h"

namespace neardup {
namespace {

using segment_internal::DictionaryData;

std::string Encode(std::u32string_view s) {
  std::string out;
  for (char32_t cp : s) text_internal::AppendUtf8(cp, &out);
  return out;
}

// A dictionary of a few Han words ("Han letters" 甲乙丙丁戊 stand for a b c d e).
class SmallDictionary : public ::testing::Test {
 protected:
  void SetUp() override {
    hmm_dir_ = testing::WriteSmallHmm(files_, "{'B': {}, 'E': {}, 'M': {}, 'S': {}}");
  }
  Result<std::shared_ptr<const Dictionary>> Load(std::string_view dict_text,
                                                 std::vector<std::string> user = {}) {
    DictionaryOptions options;
    options.dict_path = files_.Write("dict.txt", dict_text);
    options.hmm_dir = hmm_dir_;
    options.user_dict_paths = std::move(user);
    return Dictionary::Load(options);
  }
  std::vector<std::string> Cut(const std::shared_ptr<const Dictionary>& dict, std::string_view text,
                               CutOptions options = {}) {
    Segmenter segmenter(dict);
    auto words = segmenter.Cut(text, options);
    EXPECT_TRUE(words.ok()) << words.status().ToString();
    return std::vector<std::string>(words->begin(), words->end());
  }
  testing::TempFiles files_;
  std::string hmm_dir_;
};

TEST_F(SmallDictionary, FrequenciesFollowJiebasFreqDict) {
  auto dict = Load("甲乙 4 n\n甲 4\n乙 4\nγ射线 2\n甲乙 6\n");
  ASSERT_TRUE(dict.ok()) << dict.status().ToString();
  EXPECT_EQ((*dict)->total_frequency(), 20);  // every line counts, duplicates too
  EXPECT_EQ((*dict)->Frequency("甲乙"), 6);   // the last line of a word wins
  EXPECT_EQ((*dict)->Frequency("γ射"), 0);    // prefixes are entries of frequency 0
  EXPECT_EQ((*dict)->Frequency("γ射线"), 2);
  EXPECT_EQ((*dict)->Frequency("乙甲"), std::nullopt);
  EXPECT_EQ((*dict)->word_count(), 3u);
}

// Route ties: "甲乙甲" can be 甲乙|甲 or 甲|乙甲 with equal sums; jieba's max() over (probability,
// end) tuples takes the larger end, so the first word is the longer one.
TEST_F(SmallDictionary, RouteTiesGoToTheLongerFirstWord) {
  auto dict = Load("甲乙 5\n乙甲 5\n甲 1\n乙 1\n丙 100\n");
  ASSERT_TRUE(dict.ok());
  EXPECT_EQ(Cut(*dict, "甲乙甲", {.mode = CutMode::kDefault, .hmm = false}),
            (std::vector<std::string>{"甲乙", "甲"}));
}

TEST_F(SmallDictionary, NonBlockCharactersAreWordsOfTheirOwn) {
  auto dict = Load("甲乙 5\n");
  ASSERT_TRUE(dict.ok());
  EXPECT_EQ(Cut(*dict, "甲乙，\r\n  x\n\r!"),
            (std::vector<std::string>{"甲乙", "，", "\r\n", " ", " ", "x", "\n", "\r", "!"}));
  // cut_all keeps the runs between white space whole, empty ones included.
  EXPECT_EQ(Cut(*dict, "，。 甲乙", {.mode = CutMode::kAll, .hmm = true}),
            (std::vector<std::string>{"，。", " ", "", "甲乙"}));
}

TEST_F(SmallDictionary, UserDictionaryAddsDeletesAndSuggests) {
  const std::string user =
      files_.Write("user.txt", "\xEF\xBB\xBF丙丁 3 n\n甲乙 0\n丁戊\n\n戊 x y\n");
  auto dict = Load("甲乙 5\n乙 1\n甲 1\n丁 2\n戊 2\n", {user});
  ASSERT_TRUE(dict.ok()) << dict.status().ToString();
  EXPECT_EQ((*dict)->Frequency("丙丁"), 3);
  EXPECT_EQ((*dict)->Frequency("甲乙"), 0);
  // suggest_freq("丁戊"): max(int(2/T1 * 2/T1 * T1) + 1, 1) with T1 = 11 + 3 + 0 = 14.
  EXPECT_EQ((*dict)->Frequency("丁戊"), 1);
  // "戊 x y": the shortest word after which the rest is [" digits"][" letters"] is "戊 x" (tag y).
  EXPECT_EQ((*dict)->Frequency("戊 x"), 1);
  EXPECT_EQ((*dict)->total_frequency(), 16);  // these values were checked against jieba.Tokenizer
  EXPECT_EQ(Cut(*dict, "甲乙", {.mode = CutMode::kDefault, .hmm = false}),
            (std::vector<std::string>{"甲", "乙"}));
}

TEST_F(SmallDictionary, BadFilesGiveErrorsWithPathAndLine) {
  auto missing = Dictionary::Load(
      {.dict_path = files_.dir() + "/none.txt", .hmm_dir = hmm_dir_, .user_dict_paths = {}});
  EXPECT_EQ(missing.status().code(), Status::Code::kNotFound);
  EXPECT_NE(missing.status().message().find("none.txt"), std::string::npos);

  auto malformed = Load("甲乙 5\n甲乙五\n");
  ASSERT_FALSE(malformed.ok());
  EXPECT_NE(malformed.status().message().find("dict.txt:2:"), std::string::npos)
      << malformed.status().message();

  auto frequency = Load("甲乙 5\n甲 x1\n");
  EXPECT_NE(frequency.status().message().find("dict.txt:2: invalid frequency"), std::string::npos);

  auto utf8 = Load("甲乙 5\n\xff\xfe 3\n");
  EXPECT_NE(utf8.status().message().find("dict.txt:2: invalid UTF-8"), std::string::npos);

  auto empty = Load("");
  EXPECT_FALSE(empty.ok());

  const std::string bad_user = files_.Write("bad_user.txt", "甲\n\xc3\x28\n");
  auto user = Load("甲乙 5\n", {bad_user});
  EXPECT_NE(user.status().message().find("bad_user.txt:2"), std::string::npos)
      << user.status().message();

  auto no_hmm = Dictionary::Load({.dict_path = files_.Write("d2.txt", "甲 1\n"),
                                  .hmm_dir = files_.dir() + "/x",
                                  .user_dict_paths = {}});
  EXPECT_EQ(no_hmm.status().code(), Status::Code::kNotFound);
}

TEST_F(SmallDictionary, InvalidUtf8TextIsAnErrorWithItsOffset) {
  auto dict = Load("甲乙 5\n");
  ASSERT_TRUE(dict.ok());
  Segmenter segmenter(*dict);
  auto words = segmenter.Cut("甲乙\xe4\xb8");
  ASSERT_FALSE(words.ok());
  EXPECT_EQ(words.status().code(), Status::Code::kInvalidArgument);
  EXPECT_NE(words.status().message().find("offset 6"), std::string::npos);
}

// The fast engine's DAG and route (HMM off) against the direct transcription of jieba, on random
// text over the characters of the real dictionary.
TEST(JiebaDictionary, FastRouteMatchesReferenceOnRandomText) {
  auto dict = Dictionary::Default();
  ASSERT_TRUE(dict.ok()) << dict.status().ToString();
  const DictionaryData& data = (*dict)->data();
  const segment_internal::FrequencyLookup lookup = [&](std::u32string_view w) {
    return data.Frequency(Encode(w));
  };
  const std::u32string alphabet =
      U"中国人民大学生活动研究生命北京清华长江大桥的了是在不有和abc1.2%+ ，\r\n";
  std::mt19937 rng(5);
  Segmenter segmenter(*dict);
  const int trials = std::getenv("NEARDUP_SANITIZED") ? 200 : 2000;
  for (int trial = 0; trial < trials; ++trial) {
    std::u32string text;
    for (int i = static_cast<int>(rng() % 24); i >= 0; --i)
      text.push_back(alphabet[rng() % alphabet.size()]);
    const std::string utf8 = Encode(text);
    std::vector<std::string> expected;
    for (const auto& w : segment_internal::ReferenceCutNoHmm(text, lookup, data.total))
      expected.push_back(Encode(w));
    auto got = segmenter.Cut(utf8, {.mode = CutMode::kDefault, .hmm = false});
    ASSERT_TRUE(got.ok());
    ASSERT_EQ(std::vector<std::string>(got->begin(), got->end()), expected) << utf8;
  }
}

TEST(JiebaDictionary, LoadsWithinBudget) {
  auto dict = Dictionary::Default();
  ASSERT_TRUE(dict.ok()) << dict.status().ToString();
  EXPECT_GT((*dict)->word_count(), 300000u);
  EXPECT_LT((*dict)->MemoryBytes(), size_t{100} << 20);
  Segmenter segmenter(*dict);
  auto words = segmenter.Cut("我来到北京清华大学");
  ASSERT_TRUE(words.ok());
  EXPECT_EQ(
      std::vector<std::string>(words->begin(), words->end()),
      (std::vector<std::string>{"我", "来到", "北京", "清华大学"}));  // jieba's README example
}

}  // namespace
}  // namespace neardup
