#include "neardup/keywords.h"

#include <gtest/gtest.h>

#include "segment/test_files.h"

namespace neardup {
namespace {

TEST(IdfTable, ParsesLikeJiebasIdfLoader) {
  testing::TempFiles files;
  // str.splitlines() boundaries (\r, \u2028), str.strip() of Unicode spaces, duplicates: last wins.
  auto table = IdfTable::Load(
      files.Write("idf.txt", "甲乙 1.5\r乙丙 2.5\xe2\x80\xa8\xe3\x80\x80丙丁 9 \n甲乙 3\n\n"));
  ASSERT_TRUE(table.ok()) << table.status().ToString();
  EXPECT_EQ((*table)->size(), 3u);
  EXPECT_EQ((*table)->Find("甲乙"), 3.0);
  EXPECT_EQ((*table)->Find("丙丁"), 9.0);
  EXPECT_EQ((*table)->median(), 3.0);  // sorted([2.5, 3, 9])[3 // 2]
}

TEST(IdfTable, BadFilesGiveErrorsWithPathAndLine) {
  testing::TempFiles files;
  auto missing = IdfTable::Load(files.dir() + "/none.txt");
  EXPECT_EQ(missing.status().code(), Status::Code::kNotFound);
  auto fields = IdfTable::Load(files.Write("a.txt", "甲乙 1\n甲 乙 2\n"));
  EXPECT_NE(fields.status().message().find("a.txt:2: expected 'word idf'"), std::string::npos)
      << fields.status().message();
  auto number = IdfTable::Load(files.Write("b.txt", "甲乙 x\n"));
  EXPECT_NE(number.status().message().find("b.txt:1:"), std::string::npos);
  auto utf8 = IdfTable::Load(files.Write("c.txt", "甲乙 1\n\xff 2\n"));
  EXPECT_NE(utf8.status().message().find("c.txt:2: invalid UTF-8"), std::string::npos);
  auto comment = IdfTable::Load(files.Write("d.txt", "# neardup idf build: documents=3\n甲乙 1\n"));
  ASSERT_TRUE(comment.ok());
  EXPECT_EQ((*comment)->size(), 1u);
}

TEST(StopWords, AddsFileLinesWhole) {
  testing::TempFiles files;
  StopWords stop = StopWords::JiebaDefault();
  EXPECT_TRUE(stop.Contains("the"));
  ASSERT_TRUE(stop.AddFile(files.Write("stop.txt", "一个\n有 \n")).ok());
  EXPECT_TRUE(stop.Contains("一个"));
  EXPECT_TRUE(stop.Contains("有 "));
  EXPECT_FALSE(stop.Contains("有"));
  EXPECT_EQ(stop.AddFile(files.dir() + "/none").code(), Status::Code::kNotFound);
}

class JiebaKeywords : public ::testing::Test {
 protected:
  void SetUp() override {
    auto model = KeywordModel::Default();
    ASSERT_TRUE(model.ok()) << model.status().ToString();
    model_ = *model;
  }
  std::shared_ptr<const KeywordModel> model_;
};

// Checked against jieba.analyse.extract_tags(text, topK=5, withWeight=True).
TEST_F(JiebaKeywords, MatchesJiebaOnAnExample) {
  KeywordExtractor extractor(model_);
  auto keywords = extractor.Extract("我来到北京清华大学，清华大学是一所大学 The the and iPhone", 5);
  ASSERT_TRUE(keywords.ok());
  const std::vector<std::pair<std::string, double>> expected = {{"清华大学", 2.308741349034286},
                                                                {"iPhone", 1.7078239289857142},
                                                                {"一所", 1.1159475395042857},
                                                                {"大学", 0.81631617465},
                                                                {"来到", 0.7693838405871428}};
  ASSERT_EQ(keywords->size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ((*keywords)[i].word, expected[i].first);
    EXPECT_EQ((*keywords)[i].weight, expected[i].second);
  }
}

TEST_F(JiebaKeywords, StreamingGivesTheSameKeywordsForAnyCut) {
  const std::string text =
      "自然语言处理是计算机科学领域与人工智能领域中的一个重要方向。它研究能实现人与计算机之间用自然"
      "语言进行有效通信的各种理论和方法。LibreOffice 7.4 帮助\r\n文档";
  KeywordExtractor extractor(model_);
  auto whole = extractor.Extract(text, 0);
  ASSERT_TRUE(whole.ok());
  for (size_t piece = 1; piece < 12; ++piece) {
    extractor.Reset();
    for (size_t i = 0; i < text.size(); i += piece)
      ASSERT_TRUE(extractor.Add(text.substr(i, piece)).ok());
    auto streamed = extractor.Finish(0);
    ASSERT_TRUE(streamed.ok());
    ASSERT_EQ(streamed->size(), whole->size());
    for (size_t i = 0; i < whole->size(); ++i) {
      EXPECT_EQ((*streamed)[i].word, (*whole)[i].word);
      EXPECT_EQ((*streamed)[i].weight, (*whole)[i].weight);
    }
  }
}

TEST_F(JiebaKeywords, InvalidUtf8IsAnErrorWithItsOffset) {
  KeywordExtractor extractor(model_);
  auto bad = extractor.Extract("清华大学\xc3", 3);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("offset 12"), std::string::npos);
  extractor.Reset();
  ASSERT_TRUE(extractor.Add("清华，\xe4").ok());
  EXPECT_FALSE(extractor.Finish(3).ok());
}

}  // namespace
}  // namespace neardup
