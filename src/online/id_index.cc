#include "online/id_index.h"

#include <xxhash.h>

#include <algorithm>

#include "online/document_id.h"

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

Result<IdIndex> IdIndex::Restore(std::string bytes, std::vector<uint64_t> offsets,
                                 std::vector<uint64_t> slots,
                                 const util_internal::RowSet& removed) {
  auto corrupt = [](const std::string& what) { return Status::Corruption("ids: " + what); };
  if (offsets.empty() || offsets[0] != 0) return corrupt("the offsets do not start at 0");
  const size_t rows = offsets.size() - 1;
  if (rows >= kEmpty) return corrupt(std::to_string(rows) + " rows");
  for (size_t r = 0; r < rows; ++r) {
    if (offsets[r + 1] <= offsets[r] || offsets[r + 1] - offsets[r] > kMaxIdBytes) {
      return corrupt("the id of row " + std::to_string(r) + " has offsets " +
                     std::to_string(offsets[r]) + " to " + std::to_string(offsets[r + 1]));
    }
  }
  if (offsets[rows] != bytes.size()) {
    return corrupt("the offsets end at " + std::to_string(offsets[rows]) + ", the bytes at " +
                   std::to_string(bytes.size()));
  }
  if (removed.count() > rows) return corrupt("more rows removed than stored");
  const size_t live = rows - removed.count();
  IdIndex index;
  index.bytes_ = std::move(bytes);
  index.offsets_ = std::move(offsets);
  index.slots_ = std::move(slots);
  const std::vector<uint64_t>& table = index.slots_;
  const size_t n = table.size();
  if (live * 5 > n * 4) {
    return corrupt(std::to_string(live) + " ids in a table of " + std::to_string(n) + " slots");
  }
  // Every id's tag, in row order (the ids are read in order).
  std::vector<uint32_t> tags(rows);
  for (uint32_t row = 0; row < rows; ++row) tags[row] = Tag(index.id(row));
  // A walk round the table from a free slot: each slot's distance from its home must lie inside
  // the run of occupied slots that ends at it, so that a lookup from the home reaches it.
  size_t start = 0;
  while (start < n && RowOf(table[start]) != kEmpty) ++start;
  if (start == n && n > 0) return corrupt("a table without a free slot");
  std::vector<uint64_t> named((rows + 63) / 64, 0);
  size_t linked = 0, run = 0;
  for (size_t k = 1, s = start; k <= n; ++k) {
    s = s + 1 == n ? 0 : s + 1;
    // The tags of the rows a few slots on are fetched now, to be there when they are compared.
    const size_t ahead = s + 16 < n ? s + 16 : n >= 16 ? s + 16 - n : s;
    if (RowOf(table[ahead]) < rows) __builtin_prefetch(&tags[RowOf(table[ahead])]);
    const uint32_t row = RowOf(table[s]);
    if (row == kEmpty) {
      run = 0;
      continue;
    }
    ++run;
    auto where = [s] { return "slot " + std::to_string(s); };
    if (row >= rows) return corrupt(where() + " holds row " + std::to_string(row));
    if (removed.Contains(row))
      return corrupt(where() + " holds removed row " + std::to_string(row));
    if ((named[row / 64] >> (row % 64)) & 1) {
      return corrupt(where() + " holds row " + std::to_string(row) + " a second time");
    }
    named[row / 64] |= uint64_t{1} << (row % 64);
    ++linked;
    const uint32_t tag = TagOf(table[s]);
    if (tag != tags[row])
      return corrupt(where() + " holds another tag than the id of row " + std::to_string(row));
    const size_t home = index.Home(tag);
    if ((s >= home ? s - home : s + n - home) >= run) {
      return corrupt(where() + " is out of the reach of a lookup of its id");
    }
  }
  if (linked != live) {
    return corrupt(std::to_string(linked) + " ids findable, " + std::to_string(live) + " stored");
  }
  index.linked_ = linked;
  return index;
}

}  // namespace neardup::online_internal
