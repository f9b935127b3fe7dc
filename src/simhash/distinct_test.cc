// Distinct-feature weighting and Traditional-to-Simplified folding in the fingerprint pipeline.
#include <gtest/gtest.h>

#include <set>

#include "neardup/simhash.h"
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
