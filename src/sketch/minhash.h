// Internal: the mixing function of the sketch (include/neardup/sketch.h).
#ifndef NEARDUP_SKETCH_MINHASH_H_
#define NEARDUP_SKETCH_MINHASH_H_

#include <cstdint>

namespace neardup::sketch_internal {

// The splitmix64 finaliser: a bijection of 64-bit values that spreads every input bit over the
// output.
inline uint64_t Remix(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace neardup::sketch_internal

#endif  // NEARDUP_SKETCH_MINHASH_H_
