// ClusterPairs: union-find over the pairs, then the representative of every component.
#include <string>

#include "neardup/join.h"

namespace neardup {
namespace {

// ClusterPairs for pairs of any type with `first` and `second`.
template <typename PairType>
Result<std::vector<uint32_t>> Components(uint32_t count, std::span<const PairType> pairs,
                                         std::span<const int64_t> priorities) {
  if (!priorities.empty() && priorities.size() != count) {
    return Status::InvalidArgument("priorities has " + std::to_string(priorities.size()) +
                                   " entries for " + std::to_string(count) + " items");
  }
  std::vector<uint32_t> parent(count);
  for (uint32_t i = 0; i < count; ++i) parent[i] = i;
  auto find = [&](uint32_t x) {
    while (parent[x] != x) {
      parent[x] = parent[parent[x]];
      x = parent[x];
    }
    return x;
  };
  for (const PairType& pair : pairs) {
    if (pair.first >= count || pair.second >= count) {
      return Status::InvalidArgument("pair (" + std::to_string(pair.first) + ", " +
                                     std::to_string(pair.second) +
                                     ") names an item >= " + std::to_string(count));
    }
    const uint32_t a = find(pair.first);
    const uint32_t b = find(pair.second);
    // The smaller root wins, so a root is always the lowest position of its component.
    if (a < b) {
      parent[b] = a;
    } else if (b < a) {
      parent[a] = b;
    }
  }
  std::vector<uint32_t> representative(count);
  for (uint32_t i = 0; i < count; ++i) representative[i] = find(i);
  if (priorities.empty()) return representative;
  // best[root]: highest priority, lowest position on ties (positions are visited in ascending
  // order).
  std::vector<uint32_t> best(representative);
  for (uint32_t i = 0; i < count; ++i) {
    const uint32_t root = representative[i];
    if (priorities[i] > priorities[best[root]]) best[root] = i;
  }
  for (uint32_t i = 0; i < count; ++i) representative[i] = best[representative[i]];
  return representative;
}

}  // namespace

Result<std::vector<uint32_t>> ClusterPairs(uint32_t count, std::span<const Pair> pairs,
                                           std::span<const int64_t> priorities) {
  return Components(count, pairs, priorities);
}

Result<std::vector<uint32_t>> ClusterSimilarPairs(uint32_t count,
                                                  std::span<const SimilarPair> pairs) {
  return Components(count, pairs, {});
}

}  // namespace neardup
