#include "index/id_map.h"

namespace neardup::index_internal {

bool IdMap::Erase(std::span<const uint64_t> ids, uint64_t id) {
  if (slots_.empty()) return false;
  size_t hole = Home(id);
  while (true) {
    if (slots_[hole] == kEmpty) return false;
    if (ids[slots_[hole]] == id) break;
    hole = Next(hole);
  }
  // Backward-shift deletion: pull later entries of the probe run into the hole when their home
  // position does not lie cyclically in (hole, j].
  for (size_t j = Next(hole); slots_[j] != kEmpty; j = Next(j)) {
    const size_t home = Home(ids[slots_[j]]);
    const bool stays = hole <= j ? (hole < home && home <= j) : (hole < home || home <= j);
    if (!stays) {
      slots_[hole] = slots_[j];
      hole = j;
    }
  }
  slots_[hole] = kEmpty;
  --size_;
  return true;
}

void IdMap::Rehash(std::span<const uint64_t> ids, size_t slots) {
  std::vector<uint32_t> old = std::move(slots_);
  slots_.assign(slots, kEmpty);
  for (uint32_t row : old) {
    if (row != kEmpty) Place(ids, row);
  }
}

}  // namespace neardup::index_internal
