// The dictionary cache: a dictionary loaded from its cache file must equal the one parsed from the
// sources, and a damaged, stale or foreign cache file must fall back to parsing.
#include "segment/dictionary_cache.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "neardup/segment.h"
#include "segment/test_files.h"

namespace neardup {
namespace {

using segment_internal::DictionaryData;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

template <typename T>
bool SameBytes(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

void ExpectSameData(const DictionaryData& a, const DictionaryData& b) {
  EXPECT_TRUE(SameBytes(a.trie.units(), b.trie.units()));
  EXPECT_EQ(a.trie.values(), b.trie.values());
  EXPECT_EQ(a.trie.symbols(), b.trie.symbols());
  EXPECT_TRUE(SameBytes(a.words, b.words));
  EXPECT_EQ(a.other_entries, b.other_entries);
  EXPECT_EQ(a.force_split, b.force_split);
  EXPECT_EQ(a.total, b.total);
  EXPECT_EQ(a.log_total, b.log_total);
  EXPECT_EQ(a.hmm.start, b.hmm.start);
  EXPECT_EQ(a.hmm.trans, b.hmm.trans);
  EXPECT_TRUE(SameBytes(a.hmm.emit, b.hmm.emit));
}

// Points NEARDUP_CACHE_DIR at a fresh directory for the test.
class DictionaryCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const char* saved = std::getenv("NEARDUP_CACHE_DIR")) saved_ = saved;
    ::setenv("NEARDUP_CACHE_DIR", CacheDir().c_str(), 1);
    options_.hmm_dir =
        testing::WriteSmallHmm(files_, "{'B': {'丙': -1.5}, 'E': {'丁': -2.0}, 'M': {}, 'S': {}}");
    options_.dict_path = files_.Write("dict.txt", "甲乙 5\n乙 1\n甲 1\n丁 2\n戊 2\nγ射线 3\n");
    options_.user_dict_paths = {files_.Write("user.txt", "丙丁 7\n甲乙 0\n戊丁\n")};
  }
  void TearDown() override {
    if (saved_) {
      ::setenv("NEARDUP_CACHE_DIR", saved_->c_str(), 1);
    } else {
      ::unsetenv("NEARDUP_CACHE_DIR");
    }
  }
  std::string CacheDir() const { return files_.dir() + "/cache"; }
  std::string CacheFile() const {
    for (const auto& entry : std::filesystem::directory_iterator(CacheDir()))
      return entry.path().string();
    return {};
  }
  std::shared_ptr<const Dictionary> Load(bool use_cache) const {
    DictionaryOptions options = options_;
    options.use_cache = use_cache;
    auto dict = Dictionary::Load(options);
    EXPECT_TRUE(dict.ok()) << dict.status().ToString();
    return dict.ok() ? *dict : nullptr;
  }
  size_t CacheFileCount() const {
    std::error_code ignored;
    return std::filesystem::exists(CacheDir())
               ? static_cast<size_t>(
                     std::distance(std::filesystem::directory_iterator(CacheDir()), {}))
               : 0;
  }

  testing::TempFiles files_;
  DictionaryOptions options_;
  std::optional<std::string> saved_;
};

TEST_F(DictionaryCacheTest, CachedEqualsParsed) {
  const auto parsed = Load(false);
  EXPECT_EQ(CacheFileCount(), 0u);
  const auto cold = Load(true);
  ASSERT_EQ(CacheFileCount(), 1u);
  const auto warm = Load(true);
  ASSERT_TRUE(parsed && cold && warm);
  EXPECT_FALSE(warm->data().cache_key.empty());
  ExpectSameData(parsed->data(), warm->data());
  ExpectSameData(parsed->data(), cold->data());
  EXPECT_EQ(warm->Frequency("丙丁"), 7);
  EXPECT_EQ(warm->Frequency("甲乙"), 0);
  EXPECT_EQ(warm->Frequency("γ射线"), 3);
  EXPECT_EQ(warm->sources().user_dict_paths, options_.user_dict_paths);
}

TEST_F(DictionaryCacheTest, DamagedCacheFallsBackToTheSources) {
  const auto parsed = Load(false);
  ASSERT_TRUE(Load(true));
  const std::string path = CacheFile();
  const std::string whole = ReadFile(path);
  ASSERT_GT(whole.size(), 100u);
  for (size_t size :
       {size_t{0}, size_t{7}, size_t{16}, whole.size() / 3, whole.size() / 2, whole.size() - 1}) {
    files_.Write("cache/" + std::filesystem::path(path).filename().string(), whole.substr(0, size));
    const auto loaded = Load(true);
    ASSERT_TRUE(loaded);
    ExpectSameData(parsed->data(), loaded->data());
    EXPECT_EQ(ReadFile(path), whole) << "rewritten after truncation to " << size;
  }
  for (size_t bit = 5; bit < whole.size() * 8; bit += whole.size() * 8 / 97) {
    std::string damaged = whole;
    damaged[bit / 8] = static_cast<char>(damaged[bit / 8] ^ (1 << (bit % 8)));
    files_.Write("cache/" + std::filesystem::path(path).filename().string(), damaged);
    const auto loaded = Load(true);
    ASSERT_TRUE(loaded);
    ExpectSameData(parsed->data(), loaded->data());
  }
}

TEST_F(DictionaryCacheTest, ChangedSourceIsDetected) {
  ASSERT_TRUE(Load(true));
  // Same size, one frequency changed, in the user dictionary and then in the HMM tables.
  files_.Write("user.txt", "丙丁 8\n甲乙 0\n戊丁\n");
  auto loaded = Load(true);
  ASSERT_TRUE(loaded);
  EXPECT_EQ(loaded->Frequency("丙丁"), 8);
  ExpectSameData(Load(false)->data(), loaded->data());
  files_.Write("hmm/prob_emit.py",
               "from __future__ import unicode_literals\n\nP={'B': {'丙': -1.6}, 'E': {'丁': "
               "-2.0}, 'M': {}, 'S': {}}\n");
  loaded = Load(true);
  ExpectSameData(Load(false)->data(), loaded->data());
  EXPECT_EQ(CacheFileCount(), 1u);  // replaced, not added
  // Another list of user dictionaries is another cache file.
  options_.user_dict_paths.clear();
  loaded = Load(true);
  EXPECT_EQ(loaded->Frequency("丙丁"), std::nullopt);
  EXPECT_EQ(CacheFileCount(), 2u);
}

TEST_F(DictionaryCacheTest, UnwritableLocationStillLoads) {
  ::setenv("NEARDUP_CACHE_DIR", files_.Write("plain-file", "x").c_str(), 1);
  const auto loaded = Load(true);
  ASSERT_TRUE(loaded);
  ExpectSameData(Load(false)->data(), loaded->data());
}

// jieba's own dictionary, parsed and through the cache.
TEST_F(DictionaryCacheTest, JiebaDictionaryCachedEqualsParsed) {
  auto parsed =
      Dictionary::Load({.dict_path = "", .hmm_dir = "", .user_dict_paths = {}, .use_cache = false});
  // jieba's dictionary is a prerequisite of the suite (python3-jieba, which `make test` installs):
  // without it this test fails rather than passing unchecked.
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  ASSERT_TRUE(Dictionary::Load({}).ok());
  auto warm = Dictionary::Load({});
  ASSERT_TRUE(warm.ok());
  EXPECT_EQ(CacheFileCount(), 1u);
  ExpectSameData((*parsed)->data(), (*warm)->data());
}

}  // namespace
}  // namespace neardup
