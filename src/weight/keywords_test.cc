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

// Python's float() takes inf and nan; a table of them would make weights no output can write.
TEST(IdfTable, NonFiniteValuesAreRefusedNamingTheLine) {
  testing::TempFiles files;
  for (const char* value : {"inf", "-inf", "Infinity", "nan", "NaN", "-nan", "1e400"}) {
    auto table =
        IdfTable::Load(files.Write("inf.txt", std::string("甲乙 1\n乙丙 ") + value + "\n"));
    ASSERT_FALSE(table.ok()) << value;
    EXPECT_EQ(table.status().code(), Status::Code::kInvalidArgument) << value;
    EXPECT_NE(table.status().message().find("inf.txt:2:"), std::string::npos)
        << table.status().message();
  }
}

TEST(IdfTable, TablesWithoutEntriesAreRefused) {
  testing::TempFiles files;
  for (const char* content : {"", "\n\n", " \n\xe3\x80\x80\n", "# neardup idf build: words=0\n"}) {
    auto table = IdfTable::Load(files.Write("empty.txt", content));
    ASSERT_FALSE(table.ok()) << content;
    EXPECT_EQ(table.status().code(), Status::Code::kInvalidArgument);
    EXPECT_NE(table.status().message().find("empty.txt: no entries"), std::string::npos)
        << table.status().message();
  }
}

// Lines are cut where Python's splitlines() cuts them, but errors count newlines, as grep -n does.
TEST(IdfTable, ErrorsCountLinesByNewlines) {
  testing::TempFiles files;
  auto table = IdfTable::Load(files.Write("sep.txt",
                                          "a 1\x1c"
                                          "b 2\xe2\x80\xa8"
                                          "c 3\nd x\n"));
  EXPECT_NE(table.status().message().find("sep.txt:2: expected 'word idf', got 'd x'"),
            std::string::npos)
      << table.status().message();
  auto good = IdfTable::Load(files.Write("sep_ok.txt",
                                         "a 1\x1c"
                                         "b 2\n"));
  ASSERT_TRUE(good.ok()) << good.status().ToString();
  EXPECT_EQ((*good)->size(), 2u);
}

// Every code point Python's str.isspace() holds true, as `python3 -c "print([hex(c) for c in
// range(0x110000) if chr(c).isspace()])"` lists them: none may be in a word of a table file.
TEST(IdfTable, CanHoldRefusesWordsWithPythonWhiteSpace) {
  const char32_t spaces[] = {0x9,    0xa,    0xb,    0xc,    0xd,    0x1c,   0x1d,   0x1e,
                             0x1f,   0x20,   0x85,   0xa0,   0x1680, 0x2000, 0x2001, 0x2002,
                             0x2003, 0x2004, 0x2005, 0x2006, 0x2007, 0x2008, 0x2009, 0x200a,
                             0x2028, 0x2029, 0x202f, 0x205f, 0x3000};
  for (char32_t cp : spaces) {
    std::string utf8;
    if (cp < 0x80) {
      utf8 = std::string(1, static_cast<char>(cp));
    } else if (cp < 0x800) {
      utf8 = {static_cast<char>(0xC0 | (cp >> 6)), static_cast<char>(0x80 | (cp & 0x3F))};
    } else {
      utf8 = {static_cast<char>(0xE0 | (cp >> 12)), static_cast<char>(0x80 | ((cp >> 6) & 0x3F)),
              static_cast<char>(0x80 | (cp & 0x3F))};
    }
    EXPECT_FALSE(IdfTable::CanHold(utf8)) << std::hex << static_cast<uint32_t>(cp);
    EXPECT_FALSE(IdfTable::CanHold("甲" + utf8 + "乙")) << std::hex << static_cast<uint32_t>(cp);
  }
  EXPECT_TRUE(IdfTable::CanHold("甲乙"));
  EXPECT_TRUE(IdfTable::CanHold("\x1b"));          // not white space to Python
  EXPECT_TRUE(IdfTable::CanHold("\xe2\x80\x8b"));  // U+200B, not white space to Python
  EXPECT_FALSE(IdfTable::CanHold(""));
  EXPECT_FALSE(IdfTable::CanHold("\xff"));
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
