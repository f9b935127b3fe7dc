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

  // Starts a new document. A table grown past kKeptSlots by a long document is given back; a table
  // mostly empty (a short document after a long one) is cleared slot by slot, not all over.
  void Clear() {
    if (slots_.size() > kKeptSlots) {
      std::vector<uint64_t>(kInitialSlots, 0).swap(slots_);
    } else if (8 * hashes_.size() < slots_.size()) {
      const size_t mask = slots_.size() - 1;
      for (uint64_t hash : hashes_) {
        if (hash == 0) continue;
        // Every hash is still in the table, so the probe ends at it (skipping slots already
        // cleared).
        size_t i = hash & mask;
        while (slots_[i] != hash) i = (i + 1) & mask;
        slots_[i] = 0;
      }
    } else {
      std::fill(slots_.begin(), slots_.end(), 0);
    }
    hashes_.clear();
    has_zero_ = false;
  }

  // Adds `hash`; returns true when it was not in the set yet.
  bool Insert(uint64_t hash) {
    if (hash == 0) {  // 0 marks an empty slot, so the hash 0 is kept aside
      if (has_zero_) return false;
      has_zero_ = true;
      hashes_.push_back(0);
      return true;
    }
    if (2 * (hashes_.size() + 1) > slots_.size()) Grow();
    const size_t mask = slots_.size() - 1;
    for (size_t i = hash & mask;; i = (i + 1) & mask) {
      if (slots_[i] == hash) return false;
      if (slots_[i] == 0) {
        slots_[i] = hash;
        hashes_.push_back(hash);
        return true;
      }
    }
  }

  std::span<const uint64_t> hashes() const { return hashes_; }

 private:
  static constexpr size_t kInitialSlots = 1024;
  static constexpr size_t kKeptSlots = size_t{1} << 16;

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
