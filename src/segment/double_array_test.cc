#include "segment/double_array.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>

namespace neardup::segment_internal {
namespace {

// Random keys over a skewed alphabet (a few frequent codes, many rare ones), like words.
std::map<std::u16string, int32_t> RandomKeys(size_t count, uint32_t seed) {
  std::mt19937 rng(seed);
  std::map<std::u16string, int32_t> keys;
  std::uniform_int_distribution<int> length(1, 6);
  std::uniform_int_distribution<int> rare(1, kCodeCount - 1);
  std::uniform_int_distribution<int> frequent(kFirstHanCode, kFirstHanCode + 40);
  while (keys.size() < count) {
    std::u16string key;
    for (int i = length(rng); i > 0; --i) {
      key.push_back(static_cast<char16_t>(rng() % 4 == 0 ? rare(rng) : frequent(rng)));
    }
    keys.emplace(
        key, static_cast<int32_t>(keys.size() % 3 == 0 ? DoubleArrayTrie::kNoValue : keys.size()));
  }
  return keys;
}

DoubleArrayTrie BuildTrie(const std::map<std::u16string, int32_t>& keys) {
  std::vector<std::u16string_view> views;
  std::vector<int32_t> values;
  for (const auto& [key, value] : keys) {
    views.push_back(key);
    values.push_back(value);
  }
  return DoubleArrayTrie::Build(views, values);
}

TEST(DoubleArrayTrie, FindsEveryKeyAndPrefixAndNothingElse) {
  const size_t count = std::getenv("NEARDUP_SANITIZED") ? 3000 : 30000;
  const auto keys = RandomKeys(count, 7);
  const DoubleArrayTrie trie = BuildTrie(keys);
  std::set<std::u16string> prefixes;
  for (const auto& [key, value] : keys) {
    for (size_t i = 1; i <= key.size(); ++i) prefixes.insert(key.substr(0, i));
  }
  for (const auto& [key, value] : keys) {
    const int32_t node = trie.Find(key);
    ASSERT_NE(node, DoubleArrayTrie::kNoNode);
    EXPECT_EQ(trie.Value(node), value);
  }
  for (const auto& prefix : prefixes) {
    const int32_t node = trie.Find(prefix);
    ASSERT_NE(node, DoubleArrayTrie::kNoNode);
    if (!keys.count(prefix)) {
      EXPECT_EQ(trie.Value(node), DoubleArrayTrie::kNoValue);
    }
  }
  // Random strings: found exactly when they are a prefix of some key.
  const auto probes = RandomKeys(count, 8);
  for (const auto& [probe, ignored] : probes) {
    EXPECT_EQ(trie.Find(probe) != DoubleArrayTrie::kNoNode, prefixes.count(probe) == 1);
  }
}

TEST(DoubleArrayTrie, EveryCodeIsSafeToStepWith) {
  const DoubleArrayTrie trie =
      BuildTrie({{u"\x45\x46", 0}, {std::u16string(1, char16_t{kCodeCount - 1}), 1}});
  for (int code = 1; code < kCodeCount; ++code) {
    const int32_t child = trie.Child(DoubleArrayTrie::kRoot, static_cast<CharCode>(code));
    if (child != DoubleArrayTrie::kNoNode) {
      for (int next = 1; next < kCodeCount; next += 97)
        trie.Child(child, static_cast<CharCode>(next));
    }
  }
  EXPECT_EQ(trie.Value(trie.Find(u"\x45\x46")), 0);
  EXPECT_EQ(trie.Find(u"\x46"), DoubleArrayTrie::kNoNode);
}

TEST(DoubleArrayTrie, EmptyTrieHasOnlyTheRoot) {
  const DoubleArrayTrie trie = DoubleArrayTrie::Build({}, {});
  EXPECT_EQ(trie.Find(u"\x45"), DoubleArrayTrie::kNoNode);
  EXPECT_EQ(trie.Find(u""), DoubleArrayTrie::kRoot);
}

}  // namespace
}  // namespace neardup::segment_internal
