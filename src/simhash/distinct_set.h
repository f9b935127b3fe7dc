// Internal: the set of a document's distinct feature hashes (FeatureWeighting::kDistinct).
#ifndef NEARDUP_SIMHASH_DISTINCT_SET_H_
#define NEARDUP_SIMHASH_DISTINCT_SET_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace neardup::simhash_internal {

// Open addressing with linear probing on the feature hash itself (XXH3 output: its low bits are
// already uniform). Keeps the distinct hashes in order of first insertion.
class DistinctHashSet {
 public:
  DistinctHashSet() : slots_(kInitialSlots, 0) {}

  // Starts a new document. A table grown by a long document is given back unless the document
  // filled an eighth of it: a short document after a long one is faster in a table that stays in
  // the L1 cache.
  void Clear() {
    if (slots_.size() > kInitialSlots && 8 * hashes_.size() < slots_.size()) {
      std::vector<uint64_t>(kInitialSlots, 0).swap(slots_);
    } else {
      std::fill(slots_.begin(), slots_.end(), 0);
    }
    hashes_.clear();
    has_zero_ = false;
  }

  // Adds `hash`; returns true when it was not in the set yet.
  bool Insert(uint64_t hash) {
    if (2 * (hashes_.size() + 1) > slots_.size()) Grow();
    if (!Place(hash, slots_.size() - 1)) return false;
    hashes_.push_back(hash);
    return true;
  }

  // Inserts the hashes in order.
  void InsertAll(std::span<const uint64_t> hashes) {
    size_t size = hashes_.size();
    while (2 * (size + hashes.size()) > slots_.size()) Grow();
    hashes_.resize(size + hashes.size());
    uint64_t* out = hashes_.data();
    const size_t mask = slots_.size() - 1;
    // Each hash is written at the end of the list, which grows only when the hash was new: no
    // branch on that.
    for (uint64_t hash : hashes) {
      out[size] = hash;
      size += Place(hash, mask);
    }
    hashes_.resize(size);
  }

  std::span<const uint64_t> hashes() const { return hashes_; }

 private:
  static constexpr size_t kInitialSlots = 1024;

  // Puts `hash` in the table unless it is there; returns whether it was new. The table must have a
  // free slot. The search stops at the hash or at a free slot, and the hash is written there either
  // way (over itself when it was present), so only a collision costs a branch.
  bool Place(uint64_t hash, size_t mask) {
    if (hash == 0) {  // 0 marks an empty slot, so the hash 0 is kept aside
      const bool added = !has_zero_;
      has_zero_ = true;
      return added;
    }
    size_t i = hash & mask;
    while (slots_[i] != 0 && slots_[i] != hash) i = (i + 1) & mask;
    const bool added = slots_[i] == 0;
    slots_[i] = hash;
    return added;
  }

  void Grow() {
    std::vector<uint64_t> bigger(slots_.size() * 2, 0);
    const size_t mask = bigger.size() - 1;
    for (uint64_t hash : hashes_) {
      if (hash == 0) continue;
      size_t i = hash & mask;
      while (bigger[i] != 0) i = (i + 1) & mask;
      bigger[i] = hash;
    }
    slots_.swap(bigger);
  }

  std::vector<uint64_t> slots_;
  std::vector<uint64_t> hashes_;
  bool has_zero_ = false;
};

}  // namespace neardup::simhash_internal

#endif  // NEARDUP_SIMHASH_DISTINCT_SET_H_
