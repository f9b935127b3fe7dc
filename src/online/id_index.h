// IdIndex: the string ids of an online index. Row r's id is bytes_[offsets_[r] .. offsets_[r + 1]);
// an open-addressing table of rows (linear probing, hashed by XXH3, deletion by backward shift)
// finds the row of a live id. Each slot keeps 32 bits of the id's hash beside its row, so a lookup
// reads an id's bytes only when those bits agree (a probe run at the table's 80% load is about 13
// slots long for an id that is not there). An id costs its bytes plus 8 (offset) plus about 10
// (table).
//
// Thread safety: none; the owner serialises access.
#ifndef NEARDUP_ONLINE_ID_INDEX_H_
#define NEARDUP_ONLINE_ID_INDEX_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

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

  std::string_view id(uint32_t row) const {
    return std::string_view(bytes_).substr(offsets_[row], offsets_[row + 1] - offsets_[row]);
  }
  size_t rows() const { return offsets_.size() - 1; }
  void Reserve(size_t rows, size_t bytes_per_id);
  size_t memory_bytes() const {
    return bytes_.capacity() + offsets_.capacity() * sizeof(uint64_t) +
           slots_.capacity() * sizeof(uint64_t);
  }

 private:
  static uint64_t Hash(std::string_view id);
  size_t Home(uint64_t hash) const {
    __extension__ using Wide = unsigned __int128;
    return static_cast<size_t>((static_cast<Wide>(hash) * slots_.size()) >> 64);
  }
  size_t Next(size_t s) const { return s + 1 == slots_.size() ? 0 : s + 1; }
  static uint64_t Slot(uint64_t hash, uint32_t row) { return (hash << 32) | row; }
  static uint32_t RowOf(uint64_t slot) { return static_cast<uint32_t>(slot); }
  static bool SameTag(uint64_t slot, uint64_t hash) {
    return static_cast<uint32_t>(slot >> 32) == static_cast<uint32_t>(hash);
  }
  void Place(uint32_t row);
  void Rehash(size_t slots);

  std::string bytes_;
  std::vector<uint64_t> offsets_;
  std::vector<uint64_t> slots_;  // Slot(hash, row): the hash's low 32 bits and the row
  size_t linked_ = 0;
};

}  // namespace neardup::online_internal

#endif  // NEARDUP_ONLINE_ID_INDEX_H_
