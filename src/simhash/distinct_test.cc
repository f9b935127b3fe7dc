// Distinct-feature weighting and Traditional-to-Simplified folding in the fingerprint pipeline.
#include <gtest/gtest.h>

#include <set>

#include "neardup/cpu.h"
#include "neardup/simhash.h"
#include "neardup/text.h"
#include "simd_levels.h"
#include "simhash/distinct_set.h"
#include "testutil.h"

namespace neardup {
namespace {

std::unique_ptr<Fingerprinter> Make(FingerprintOptions options) {
  auto f = Fingerprinter::Create(options);
  EXPECT_TRUE(f.ok()) << f.status().ToString();
  return std::move(*f);
}

FingerprintOptions Words(int n, FeatureWeighting weighting) {
  FingerprintOptions o;
  o.shingle_size = n;
  o.weighting = weighting;
  return o;
}

// The fold of the spec with unit weights, written out plainly.
uint64_t UnitFold(const std::vector<uint64_t>& hashes) {
  int64_t sums[64] = {};
  for (uint64_t h : hashes) {
    for (int j = 0; j < 64; ++j) sums[j] += ((h >> j) & 1) ? 1 : -1;
  }
  uint64_t out = 0;
  for (int j = 0; j < 64; ++j) out |= uint64_t{sums[j] > 0} << j;
  return out;
}

TEST(DistinctTest, EachDistinctFeatureFoldsOnce) {
  auto f = Make(Words(1, FeatureWeighting::kDistinct));
  auto builder = f->NewBuilder();
  ASSERT_TRUE(builder->Update("beta alpha beta beta gamma alpha").ok());
  auto result = builder->Finish();
  ASSERT_TRUE(result.ok());
  const std::vector<uint64_t> want = {HashFeature("beta"), HashFeature("alpha"),
                                      HashFeature("gamma")};
  const auto got = builder->DistinctFeatureHashes();
  EXPECT_EQ(std::vector<uint64_t>(got.begin(), got.end()), want);  // first-occurrence order
  EXPECT_EQ(result->simhash, UnitFold(want));
  EXPECT_EQ(result->feature_count, 3u);
  // A repeated text is the same set.
  EXPECT_EQ(f->Fingerprint("beta alpha gamma gamma gamma")->simhash, result->simhash);
}

TEST(DistinctTest, OccurrenceWeightingKeepsNoHashes) {
  auto f = Make(Words(1, FeatureWeighting::kOccurrences));
  auto builder = f->NewBuilder();
  ASSERT_TRUE(builder->Update("beta alpha beta").ok());
  ASSERT_TRUE(builder->Finish().ok());
  EXPECT_TRUE(builder->DistinctFeatureHashes().empty());
}

TEST(DistinctTest, LongDocumentsThenShortOnes) {
  // 200k distinct words grow the set many times; the next document starts from an empty set.
  auto f = Make(Words(1, FeatureWeighting::kDistinct));
  auto builder = f->NewBuilder();
  std::mt19937_64 rng(5);
  const auto words = testing::RandomWords(rng, testing::Sanitized() ? 30000 : 200000, 1000000);
  std::set<uint64_t> want;
  for (const auto& w : words) want.insert(HashFeature(w));
  ASSERT_TRUE(builder->Update(testing::Join(words)).ok());
  auto long_result = builder->Finish();
  ASSERT_TRUE(long_result.ok());
  auto got = builder->DistinctFeatureHashes();
  EXPECT_EQ(std::set<uint64_t>(got.begin(), got.end()), want);
  EXPECT_EQ(got.size(), want.size());
  builder->Reset();
  ASSERT_TRUE(builder->Update("one two one").ok());
  ASSERT_TRUE(builder->Finish().ok());
  EXPECT_EQ(builder->DistinctFeatureHashes().size(), 2u);
}

TEST(DistinctTest, PiecesGiveTheSameSet) {
  FingerprintOptions o = Words(3, FeatureWeighting::kDistinct);
  o.shingle_unit = ShingleUnit::kChar;
  o.fold_traditional = true;
  auto f = Make(o);
  const std::string text = "這個國家的學生說時間來了，這個國家 and some English words.";
  auto whole = f->NewBuilder();
  ASSERT_TRUE(whole->Update(text).ok());
  auto a = whole->Finish();
  auto pieces = f->NewBuilder();
  for (char c : text) ASSERT_TRUE(pieces->Update(std::string_view(&c, 1)).ok());
  auto b = pieces->Finish();
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->simhash, b->simhash);
  auto x = whole->DistinctFeatureHashes(), y = pieces->DistinctFeatureHashes();
  EXPECT_EQ(std::vector<uint64_t>(x.begin(), x.end()), std::vector<uint64_t>(y.begin(), y.end()));
}

// The distinct character shingles of a text by the definition, from the public text functions:
// the code points of the tokens of the normalised text, one space between tokens, every n in a row
// (the whole stream when it is shorter), hashed, each distinct hash once in order of first
// occurrence.
std::vector<uint64_t> ReferenceCharShingles(std::string_view text, size_t n) {
  auto normalized = NormalizeText(text);
  EXPECT_TRUE(normalized.ok());
  std::string stream;
  for (const Token& token : Tokenize(*normalized)) {
    if (!stream.empty()) stream += ' ';
    stream += token.text;
  }
  std::vector<size_t> starts;
  for (size_t i = 0; i < stream.size(); ++i) {
    if ((static_cast<unsigned char>(stream[i]) & 0xC0) != 0x80) starts.push_back(i);
  }
  starts.push_back(stream.size());
  const size_t units = starts.size() - 1;
  std::vector<uint64_t> hashes;
  std::set<uint64_t> seen;
  auto add = [&](size_t first, size_t end) {
    const uint64_t hash = HashFeature(stream.substr(starts[first], starts[end] - starts[first]));
    if (seen.insert(hash).second) hashes.push_back(hash);
  };
  if (units > 0 && units < n) add(0, units);
  for (size_t i = 0; i + n <= units; ++i) add(i, i + n);
  return hashes;
}

// Character shingles are hashed from the joined token text in batches (with an inline hash for 4
// to 8 bytes and a SIMD one for ASCII text): the same features as the definition on every SIMD
// level, for any text, length and cut into pieces, and when the builder records the features.
TEST(DistinctTest, CharacterShinglesMatchTheDefinition) {
  std::mt19937_64 rng(12);
  std::vector<std::string> texts = {"", "a", "ab c", "abcd", "Hello, World!", "中文 text"};
  for (size_t pieces : {3, 10, 40, 200, 3000}) {
    texts.push_back(testing::RandomUtf8ish(rng, pieces, /*invalid=*/false));
  }
  // Long ASCII and mixed texts: several batches of the shingle buffer.
  texts.push_back(testing::Join(testing::RandomWords(rng, 8000, 300)));
  texts.push_back(testing::Join(testing::RandomWords(rng, 3000, 300)) + " 中文字符 " +
                  testing::Join(testing::RandomWords(rng, 3000, 300)));
  for (SimdLevel level : testing::SimdLevelsToTest()) {
    SetSimdLevel(level);
    for (int n : {1, 3, 4, 5, 8, 9}) {
      FingerprintOptions o = Words(n, FeatureWeighting::kDistinct);
      o.shingle_unit = ShingleUnit::kChar;
      auto f = Make(o);
      auto plain = f->NewBuilder();
      auto recording = f->NewBuilder(/*record_features=*/true);
      auto pieces = f->NewBuilder();
      for (const std::string& text : texts) {
        const std::string where = std::string(SimdLevelName(level)) + " n=" + std::to_string(n) +
                                  " text of " + std::to_string(text.size()) + " bytes";
        const std::vector<uint64_t> want = ReferenceCharShingles(text, static_cast<size_t>(n));
        plain->Reset();
        ASSERT_TRUE(plain->Update(text).ok());
        auto a = plain->Finish();
        ASSERT_TRUE(a.ok());
        auto got = plain->DistinctFeatureHashes();
        EXPECT_EQ(std::vector<uint64_t>(got.begin(), got.end()), want) << where;
        EXPECT_EQ(a->simhash, UnitFold(want)) << where;
        EXPECT_EQ(a->feature_count, want.size()) << where;
        recording->Reset();
        ASSERT_TRUE(recording->Update(text).ok());
        auto b = recording->Finish();
        ASSERT_TRUE(b.ok());
        got = recording->DistinctFeatureHashes();
        EXPECT_EQ(std::vector<uint64_t>(got.begin(), got.end()), want) << where << " recording";
        EXPECT_EQ(recording->Features(SIZE_MAX).size(), want.size()) << where << " recording";
        pieces->Reset();
        for (size_t i = 0; i < text.size();) {
          const size_t size = std::min<size_t>(text.size() - i, 1 + rng() % 5000);
          ASSERT_TRUE(pieces->Update(std::string_view(text).substr(i, size)).ok());
          i += size;
        }
        ASSERT_TRUE(pieces->Finish().ok());
        got = pieces->DistinctFeatureHashes();
        EXPECT_EQ(std::vector<uint64_t>(got.begin(), got.end()), want) << where << " in pieces";
      }
    }
  }
  SetSimdLevel(DetectedSimdLevel());
}

// The set against std::set: repeats within and across batches, the hash 0, growth, and documents
// of every size one after the other (the table given back after a long one).
TEST(DistinctTest, HashSetKeepsFirstOccurrences) {
  std::mt19937_64 rng(13);
  simhash_internal::DistinctHashSet set;
  for (size_t size : {0, 1, 5, 300, 700, 5000, 60000, 10, 3000, 2}) {
    // Values from a range about as large as the document, so that many repeat.
    std::vector<uint64_t> values(size);
    for (auto& v : values) v = rng() % 4 == 0 ? 0 : (rng() % (size + 1)) * 0x9E3779B97F4A7C15ULL;
    std::vector<uint64_t> want;
    std::set<uint64_t> seen;
    for (uint64_t v : values) {
      if (seen.insert(v).second) want.push_back(v);
    }
    set.Clear();
    // In batches of random sizes, with single insertions between them.
    std::set<uint64_t> inserted;
    for (size_t i = 0; i < values.size();) {
      if (rng() % 3 == 0) {
        const bool added = inserted.insert(values[i]).second;
        EXPECT_EQ(set.Insert(values[i]), added) << "size " << size << " at " << i;
        ++i;
        continue;
      }
      const size_t count = std::min<size_t>(values.size() - i, rng() % 3000);
      set.InsertAll(std::span<const uint64_t>(values).subspan(i, count));
      inserted.insert(values.begin() + static_cast<std::ptrdiff_t>(i),
                      values.begin() + static_cast<std::ptrdiff_t>(i + count));
      i += count;
    }
    auto got = set.hashes();
    EXPECT_EQ(std::vector<uint64_t>(got.begin(), got.end()), want) << "size " << size;
  }
}

TEST(DistinctTest, TraditionalFoldsToSimplified) {
  FingerprintOptions o;
  o.shingle_unit = ShingleUnit::kChar;
  o.shingle_size = 2;
  const std::string traditional = "這個國家的學生說時間來了",
                    simplified = "这个国家的学生说时间来了";
  auto plain = Make(o);
  EXPECT_NE(plain->Fingerprint(traditional)->simhash, plain->Fingerprint(simplified)->simhash);
  o.fold_traditional = true;
  auto folded = Make(o);
  EXPECT_EQ(folded->Fingerprint(traditional)->simhash, folded->Fingerprint(simplified)->simhash);
  // Folding leaves other text alone.
  EXPECT_EQ(folded->Fingerprint("plain English text")->simhash,
            plain->Fingerprint("plain English text")->simhash);
}

TEST(DistinctTest, BadOptions) {
  FingerprintOptions o;
  o.fold_traditional = true;
  o.folding_table = "/nonexistent/TSCharacters.ocd2";
  auto missing = Fingerprinter::Create(o);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), Status::Code::kNotFound);
  o = {};
  o.weighting = static_cast<FeatureWeighting>(7);
  EXPECT_EQ(Fingerprinter::Create(o).status().code(), Status::Code::kInvalidArgument);
  EXPECT_FALSE(ParseFeatureWeighting("sometimes").ok());
  EXPECT_EQ(*ParseFeatureWeighting("distinct"), FeatureWeighting::kDistinct);
}

}  // namespace
}  // namespace neardup
