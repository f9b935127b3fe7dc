// The keyword model cache: IDF values joined through the cache file must equal the ones joined from
// the IDF table, and a damaged or stale cache file must fall back to the table.
#include "weight/keyword_cache.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "neardup/keywords.h"
#include "segment/test_files.h"

namespace neardup {
namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

class KeywordCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const char* saved = std::getenv("NEARDUP_CACHE_DIR")) saved_ = saved;
    ::setenv("NEARDUP_CACHE_DIR", (files_.dir() + "/cache").c_str(), 1);
    DictionaryOptions options;
    options.hmm_dir = testing::WriteSmallHmm(files_, "{'B': {}, 'E': {}, 'M': {}, 'S': {}}");
    options.dict_path = files_.Write("dict.txt", "甲乙 5\n乙 1\n甲 1\n丁丙 2\n戊 2\n");
    auto dict = Dictionary::Load(options);
    ASSERT_TRUE(dict.ok()) << dict.status().ToString();
    dictionary_ = *dict;
    idf_path_ = files_.Write("idf.txt", "甲乙 3.5\n丁丙 1.25\n戊己 7.0\nγ射线 9.5\n");
    stop_path_ = files_.Write("stop.txt", "戊己\n");
  }
  void TearDown() override {
    if (saved_) {
      ::setenv("NEARDUP_CACHE_DIR", saved_->c_str(), 1);
    } else {
      ::unsetenv("NEARDUP_CACHE_DIR");
    }
  }
  std::shared_ptr<const KeywordModel> Load(bool use_cache) const {
    auto model = KeywordModel::Load(
        dictionary_,
        {.idf_path = idf_path_, .stop_words_path = stop_path_, .use_cache = use_cache});
    EXPECT_TRUE(model.ok()) << model.status().ToString();
    return model.ok() ? *model : nullptr;
  }
  std::string KeywordCacheFile() const {
    for (const auto& entry : std::filesystem::directory_iterator(files_.dir() + "/cache")) {
      if (entry.path().filename().string().starts_with("jieba-keywords-"))
        return entry.path().string();
    }
    return {};
  }
  // The IDF of every word the tests use, and the keywords of a text, as one comparable string.
  static std::string Describe(const KeywordModel& model) {
    std::string out;
    for (const char* word : {"甲乙", "丁丙", "戊己", "γ射线", "乙甲", "甲"}) {
      out += std::string(word) + "=" + std::to_string(model.IdfOf(word, -2)) + " ";
    }
    KeywordExtractor extractor(std::make_shared<KeywordModel>(model));
    auto keywords = extractor.Extract("甲乙丁丙戊己甲乙 γ射线", 0);
    for (const auto& keyword : *keywords)
      out += keyword.word + ":" + std::to_string(keyword.weight) + " ";
    return out + "median=" + std::to_string(model.median_idf());
  }

  testing::TempFiles files_;
  std::shared_ptr<const Dictionary> dictionary_;
  std::string idf_path_, stop_path_;
  std::optional<std::string> saved_;
};

TEST_F(KeywordCacheTest, CachedEqualsJoined) {
  const auto joined = Load(false);
  const auto cold = Load(true);
  const auto warm = Load(true);
  ASSERT_TRUE(joined && cold && warm);
  ASSERT_FALSE(KeywordCacheFile().empty());
  EXPECT_EQ(Describe(*warm), Describe(*joined));
  EXPECT_EQ(Describe(*cold), Describe(*joined));
  EXPECT_EQ(warm->IdfOf("甲乙", -2), 3.5);
  EXPECT_EQ(warm->IdfOf("γ射线", -2), 9.5);
  EXPECT_TRUE(warm->stop_words().Contains("戊己"));
}

TEST_F(KeywordCacheTest, DamagedCacheFallsBackToTheTable) {
  const std::string expected = Describe(*Load(false));
  ASSERT_TRUE(Load(true));
  const std::string path = KeywordCacheFile();
  const std::string whole = ReadFile(path);
  for (size_t size : {size_t{0}, size_t{20}, whole.size() / 2, whole.size() - 1}) {
    std::ofstream(path, std::ios::binary) << whole.substr(0, size);
    EXPECT_EQ(Describe(*Load(true)), expected) << "truncated to " << size;
  }
  for (size_t bit = 3; bit < whole.size() * 8; bit += whole.size() * 8 / 61) {
    std::string damaged = whole;
    damaged[bit / 8] = static_cast<char>(damaged[bit / 8] ^ (1 << (bit % 8)));
    std::ofstream(path, std::ios::binary) << damaged;
    EXPECT_EQ(Describe(*Load(true)), expected) << "bit " << bit;
  }
  EXPECT_EQ(ReadFile(path), whole);
}

TEST_F(KeywordCacheTest, ChangedIdfFileIsDetected) {
  ASSERT_TRUE(Load(true));
  files_.Write("idf.txt", "甲乙 3.6\n丁丙 1.25\n戊己 7.0\nγ射线 9.5\n");
  const auto loaded = Load(true);
  EXPECT_EQ(loaded->IdfOf("甲乙", -2), 3.6);
  EXPECT_EQ(Describe(*loaded), Describe(*Load(false)));
}

}  // namespace
}  // namespace neardup
