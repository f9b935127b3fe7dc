// IdIndex: the string ids of an online index. Row r's id is bytes_[offsets_[r] .. offsets_[r + 1]);
// an open-addressing table of rows (linear probing, hashed by XXH3, deletion by backward shift)
// finds the row of a live id. Each slot keeps the top 32 bits of the id's hash beside its row: a
// lookup reads an id's bytes only when those bits agree (a probe run at the table's 80% load is
// about 13 slots long for an id that is not there), and since a slot's home comes from the same 32
// bits, growing the table never reads the ids again. An id costs its bytes plus 8 (offset) plus
// about 10 (table).
//
// Thread safety: none; the owner serialises access.
#ifndef NEARDUP_ONLINE_ID_INDEX_H_
#define NEARDUP_ONLINE_ID_INDEX_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "neardup/status.h"
#include "util/row_set.h"

namespace neardup::online_internal {

class IdIndex {
 public:
  static constexpr uint32_t kEmpty = 0xFFFFFFFFu;  // a slot's row when it is empty

  IdIndex() { offsets_.push_back(0); }

  // Appends the id of the next row (rows() before the call) without making it findable.
  void Append(std::string_view id) {
    bytes_.append(id);
    offsets_.push_back(bytes_.size());
  }
  // Makes row findable by its id (which must not be findable already).
  void Link(uint32_t row);
  // Makes row unfindable (it must be findable).
  void Unlink(uint32_t row);
  std::optional<uint32_t> Find(std::string_view id) const;

  // A load's one probe per id instead of Find's and Link's: where `id` would be linked (the empty
  // slot that ends its probe run), or nullopt when it is findable already. The table may grow
  // first. AppendAt then appends it as the next row and links it there; nothing may change the
  // table in between.
  struct Placement {
    uint32_t tag;
    size_t slot;
  };
  std::optional<Placement> PlaceFor(std::string_view id);
  void AppendAt(std::string_view id, const Placement& placement) {
    const auto row = static_cast<uint32_t>(rows());
    Append(id);
    slots_[placement.slot] = Slot(placement.tag, row);
    ++linked_;
  }

  std::string_view id(uint32_t row) const {
    return std::string_view(bytes_).substr(offsets_[row], offsets_[row + 1] - offsets_[row]);
  }
  size_t rows() const { return offsets_.size() - 1; }
  void Reserve(size_t rows, size_t bytes_per_id);
  size_t memory_bytes() const {
    return bytes_.capacity() + offsets_.capacity() * sizeof(uint64_t) +
           slots_.capacity() * sizeof(uint64_t);
  }

  // Snapshots (online/index_snapshot.h) write the arrays as they are and Restore them: the ids'
  // bytes, their offsets (rows() + 1) and the slots (tag << 32 | row; kEmpty rows are free).
  const std::string& bytes() const { return bytes_; }
  const std::vector<uint64_t>& offsets() const { return offsets_; }
  const std::vector<uint64_t>& slots() const { return slots_; }
  // The index of these arrays, every row findable but those in `removed`. Corruption saying what
  // is wrong when they could not have been written by an IdIndex: offsets that do not start at 0,
  // go down, end elsewhere than at the bytes' end or make an id of 0 or over kMaxIdBytes bytes; a
  // slot of a row >= rows(), of a removed row or of a row named twice, or whose tag is not its id's
  // or which a lookup from the tag's home would not reach; rows that no slot names; the table over
  // its load of 80%.
  static Result<IdIndex> Restore(std::string bytes, std::vector<uint64_t> offsets,
                                 std::vector<uint64_t> slots, const util_internal::RowSet& removed);

 private:
  // The top 32 bits of the id's XXH3 hash: its slot's tag and the source of its home.
  static uint32_t Tag(std::string_view id);
  size_t Home(uint32_t tag) const {
    return static_cast<size_t>((uint64_t{tag} * slots_.size()) >> 32);
  }
  size_t Next(size_t s) const { return s + 1 == slots_.size() ? 0 : s + 1; }
  static uint64_t Slot(uint32_t tag, uint32_t row) { return (uint64_t{tag} << 32) | row; }
  static uint32_t RowOf(uint64_t slot) { return static_cast<uint32_t>(slot); }
  static uint32_t TagOf(uint64_t slot) { return static_cast<uint32_t>(slot >> 32); }
  void Place(uint64_t slot);
  void Rehash(size_t slots);

  std::string bytes_;
  std::vector<uint64_t> offsets_;
  std::vector<uint64_t> slots_;  // Slot(tag, row)
  size_t linked_ = 0;
};

}  // namespace neardup::online_internal

#endif  // NEARDUP_ONLINE_ID_INDEX_H_
