#include "online/id_index.h"

#include <xxhash.h>

#include <algorithm>

namespace neardup::online_internal {

uint32_t IdIndex::Tag(std::string_view id) {
  return static_cast<uint32_t>(XXH3_64bits(id.data(), id.size()) >> 32);
}

void IdIndex::Place(uint64_t slot) {
  size_t s = Home(TagOf(slot));
  while (RowOf(slots_[s]) != kEmpty) s = Next(s);
  slots_[s] = slot;
}

void IdIndex::Rehash(size_t slots) {
  std::vector<uint64_t> old = std::move(slots_);
  slots_.assign(slots, uint64_t{kEmpty});
  for (uint64_t slot : old) {
    if (RowOf(slot) != kEmpty) Place(slot);
  }
}

void IdIndex::Reserve(size_t rows, size_t bytes_per_id) {
  bytes_.reserve(rows * bytes_per_id);
  offsets_.reserve(rows + 1);
  const size_t want = rows * 5 / 4 + 64;
  if (want > slots_.size()) Rehash(want);
}

void IdIndex::Link(uint32_t row) {
  if ((linked_ + 1) * 5 > slots_.size() * 4) Rehash(std::max<size_t>(64, slots_.size() * 2));
  Place(Slot(Tag(id(row)), row));
  ++linked_;
}

std::optional<uint32_t> IdIndex::Find(std::string_view key) const {
  if (slots_.empty()) return std::nullopt;
  const uint32_t tag = Tag(key);
  for (size_t s = Home(tag);; s = Next(s)) {
    const uint64_t slot = slots_[s];
    const uint32_t row = RowOf(slot);
    if (row == kEmpty) return std::nullopt;
    if (TagOf(slot) == tag && id(row) == key) return row;
  }
}

std::optional<IdIndex::Placement> IdIndex::PlaceFor(std::string_view key) {
  if ((linked_ + 1) * 5 > slots_.size() * 4) Rehash(std::max<size_t>(64, slots_.size() * 2));
  const uint32_t tag = Tag(key);
  for (size_t s = Home(tag);; s = Next(s)) {
    const uint64_t slot = slots_[s];
    const uint32_t row = RowOf(slot);
    if (row == kEmpty) return Placement{tag, s};
    if (TagOf(slot) == tag && id(row) == key) return std::nullopt;
  }
}

void IdIndex::Unlink(uint32_t row) {
  size_t hole = Home(Tag(id(row)));
  while (RowOf(slots_[hole]) != row) hole = Next(hole);
  // Backward-shift deletion: move later entries of the probe run into the hole when their home
  // allows it, so that no lookup stops early.
  for (size_t s = Next(hole); RowOf(slots_[s]) != kEmpty; s = Next(s)) {
    const size_t home = Home(TagOf(slots_[s]));
    const bool between = hole <= s ? (hole < home && home <= s) : (hole < home || home <= s);
    if (!between) {
      slots_[hole] = slots_[s];
      hole = s;
    }
  }
  slots_[hole] = uint64_t{kEmpty};
  --linked_;
}

}  // namespace neardup::online_internal
