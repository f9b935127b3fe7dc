// The sketch against exact Jaccard on random sets, densification, band collision rates against the
// formula, and bad options and sizes.
#include "neardup/sketch.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "neardup/cpu.h"
#include "simd_levels.h"
#include "sketch/kernels.h"
#include "sketch/sketch_testutil.h"
#include "testutil.h"

namespace neardup {
namespace {

struct Computed {
  std::vector<uint8_t> sketch;
  std::vector<uint32_t> keys;
  std::vector<uint64_t> bins;  // ReferenceSketch only: v_i of every bin
};

Computed Compute(const Sketcher& sketcher, const std::vector<uint64_t>& hashes) {
  Computed c{std::vector<uint8_t>(sketcher.sketch_bytes()),
             std::vector<uint32_t>(static_cast<size_t>(sketcher.options().bands)),
             {}};
  Status status = sketcher.Compute(hashes, c.sketch, c.keys);
  EXPECT_TRUE(status.ok()) << status.ToString();
  return c;
}

double Estimate(const Sketcher& sketcher, const Computed& a, const Computed& b) {
  auto estimate = sketcher.EstimateJaccard(a.sketch, b.sketch);
  EXPECT_TRUE(estimate.ok());
  return estimate.ok() ? *estimate : -2;
}

std::unique_ptr<Sketcher> Make(int bins, int bits, int bands = 20, int rows = 6) {
  auto sketcher = Sketcher::Create({bins, bits, bands, rows});
  EXPECT_TRUE(sketcher.ok()) << sketcher.status().ToString();
  return std::move(*sketcher);
}

// Standard deviation of the estimate when each of `bins` bins agrees independently with probability
// J + (1 - J) 2^-b (binomial), scaled by the estimator.
double ExpectedError(double jaccard, int bins, int bits) {
  const double chance = std::ldexp(1.0, -bits);
  const double p = jaccard + (1 - jaccard) * chance;
  return std::sqrt(p * (1 - p) / bins) / (1 - chance);
}

TEST(SketchTest, EstimatesStayWithinTheExpectedErrorOfExactJaccard) {
  std::mt19937_64 rng(1);
  for (auto [bins, bits] : {std::pair{1024, 1}, {512, 2}, {256, 4}, {64, 8}, {128, 32}}) {
    auto sketcher = Make(bins, bits, 8, 4);
    for (auto [shared, only] : {std::pair<size_t, size_t>{3000, 3000},
                                {4000, 1000},
                                {8000, 1000},
                                {9500, 250},
                                {200, 3000}}) {
      double sum = 0;
      const int trials = 30;
      for (int t = 0; t < trials; ++t) {
        auto sets = testing::MakeSetPair(rng, shared, only);
        ASSERT_DOUBLE_EQ(testing::ExactJaccard(sets.a, sets.b), sets.jaccard);
        const double estimate =
            Estimate(*sketcher, Compute(*sketcher, sets.a), Compute(*sketcher, sets.b));
        const double sigma = ExpectedError(sets.jaccard, bins, bits);
        EXPECT_LE(std::abs(estimate - sets.jaccard), 4.5 * sigma + 1e-9)
            << bins << "x" << bits << " J=" << sets.jaccard;
        sum += estimate;
      }
      // Unbiased: the mean of the trials is within 4 standard errors of the mean.
      const double sigma =
          ExpectedError(static_cast<double>(shared) / (shared + 2 * only), bins, bits);
      EXPECT_NEAR(sum / trials, static_cast<double>(shared) / (shared + 2 * only),
                  4 * sigma / std::sqrt(trials) + 1e-9)
          << bins << "x" << bits;
    }
  }
}

// The definition of include/neardup/sketch.h written out plainly (no shortcuts of the library).
uint64_t PlainRemix(uint64_t x) {
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

void Put32(uint32_t v, std::vector<uint8_t>* out, size_t at) {  // little-endian
  for (int k = 0; k < 4; ++k) (*out)[at + k] = static_cast<uint8_t>(v >> (8 * k));
}

Computed ReferenceSketch(const std::vector<uint64_t>& hashes, const SketchOptions& o) {
  const int log_bins = std::countr_zero(static_cast<unsigned>(o.bins));
  const size_t payload = static_cast<size_t>(o.bins * o.bits_per_bin / 8);
  Computed c{std::vector<uint8_t>(4 + payload, 0), std::vector<uint32_t>(o.bands, 0), {}};
  if (hashes.empty()) return c;
  Put32(static_cast<uint32_t>(hashes.size()), &c.sketch, 0);
  std::vector<uint64_t> minimum(o.bins, UINT64_MAX);
  std::vector<uint32_t> tops;
  for (uint64_t h : hashes) {
    const auto t = static_cast<uint32_t>(h >> 41);  // the top 23 bits
    tops.push_back(t);
    const auto bin = static_cast<size_t>(t >> (23 - log_bins));
    minimum[bin] = std::min(minimum[bin], PlainRemix(t));
  }
  std::vector<uint64_t> v(o.bins);
  for (int b = 0; b < o.bins; ++b) {
    int s = 0;
    while (minimum[(b + s) % o.bins] == UINT64_MAX) ++s;
    v[b] = PlainRemix(minimum[(b + s) % o.bins] + static_cast<uint64_t>(s));
  }
  if (hashes.size() <= payload * 8 / 23) {
    std::sort(tops.begin(), tops.end());
    for (size_t i = 0; i < tops.size(); ++i) {
      for (int k = 0; k < 23; ++k) {
        const size_t bit = i * 23 + k;
        if ((tops[i] >> k) & 1) c.sketch[4 + bit / 8] |= static_cast<uint8_t>(1u << (bit % 8));
      }
    }
  } else {
    for (int b = 0; b < o.bins; ++b) {
      for (int i = 0; i < o.bits_per_bin; ++i) {
        const int bit = b * o.bits_per_bin + i;
        if ((v[b] >> i) & 1) c.sketch[4 + bit / 8] |= static_cast<uint8_t>(1u << (bit % 8));
      }
    }
  }
  c.bins = v;
  const int stride = o.bins / (o.bands * o.rows);
  for (int j = 0; j < o.bands; ++j) {
    uint64_t h = 0x9E3779B97F4A7C15ULL * static_cast<uint64_t>(j + 1);
    for (int i = 0; i < o.rows; ++i) h = PlainRemix(h ^ v[(i * o.bands + j) * stride]);
    c.keys[j] = static_cast<uint32_t>(h >> 32);
  }
  return c;
}

// On every SIMD level the CPU has (the densification, remix and bin comparison have vector
// versions). Section 9, step 6, of the reference sketches of two sets of distinct hashes.
double ReferenceEstimate(const std::vector<uint64_t>& a, const Computed& ra,
                         const std::vector<uint64_t>& b, const Computed& rb,
                         const SketchOptions& o) {
  const size_t exact = static_cast<size_t>(o.bins * o.bits_per_bin) / 23;
  if (a.size() <= exact && b.size() <= exact) {
    std::vector<uint64_t> ta, tb, both;
    for (uint64_t h : a) ta.push_back(h >> 41);
    for (uint64_t h : b) tb.push_back(h >> 41);
    std::sort(ta.begin(), ta.end());
    std::sort(tb.begin(), tb.end());
    std::set_intersection(ta.begin(), ta.end(), tb.begin(), tb.end(), std::back_inserter(both));
    return static_cast<double>(both.size()) /
           static_cast<double>(ta.size() + tb.size() - both.size());
  }
  const uint64_t mask = o.bits_per_bin == 64 ? ~uint64_t{0} : (uint64_t{1} << o.bits_per_bin) - 1;
  int matches = 0;
  for (int i = 0; i < o.bins; ++i) matches += (ra.bins[i] & mask) == (rb.bins[i] & mask);
  const double chance = std::pow(2.0, -o.bits_per_bin);
  const double bound = static_cast<double>(std::min(a.size(), b.size())) /
                       static_cast<double>(std::max(a.size(), b.size()));
  return std::min(bound, (matches / static_cast<double>(o.bins) - chance) / (1 - chance));
}

// The differing bits of two streams, on every SIMD level, against a bit-by-bit count: lengths
// around the AVX-512 step of 64 bytes, and the sketch payload (128 bytes at an offset of 4).
TEST(SketchKernelsTest, DifferingBitsOnEveryLevel) {
  std::mt19937_64 rng(5);
  std::vector<uint8_t> a(300), b(300);
  for (SimdLevel level : testing::SimdLevelsToTest()) {
    SetSimdLevel(level);
    const sketch_internal::DifferingBitsFn differing = sketch_internal::ChooseDifferingBits();
    for (size_t bytes : {0, 8, 56, 64, 72, 128, 136, 256}) {
      for (int trial = 0; trial < 20; ++trial) {
        for (size_t i = 0; i < a.size(); ++i) {
          a[i] = static_cast<uint8_t>(rng());
          // From identical to unrelated bytes.
          b[i] = trial % 4 == 0 ? a[i] : static_cast<uint8_t>(a[i] ^ (rng() & rng() & rng()));
        }
        const size_t offset = trial % 5;
        uint32_t want = 0;
        for (size_t i = 0; i < bytes * 8; ++i) {
          want += ((a[offset + i / 8] ^ b[offset + i / 8]) >> (i % 8)) & 1;
        }
        EXPECT_EQ(differing(a.data() + offset, b.data() + offset, bytes), want)
            << SimdLevelName(level) << " bytes " << bytes << " offset " << offset;
      }
    }
  }
  SetSimdLevel(DetectedSimdLevel());
}

// One stream against many stored `stride` bytes apart, picked by index, on every SIMD level: the
// sketch's payload (128 bytes at an offset of 4, stride 132) and other lengths, against a
// bit-by-bit count.
TEST(SketchKernelsTest, DifferingBitsManyOnEveryLevel) {
  std::mt19937_64 rng(6);
  for (SimdLevel level : testing::SimdLevelsToTest()) {
    SetSimdLevel(level);
    const sketch_internal::DifferingBitsManyFn many = sketch_internal::ChooseDifferingBitsMany();
    for (const auto& [bytes, stride] : std::vector<std::pair<size_t, size_t>>{
             {128, 132}, {128, 128}, {0, 8}, {64, 72}, {136, 140}, {256, 260}}) {
      const size_t streams = 40;
      std::vector<uint8_t> a(stride), store(streams * stride);
      for (uint8_t& byte : a) byte = static_cast<uint8_t>(rng());
      for (size_t s = 0; s < streams; ++s) {
        for (size_t i = 0; i < stride; ++i) {
          // From identical to unrelated bytes.
          store[s * stride + i] =
              s % 4 == 0 ? a[i] : static_cast<uint8_t>(a[i] ^ (rng() & rng() & rng()));
        }
      }
      std::vector<uint32_t> index;
      for (size_t k = 0; k < 3 * streams; ++k)
        index.push_back(static_cast<uint32_t>(rng() % streams));
      const size_t offset = stride - bytes;
      std::vector<uint32_t> out(index.size() + 1, 12345);
      many(a.data() + offset, store.data() + offset, stride, index.data(), index.size(), bytes,
           out.data());
      for (size_t k = 0; k < index.size(); ++k) {
        uint32_t want = 0;
        for (size_t i = 0; i < bytes * 8; ++i) {
          want += ((a[offset + i / 8] ^ store[index[k] * stride + offset + i / 8]) >> (i % 8)) & 1;
        }
        ASSERT_EQ(out[k], want) << SimdLevelName(level) << " bytes " << bytes << " stride "
                                << stride << " stream " << index[k];
      }
      EXPECT_EQ(out[index.size()], 12345u);  // nothing written past count
    }
  }
  SetSimdLevel(DetectedSimdLevel());
}

TEST(SketchTest, MatchesTheDefinition) {
  for (SimdLevel level : testing::SimdLevelsToTest()) {
    SetSimdLevel(level);
    std::mt19937_64 rng(9);
    for (SketchOptions o :
         {SketchOptions{}, SketchOptions{64, 8, 8, 2}, SketchOptions{512, 2, 12, 5},
          SketchOptions{4096, 32, 64, 3}, SketchOptions{4096, 1, 20, 6}}) {
      auto sketcher = Make(o.bins, o.bits_per_bin, o.bands, o.rows);
      Computed previous, previous_reference;
      std::vector<uint64_t> previous_hashes;
      for (size_t n : {1, 3, 16, 17, 32, 33, 44, 45, 46, 60, 250, 2000}) {
        std::vector<uint64_t> hashes(n);
        for (auto& h : hashes) h = rng();
        // Half of the features of the previous set, so that estimates are not all near 0.
        for (size_t i = 0; i < std::min(n, previous_hashes.size()) / 2; ++i)
          hashes[i] = previous_hashes[i];
        const Computed want = ReferenceSketch(hashes, o), got = Compute(*sketcher, hashes);
        const std::string where = std::to_string(o.bins) + "x" + std::to_string(o.bits_per_bin) +
                                  " n=" + std::to_string(n) + " " +
                                  std::string(SimdLevelName(level));
        EXPECT_EQ(got.sketch, want.sketch) << where;
        EXPECT_EQ(got.keys, want.keys) << where;
        if (!previous.sketch.empty()) {
          EXPECT_NEAR(Estimate(*sketcher, got, previous),
                      ReferenceEstimate(hashes, want, previous_hashes, previous_reference, o),
                      1e-12)
              << where;
          // The early-stopping test agrees exactly at or above the threshold and stays below it.
          const double estimate = Estimate(*sketcher, got, previous);
          for (double threshold : {-1.0, 0.0, 0.2, 0.45, 0.5, 0.8, 1.0}) {
            const double quick =
                sketcher->EstimateIfAtLeast(got.sketch.data(), previous.sketch.data(), threshold);
            if (estimate >= threshold) {
              EXPECT_EQ(quick, estimate) << where << " t=" << threshold;
            } else {
              EXPECT_LT(quick, threshold) << where << " t=" << threshold;
            }
          }
        }
        previous = got;
        previous_reference = want;
        previous_hashes = hashes;
      }
    }
  }
  SetSimdLevel(DetectedSimdLevel());
}

TEST(SketchTest, OrderDoesNotChangeTheSketch) {
  std::mt19937_64 rng(2);
  auto sketcher = Make(1024, 1);
  for (size_t n : {20, 500}) {
    auto sets = testing::MakeSetPair(rng, n, 0);
    auto shuffled = sets.a;
    std::shuffle(shuffled.begin(), shuffled.end(), rng);
    const Computed x = Compute(*sketcher, sets.a), y = Compute(*sketcher, shuffled);
    EXPECT_EQ(x.sketch, y.sketch);
    EXPECT_EQ(x.keys, y.keys);
    EXPECT_DOUBLE_EQ(Estimate(*sketcher, x, y), 1.0);
  }
}

TEST(SketchTest, SmallSetsAreExact) {
  // Up to 44 features (1024 payload bits / 23) the sketch holds their hashes' top 23 bits: the
  // estimate is the exact Jaccard similarity (but for a chance collision of 23-bit values, about
  // 44 * 44 / 2^23 per pair).
  std::mt19937_64 rng(6);
  auto sketcher = Make(1024, 1);
  EXPECT_EQ(sketcher->exact_capacity(), 44u);
  for (int t = 0; t < 300; ++t) {
    const size_t shared = rng() % 30, only = rng() % 8;
    if (shared + only == 0) continue;
    auto sets = testing::MakeSetPair(rng, shared, only);
    sets.b.resize(sets.b.size() - rng() % (only + 1));  // sizes may differ
    EXPECT_DOUBLE_EQ(Estimate(*sketcher, Compute(*sketcher, sets.a), Compute(*sketcher, sets.b)),
                     testing::ExactJaccard(sets.a, sets.b));
  }
}

TEST(SketchTest, EstimatesNeverExceedTheSizeBound) {
  // J(A, B) <= |A| / |B| for |A| <= |B|: a subset of 100 of 130 hashes has J = 100 / 130 exactly,
  // and a bin estimate (which can come out above it) is capped there. Also across the two forms.
  std::mt19937_64 rng(7);
  auto sketcher = Make(1024, 1);
  for (auto [small, large] : {std::pair<size_t, size_t>{100, 130}, {30, 36}, {44, 45}, {40, 50}}) {
    for (int t = 0; t < 50; ++t) {
      std::vector<uint64_t> b(large);
      for (auto& h : b) h = rng();
      const std::vector<uint64_t> a(b.begin(), b.begin() + static_cast<std::ptrdiff_t>(small));
      const double bound = static_cast<double>(small) / static_cast<double>(large);
      const double estimate = Estimate(*sketcher, Compute(*sketcher, a), Compute(*sketcher, b));
      EXPECT_LE(estimate, bound + 1e-12);
      // Small sets fill few bins: the error is that of `large` samples rather than of 1024.
      const int samples = static_cast<int>(std::min<size_t>(1024, large));
      EXPECT_GE(estimate, bound - 6 * ExpectedError(bound, samples, 1)) << small << " of " << large;
    }
  }
}

TEST(SketchTest, DensificationFillsEveryBinOfSmallSets) {
  // 50 hashes in 1024 bins (past the exact form's 44 at 1 bit; 400 past its 356 at 8 bits): most
  // bins are empty before densification. Without it, two disjoint small sets would agree on every
  // empty bin.
  std::mt19937_64 rng(3);
  for (int bits : {1, 8}) {
    auto sketcher = Make(1024, bits);
    double disjoint_sum = 0, overlap_sum = 0;
    const int trials = 200;
    for (int t = 0; t < trials; ++t) {
      const size_t scale = bits == 1 ? 1 : 8;  // sets just past the exact form
      auto disjoint = testing::MakeSetPair(rng, 0, 50 * scale);
      disjoint_sum +=
          Estimate(*sketcher, Compute(*sketcher, disjoint.a), Compute(*sketcher, disjoint.b));
      auto overlap = testing::MakeSetPair(rng, 48 * scale, 8 * scale);  // J = 0.75
      overlap_sum +=
          Estimate(*sketcher, Compute(*sketcher, overlap.a), Compute(*sketcher, overlap.b));
    }
    EXPECT_NEAR(disjoint_sum / trials, 0.0, 0.03) << bits;
    EXPECT_NEAR(overlap_sum / trials, 0.75, 0.04) << bits;
    // 400 hashes at 8 bits (past the 356 of the exact form): the stored values of copied bins vary
    // from bin to bin (a sketch of few distinct bytes would mean the step was not mixed in).
    if (bits == 8) {
      std::vector<uint64_t> few(400);
      for (auto& h : few) h = rng();
      std::vector<uint8_t> values = Compute(*sketcher, few).sketch;
      std::sort(values.begin(), values.end());
      const auto distinct = std::unique(values.begin(), values.end()) - values.begin();
      EXPECT_GT(distinct, 230);  // 1024 random bytes take about 251 distinct values
    }
  }
}

TEST(SketchTest, EmptySetGivesZeros) {
  auto sketcher = Make(1024, 1);
  const Computed empty = Compute(*sketcher, {});
  EXPECT_EQ(empty.sketch, std::vector<uint8_t>(132, 0));
  EXPECT_EQ(empty.keys, std::vector<uint32_t>(20, 0));
}

TEST(SketchTest, BandCollisionRateFollowsTheFormula) {
  std::mt19937_64 rng(4);
  const int bands = 20, rows = 6;
  auto sketcher = Make(1024, 1, bands, rows);
  for (auto [shared, only] : {std::pair<size_t, size_t>{4000, 500}, {2000, 1000}}) {
    const double jaccard = static_cast<double>(shared) / (shared + 2 * only);
    const double per_band = std::pow(jaccard, rows);
    size_t agreeing = 0, total = 0;
    const int trials = testing::Sanitized() ? 40 : 150;
    for (int t = 0; t < trials; ++t) {
      auto sets = testing::MakeSetPair(rng, shared, only);
      const Computed a = Compute(*sketcher, sets.a), b = Compute(*sketcher, sets.b);
      for (int j = 0; j < bands; ++j) agreeing += a.keys[j] == b.keys[j];
      total += bands;
    }
    const double sigma = std::sqrt(per_band * (1 - per_band) / static_cast<double>(total));
    EXPECT_NEAR(static_cast<double>(agreeing) / static_cast<double>(total), per_band,
                5 * sigma + 0.01)
        << "J=" << jaccard;
  }
}

TEST(SketchTest, ChooseRowsFollowsTheMath) {
  // 20 bands at J = 0.8: 6 rows give 1 - (1 - 0.8^6)^20 = 0.9977, 7 rows 0.9910 (< 0.995).
  EXPECT_NEAR(BandCollisionProbability(0.8, 20, 6), 0.9977, 1e-4);
  EXPECT_NEAR(BandCollisionProbability(0.8, 20, 7), 0.9910, 1e-4);
  auto rows = ChooseRows(0.8, 20, 0.995);
  ASSERT_TRUE(rows.ok());
  EXPECT_EQ(*rows, 6);
  for (double t : {0.5, 0.7, 0.9, 0.95}) {
    auto r = ChooseRows(t, 20, 0.995);
    ASSERT_TRUE(r.ok());
    EXPECT_GE(BandCollisionProbability(t, 20, *r), 0.995) << t;
    EXPECT_LT(BandCollisionProbability(t, 20, *r + 1), 0.995) << t;
  }
  EXPECT_FALSE(ChooseRows(0, 20).ok());
  EXPECT_FALSE(ChooseRows(1.5, 20).ok());
  EXPECT_FALSE(ChooseRows(0.8, 0).ok());
  EXPECT_FALSE(ChooseRows(0.8, 65).ok());
  EXPECT_FALSE(ChooseRows(0.8, 20, 1.0).ok());
}

TEST(SketchTest, BadOptionsAndSizesAreRejected) {
  for (SketchOptions bad :
       {SketchOptions{100, 1, 20, 6}, SketchOptions{32, 1, 4, 2}, SketchOptions{8192, 1, 20, 6},
        SketchOptions{1024, 3, 20, 6}, SketchOptions{1024, 0, 20, 6},
        SketchOptions{1024, 64, 20, 6}, SketchOptions{1024, 1, 0, 6}, SketchOptions{1024, 1, 65, 6},
        SketchOptions{1024, 1, 20, 0}, SketchOptions{64, 1, 20, 6}}) {
    auto sketcher = Sketcher::Create(bad);
    EXPECT_FALSE(sketcher.ok()) << bad.bins << "x" << bad.bits_per_bin << " " << bad.bands << "x"
                                << bad.rows;
    if (!sketcher.ok()) {
      EXPECT_EQ(sketcher.status().code(), Status::Code::kInvalidArgument);
    }
  }
  auto sketcher = Make(1024, 1);
  EXPECT_EQ(sketcher->sketch_bytes(), 132u);
  std::vector<uint64_t> hashes = {1, 2, 3};
  std::vector<uint8_t> small(131), right(132);
  std::vector<uint32_t> keys(20), few(19);
  EXPECT_EQ(sketcher->Compute(hashes, small, keys).code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(sketcher->Compute(hashes, right, few).code(), Status::Code::kInvalidArgument);
  EXPECT_TRUE(sketcher->Compute(hashes, right, keys).ok());
  EXPECT_FALSE(sketcher->EstimateJaccard(right, small).ok());
  EXPECT_FALSE(sketcher->EstimateJaccard(small, right).ok());
}

}  // namespace
}  // namespace neardup
