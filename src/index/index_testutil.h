// Shared helpers of the index tests: data generators (uniform and skewed) and the naive reference.
#ifndef NEARDUP_INDEX_INDEX_TESTUTIL_H_
#define NEARDUP_INDEX_INDEX_TESTUTIL_H_

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "neardup/index.h"
#include "testutil.h"

namespace neardup::testing {

// Flips `bits` distinct random bits of code.
inline uint64_t FlipBits(uint64_t code, int bits, std::mt19937_64& rng) {
  uint64_t flips = 0;
  while (std::popcount(flips) < bits) flips |= uint64_t{1} << (rng() % 64);
  return code ^ flips;
}

enum class DataKind { kUniform, kClustered, kDuplicates, kZerosAndOnes, kLowEntropy };

inline std::string DataKindName(DataKind kind) {
  switch (kind) {
    case DataKind::kUniform:
      return "uniform";
    case DataKind::kClustered:
      return "clustered";
    case DataKind::kDuplicates:
      return "duplicates";
    case DataKind::kZerosAndOnes:
      return "zeros_and_ones";
    case DataKind::kLowEntropy:
      return "low_entropy";
  }
  return "?";
}

// n fingerprints of the given shape. Clustered: a few centres with 0..6 bits flipped (big buckets,
// many matches); duplicates: 20 distinct codes repeated; zeros and ones: all-zero, all-one and
// codes one or two bits away; low entropy: only the low 12 bits vary (every key block but one is
// constant).
inline std::vector<uint64_t> MakeCodes(DataKind kind, size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<uint64_t> codes(n);
  std::vector<uint64_t> centres(std::max<size_t>(1, n / 50));
  for (auto& c : centres) c = rng();
  for (size_t i = 0; i < n; ++i) {
    switch (kind) {
      case DataKind::kUniform:
        codes[i] = rng();
        break;
      case DataKind::kClustered:
        codes[i] = FlipBits(centres[rng() % centres.size()], static_cast<int>(rng() % 7), rng);
        break;
      case DataKind::kDuplicates:
        codes[i] = centres[rng() % std::min<size_t>(20, centres.size())];
        break;
      case DataKind::kZerosAndOnes: {
        const uint64_t base = (rng() & 1) ? ~uint64_t{0} : 0;
        codes[i] = FlipBits(base, static_cast<int>(rng() % 3), rng);
        break;
      }
      case DataKind::kLowEntropy:
        codes[i] = 0x5A5A5A5A5A5A0000ULL | (rng() & 0xFFF);
        break;
    }
  }
  return codes;
}

// Queries: half are stored codes with 0..k+1 bits flipped, half uniform.
inline std::vector<uint64_t> MakeQueries(const std::vector<uint64_t>& codes, size_t n, int k,
                                         uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<uint64_t> queries(n);
  for (size_t q = 0; q < n; ++q) {
    if (!codes.empty() && q % 2 == 0) {
      queries[q] = FlipBits(codes[rng() % codes.size()], static_cast<int>(rng() % (k + 2)), rng);
    } else {
      queries[q] = rng();
    }
  }
  return queries;
}

// The reference: every (id, distance) within k, in (distance, id) order, by a plain loop.
inline std::vector<Match> NaiveQuery(const std::vector<uint64_t>& ids,
                                     const std::vector<uint64_t>& codes,
                                     const std::vector<bool>& live, uint64_t query, int k) {
  std::vector<Match> out;
  for (size_t i = 0; i < codes.size(); ++i) {
    const int d = std::popcount(codes[i] ^ query);
    if (live[i] && d <= k) out.push_back(Match{ids[i], d});
  }
  std::sort(out.begin(), out.end(), [](const Match& a, const Match& b) {
    return a.distance != b.distance ? a.distance < b.distance : a.id < b.id;
  });
  return out;
}

// Designs exercised by the tests: the classic ones and uneven or wide ones.
inline std::vector<TableDesign> TestDesigns() {
  return {TableDesign::Even(2, 1), TableDesign::Even(3, 1), TableDesign::Even(4, 1),
          TableDesign::Even(4, 2), TableDesign::Even(5, 2), TableDesign::Even(5, 1),
          TableDesign::Even(6, 3), TableDesign::Even(6, 2), TableDesign::Even(7, 3),
          TableDesign::Even(8, 1), TableDesign::Even(8, 4), TableDesign{{20, 4, 30, 10}, 1}};
}

}  // namespace neardup::testing

#endif  // NEARDUP_INDEX_INDEX_TESTUTIL_H_
