// Random feature-hash sets of known Jaccard similarity for the sketch tests.
#ifndef NEARDUP_SKETCH_SKETCH_TESTUTIL_H_
#define NEARDUP_SKETCH_SKETCH_TESTUTIL_H_

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <random>
#include <vector>

namespace neardup::testing {

// Two sets of random 64-bit hashes with `shared` hashes in common and `only` more in each:
// Jaccard = shared / (shared + 2 * only).
struct SetPair {
  std::vector<uint64_t> a, b;
  double jaccard = 0;
};

inline SetPair MakeSetPair(std::mt19937_64& rng, size_t shared, size_t only) {
  SetPair p;
  for (size_t i = 0; i < shared; ++i) {
    const uint64_t h = rng();
    p.a.push_back(h);
    p.b.push_back(h);
  }
  for (size_t i = 0; i < only; ++i) p.a.push_back(rng());
  for (size_t i = 0; i < only; ++i) p.b.push_back(rng());
  p.jaccard = static_cast<double>(shared) / static_cast<double>(shared + 2 * only);
  return p;
}

// Exact Jaccard similarity of two sets given as vectors (duplicates ignored).
inline double ExactJaccard(std::vector<uint64_t> a, std::vector<uint64_t> b) {
  std::sort(a.begin(), a.end());
  a.erase(std::unique(a.begin(), a.end()), a.end());
  std::sort(b.begin(), b.end());
  b.erase(std::unique(b.begin(), b.end()), b.end());
  std::vector<uint64_t> both;
  std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(both));
  const size_t united = a.size() + b.size() - both.size();
  return united == 0 ? 1.0 : static_cast<double>(both.size()) / static_cast<double>(united);
}

}  // namespace neardup::testing

#endif  // NEARDUP_SKETCH_SKETCH_TESTUTIL_H_
