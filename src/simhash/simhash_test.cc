#include "neardup/simhash.h"

#include <gtest/gtest.h>
#include <xxhash.h>

#include <cctype>
#include <random>

#include "neardup/cpu.h"
#include "neardup/hamming.h"
#include "simd_levels.h"
#include "simhash/kernels.h"
#include "testutil.h"

namespace neardup {
namespace {

// The fingerprint rule written out plainly, independent of the library's kernels: per bit, the sum
// of +w / -w in double precision in feature order; bit = 1 iff the sum > 0.
uint64_t ReferenceFold(const std::vector<uint64_t>& hashes, const std::vector<double>& weights) {
  double sums[64] = {};
  for (size_t i = 0; i < hashes.size(); ++i) {
    for (int j = 0; j < 64; ++j) sums[j] += ((hashes[i] >> j) & 1) ? weights[i] : -weights[i];
  }
  uint64_t out = 0;
  for (int j = 0; j < 64; ++j) out |= uint64_t{sums[j] > 0} << j;
  return out;
}

// Features of an ASCII text by the spec (doc/fingerprint.md), computed without the library.
std::vector<std::string> ReferenceFeatures(const std::string& text, FeatureMode mode,
                                           ShingleUnit unit, size_t n) {
  std::vector<std::string> tokens;
  std::string current;
  for (char c : text) {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      current.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
    } else if (!current.empty()) {
      tokens.push_back(current);
      current.clear();
    }
  }
  if (!current.empty()) tokens.push_back(current);
  if (mode == FeatureMode::kTerms) return tokens;
  std::vector<std::string> units;
  if (unit == ShingleUnit::kWord) {
    units = tokens;
  } else {
    std::string stream = testing::Join(tokens);
    for (char c : stream) units.emplace_back(1, c);
  }
  std::vector<std::string> features;
  const std::string sep = unit == ShingleUnit::kWord ? " " : "";
  if (!units.empty() && units.size() < n) {
    features.push_back(testing::Join(units, sep));
    return features;
  }
  for (size_t i = 0; i + n <= units.size(); ++i) {
    features.push_back(testing::Join({units.begin() + static_cast<std::ptrdiff_t>(i),
                                      units.begin() + static_cast<std::ptrdiff_t>(i + n)},
                                     sep));
  }
  return features;
}

std::unique_ptr<Fingerprinter> Make(FingerprintOptions options) {
  auto created = Fingerprinter::Create(options);
  EXPECT_TRUE(created.ok()) << created.status().ToString();
  return std::move(*created);
}

uint64_t Hash(const Fingerprinter& f, std::string_view text) {
  auto result = f.Fingerprint(text);
  EXPECT_TRUE(result.ok()) << result.status().ToString();
  return result.ok() ? result->simhash : 0;
}

std::vector<FingerprintOptions> AllModes() {
  std::vector<FingerprintOptions> modes;
  FingerprintOptions terms;
  terms.mode = FeatureMode::kTerms;
  modes.push_back(terms);
  for (int n : {1, 2, 3, 5}) {
    for (ShingleUnit unit : {ShingleUnit::kWord, ShingleUnit::kChar}) {
      FingerprintOptions shingles;
      shingles.shingle_unit = unit;
      shingles.shingle_size = n;
      modes.push_back(shingles);
    }
  }
  return modes;
}

TEST(FingerprintTest, MatchesTheSpecOnAsciiText) {
  std::mt19937_64 rng(10);
  for (const auto& options : AllModes()) {
    auto f = Make(options);
    for (int round = 0; round < 30; ++round) {
      // The first text is long enough to make the shingle window compact its buffer.
      const size_t words = round == 0 ? 30000 : rng() % 40;
      std::string text =
          testing::Join(testing::RandomWords(rng, words, 50), rng() % 2 ? " " : ", ");
      if (round % 3 == 0) text = "  Mixed CASE: " + text + "!";
      auto features = ReferenceFeatures(text, options.mode, options.shingle_unit,
                                        static_cast<size_t>(options.shingle_size));
      std::vector<uint64_t> hashes;
      for (const auto& feature : features)
        hashes.push_back(XXH3_64bits(feature.data(), feature.size()));
      auto result = f->Fingerprint(text);
      ASSERT_TRUE(result.ok());
      EXPECT_EQ(result->simhash, ReferenceFold(hashes, std::vector<double>(hashes.size(), 1.0)))
          << FeatureModeName(options.mode) << " n=" << options.shingle_size << " text=" << text;
      EXPECT_EQ(result->feature_count, features.size());
      EXPECT_EQ(result->empty, features.empty());
    }
  }
}

TEST(FingerprintTest, IdenticalTextsHaveDistanceZero) {
  std::mt19937_64 rng(11);
  for (const auto& options : AllModes()) {
    auto f = Make(options);
    std::string text = testing::Join(testing::RandomWords(rng, 300));
    EXPECT_EQ(HammingDistance(Hash(*f, text), Hash(*f, std::string(text))), 0);
  }
}

// One changed word in a 2,000-word text moves few bits; unrelated texts are about 32 bits apart.
// (Each of the 64 sums is a sum of about 2,000 terms of +-1, so it is of the order of 45 away from
// zero; a changed word changes a handful of terms, which flips a bit only when its sum is near
// zero.)
TEST(FingerprintTest, OneChangedWordMovesFewBits) {
  std::mt19937_64 rng(12);
  for (const auto& options : AllModes()) {
    auto f = Make(options);
    double near_total = 0, far_total = 0;
    int near_max = 0;
    const int rounds = 20;
    for (int round = 0; round < rounds; ++round) {
      auto words = testing::RandomWords(rng, 2000);
      const uint64_t original = Hash(*f, testing::Join(words));
      words[rng() % words.size()] = "changedword";
      const int near = HammingDistance(original, Hash(*f, testing::Join(words)));
      near_total += near;
      near_max = std::max(near_max, near);
      far_total +=
          HammingDistance(original, Hash(*f, testing::Join(testing::RandomWords(rng, 2000))));
    }
    SCOPED_TRACE(std::string(FeatureModeName(options.mode)) +
                 " n=" + std::to_string(options.shingle_size));
    EXPECT_LE(near_total / rounds, 4.0);
    EXPECT_LE(near_max, 10);
    // Short character n-grams of texts over one alphabet are shared by unrelated texts too.
    if (options.shingle_unit == ShingleUnit::kWord || options.shingle_size >= 5) {
      EXPECT_GE(far_total / rounds, 24.0);
    }
  }
}

TEST(FingerprintTest, WeightScalingKeepsTheFingerprint) {
  std::mt19937_64 rng(13);
  for (int round = 0; round < 200; ++round) {
    const size_t n = 1 + rng() % 300;
    std::vector<uint64_t> hashes(n);
    std::vector<double> weights(n);
    for (size_t i = 0; i < n; ++i) {
      hashes[i] = rng();
      weights[i] = static_cast<double>(1 + rng() % 1000);
    }
    const uint64_t base = FoldFeatureHashes(hashes.data(), weights.data(), n);
    ASSERT_EQ(base, ReferenceFold(hashes, weights));
    for (double scale : {0.125, 2.0, 3.0, 1024.0}) {
      std::vector<double> scaled(weights);
      for (double& w : scaled) w *= scale;
      ASSERT_EQ(FoldFeatureHashes(hashes.data(), scaled.data(), n), base) << "scale " << scale;
    }
  }
  // In terms mode every term count doubles when the text is repeated: same fingerprint.
  FingerprintOptions terms;
  terms.mode = FeatureMode::kTerms;
  auto f = Make(terms);
  std::string text = testing::Join(testing::RandomWords(rng, 500));
  EXPECT_EQ(Hash(*f, text), Hash(*f, text + " " + text));
}

TEST(FingerprintTest, PiecesGiveTheSameFingerprint) {
  std::mt19937_64 rng(14);
  for (const auto& options : AllModes()) {
    auto f = Make(options);
    auto builder = f->NewBuilder();
    for (int round = 0; round < 40; ++round) {
      std::string text = testing::RandomUtf8ish(rng, rng() % 400, /*invalid=*/true);
      auto whole = f->Fingerprint(text);
      ASSERT_TRUE(whole.ok());
      builder->Reset();
      for (size_t at = 0; at < text.size();) {
        size_t length = std::min<size_t>(text.size() - at, 1 + rng() % 9);
        ASSERT_TRUE(builder->Update(std::string_view(text).substr(at, length)).ok());
        at += length;
      }
      auto pieces = builder->Finish();
      ASSERT_TRUE(pieces.ok());
      ASSERT_EQ(pieces->simhash, whole->simhash) << text;
      ASSERT_EQ(pieces->feature_count, whole->feature_count);
      ASSERT_EQ(pieces->replaced_utf8, whole->replaced_utf8);
    }
  }
}

TEST(FingerprintTest, EmptyInputIsDefined) {
  for (const auto& options : AllModes()) {
    auto f = Make(options);
    for (std::string_view text : {"", "   ", ",;!? \t", "\xE3\x80\x82"}) {
      auto result = f->Fingerprint(text);
      ASSERT_TRUE(result.ok());
      EXPECT_EQ(result->simhash, 0u);
      EXPECT_TRUE(result->empty);
    }
  }
}

TEST(FingerprintTest, InvalidUtf8ReplacedOrRejected) {
  FingerprintOptions options;
  auto replace = Make(options);
  auto replaced = replace->Fingerprint("good words \xFF\xFE here");
  ASSERT_TRUE(replaced.ok());
  EXPECT_EQ(replaced->replaced_utf8, 2u);
  EXPECT_EQ(replaced->simhash, Hash(*replace, "good words here"));  // U+FFFD separates like a space
  options.invalid_utf8 = InvalidUtf8::kReject;
  auto reject = Make(options);
  auto rejected = reject->Fingerprint("good words \xFF\xFE here");
  ASSERT_FALSE(rejected.ok());
  EXPECT_EQ(rejected.status().code(), Status::Code::kInvalidArgument);
  EXPECT_NE(rejected.status().message().find("byte offset 11"), std::string::npos);
}

TEST(FingerprintTest, DocumentLimit) {
  FingerprintOptions options;
  options.max_document_bytes = 10;
  auto f = Make(options);
  EXPECT_TRUE(f->Fingerprint("0123456789").ok());
  auto over = f->Fingerprint("0123456789a");
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.status().code(), Status::Code::kResourceExhausted);
  auto builder = f->NewBuilder();
  ASSERT_TRUE(builder->Update("01234").ok());
  EXPECT_FALSE(builder->Update("567890").ok());
  EXPECT_FALSE(builder->Finish().ok());  // abandoned until Reset()
  builder->Reset();
  ASSERT_TRUE(builder->Update("0123").ok());
  EXPECT_TRUE(builder->Finish().ok());
}

TEST(FingerprintTest, BadOptionsAreRejected) {
  FingerprintOptions options;
  options.shingle_size = 0;
  EXPECT_FALSE(Fingerprinter::Create(options).ok());
  options.shingle_size = 65;
  EXPECT_FALSE(Fingerprinter::Create(options).ok());
  options.shingle_size = 3;
  options.mode = static_cast<FeatureMode>(99);
  EXPECT_FALSE(Fingerprinter::Create(options).ok());
  EXPECT_FALSE(ParseFeatureMode("bogus").ok());
  EXPECT_FALSE(ParseShingleUnit("line").ok());
}

TEST(FingerprintTest, NormalisationMakesWidthAndCaseEqual) {
  auto f = Make(FingerprintOptions{});
  EXPECT_EQ(Hash(*f, "\xEF\xBC\xB4\xEF\xBD\x88\xEF\xBD\x85 Quick BROWN fox"),
            Hash(*f, "the quick brown fox"));
  FingerprintOptions raw;
  raw.normalize = false;
  auto g = Make(raw);
  EXPECT_NE(Hash(*g, "The Quick Brown Fox"), Hash(*g, "the quick brown fox"));
}

TEST(ExplainTest, NamesTheDifference) {
  FingerprintOptions terms;
  terms.mode = FeatureMode::kTerms;
  auto f = Make(terms);
  auto e = Explain(*f, "alpha beta gamma delta alpha", "alpha beta gamma epsilon alpha", 3);
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->distance, HammingDistance(e->a.simhash, e->b.simhash));
  EXPECT_EQ(e->differing_bits.size(), static_cast<size_t>(e->distance));
  ASSERT_EQ(e->only_a.size(), 1u);
  EXPECT_EQ(e->only_a[0].text, "delta");
  ASSERT_EQ(e->only_b.size(), 1u);
  EXPECT_EQ(e->only_b[0].text, "epsilon");
  EXPECT_EQ(e->shared_features, 3u);
  ASSERT_EQ(e->top_a.size(), 3u);
  EXPECT_EQ(e->top_a[0].text, "alpha");
  EXPECT_EQ(e->top_a[0].weight, 2.0);
  EXPECT_EQ(e->top_a[0].hash, HashFeature("alpha"));
}

// The inline XXH3 of 4 to 8 bytes and the hashes of all slices of a text, on every SIMD level,
// equal xxHash's own XXH3_64bits (the feature hash of doc/fingerprint.md).
TEST(KernelTest, SliceHashesAreXxh3) {
  std::mt19937_64 rng(16);
  std::string text(3000, ' ');
  for (char& c : text) c = static_cast<char>(rng() % 4 == 0 ? rng() % 256 : 'a' + rng() % 26);
  for (size_t length = 4; length <= 8; ++length) {
    for (size_t i = 0; i + length <= 64; ++i) {
      ASSERT_EQ(simhash_internal::Xxh3Of4To8(text.data() + i, length),
                XXH3_64bits(text.data() + i, length))
          << "length " << length;
    }
  }
  const SimdLevel detected = DetectedSimdLevel();
  for (SimdLevel level : testing::SimdLevelsToTest()) {
    SetSimdLevel(level);
    for (size_t length = 4; length <= 8; ++length) {
      for (size_t count : {0, 1, 7, 8, 9, 12, 16, 17, 100, 2990}) {
        for (size_t offset : {0, 3}) {
          std::vector<uint64_t> hashes(count + 1, 42);
          simhash_internal::HashSlices4To8(text.data() + offset, count, length, hashes.data());
          for (size_t j = 0; j < count; ++j) {
            ASSERT_EQ(hashes[j], XXH3_64bits(text.data() + offset + j, length))
                << SimdLevelName(level) << " length " << length << " count " << count << " j " << j;
          }
          EXPECT_EQ(hashes[count], 42u) << "wrote past the end";
        }
      }
    }
  }
  SetSimdLevel(detected);
}

// Every SIMD level folds exactly like the portable code.
TEST(KernelTest, AllLevelsFoldIdentically) {
  std::mt19937_64 rng(15);
  const SimdLevel detected = DetectedSimdLevel();
  const std::vector<SimdLevel> levels = testing::SimdLevelsToTest();
  for (size_t n : {0, 1, 7, 64, 254, 255, 256, 600, 2000}) {
    std::vector<uint64_t> hashes(n);
    std::vector<double> weights(n);
    for (size_t i = 0; i < n; ++i) {
      hashes[i] = rng();
      weights[i] = static_cast<double>(rng() % 100000) / 997.0;
    }
    SetSimdLevel(SimdLevel::kPortable);
    uint64_t ones_ref[64] = {};
    double sums_ref[64] = {};
    simhash_internal::FoldUnit(hashes.data(), n, ones_ref);
    simhash_internal::FoldWeighted(hashes.data(), weights.data(), n, sums_ref);
    for (SimdLevel level : levels) {
      if (level == SimdLevel::kPortable) continue;
      SetSimdLevel(level);
      uint64_t ones[64] = {};
      double sums[64] = {};
      simhash_internal::FoldUnit(hashes.data(), n, ones);
      simhash_internal::FoldWeighted(hashes.data(), weights.data(), n, sums);
      for (int j = 0; j < 64; ++j) {
        ASSERT_EQ(ones[j], ones_ref[j]) << SimdLevelName(level) << " n=" << n << " bit " << j;
        ASSERT_EQ(sums[j], sums_ref[j]) << SimdLevelName(level) << " n=" << n << " bit " << j;
      }
    }
  }
  SetSimdLevel(detected);
}

}  // namespace
}  // namespace neardup
