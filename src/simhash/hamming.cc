#include "neardup/hamming.h"

#include <algorithm>
#include <bit>

#include "simhash/kernels.h"

namespace neardup {
namespace {

// Codes scanned per step: 32 KiB, so a block stays in L1 while a group of queries runs over it.
constexpr size_t kBlock = 4096;

void AppendMatches(const uint64_t* masks, size_t words, uint32_t base, std::vector<uint32_t>* out) {
  for (size_t w = 0; w < words; ++w) {
    for (uint64_t m = masks[w]; m != 0; m &= m - 1) {
      out->push_back(base +
                     static_cast<uint32_t>(w * 64 + static_cast<size_t>(std::countr_zero(m))));
    }
  }
}

}  // namespace

void FindWithin(std::span<const uint64_t> codes, uint64_t query, int k,
                std::vector<uint32_t>* out) {
  if (k < 0) return;
  if (k >= 64) {
    for (size_t i = 0; i < codes.size(); ++i) out->push_back(static_cast<uint32_t>(i));
    return;
  }
  uint64_t masks[kBlock / 64];
  for (size_t base = 0; base < codes.size(); base += kBlock) {
    const size_t n = std::min(kBlock, codes.size() - base);
    simhash_internal::HammingMasks(codes.data() + base, n, query, k, masks);
    AppendMatches(masks, (n + 63) / 64, static_cast<uint32_t>(base), out);
  }
}

void FindWithinBatch(std::span<const uint64_t> codes, std::span<const uint64_t> queries, int k,
                     std::vector<std::vector<uint32_t>>* out) {
  out->resize(queries.size());
  if (k < 0) return;
  if (k >= 64) {
    for (size_t q = 0; q < queries.size(); ++q) FindWithin(codes, queries[q], k, &(*out)[q]);
    return;
  }
  uint64_t masks[kBlock / 64];
  for (size_t base = 0; base < codes.size(); base += kBlock) {
    const size_t n = std::min(kBlock, codes.size() - base);
    for (size_t q = 0; q < queries.size(); ++q) {
      simhash_internal::HammingMasks(codes.data() + base, n, queries[q], k, masks);
      AppendMatches(masks, (n + 63) / 64, static_cast<uint32_t>(base), &(*out)[q]);
    }
  }
}

size_t CountWithin(std::span<const uint64_t> codes, uint64_t query, int k) {
  if (k < 0) return 0;
  if (k >= 64) return codes.size();
  uint64_t masks[kBlock / 64];
  size_t count = 0;
  for (size_t base = 0; base < codes.size(); base += kBlock) {
    const size_t n = std::min(kBlock, codes.size() - base);
    simhash_internal::HammingMasks(codes.data() + base, n, query, k, masks);
    for (size_t w = 0; w < (n + 63) / 64; ++w)
      count += static_cast<size_t>(std::popcount(masks[w]));
  }
  return count;
}

}  // namespace neardup
