// IdMap: user id -> row, for Insert's duplicate check and Remove. An open-addressing table of
// 32-bit rows (linear probing, deletion by backward shift) whose keys live in the index's id array,
// so it costs about 5 bytes per fingerprint.
//
// Thread safety: none; the owner serialises access.
#ifndef NEARDUP_INDEX_ID_MAP_H_
#define NEARDUP_INDEX_ID_MAP_H_

#include <algorithm>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace neardup::index_internal {

class IdMap {
 public:
  static constexpr uint32_t kEmpty = 0xFFFFFFFFu;

  // ids: the id of every row (the table reads keys through this span; the caller passes it each
  // time since the array may move).
  std::optional<uint32_t> Find(std::span<const uint64_t> ids, uint64_t id) const {
    if (slots_.empty()) return std::nullopt;
    for (size_t s = Home(id);; s = Next(s)) {
      const uint32_t row = slots_[s];
      if (row == kEmpty) return std::nullopt;
      if (ids[row] == id) return row;
    }
  }

  // Adds row (whose id is ids[row], not yet present). Grows as needed.
  void Add(std::span<const uint64_t> ids, uint32_t row) {
    if ((size_ + 1) * 5 > slots_.size() * 4) Rehash(ids, std::max<size_t>(64, slots_.size() * 2));
    Place(ids, row);
    ++size_;
  }

  // Makes room for n entries without rehashing.
  void Reserve(std::span<const uint64_t> ids, size_t n) {
    if (n * 5 > slots_.size() * 4) Rehash(ids, n + n / 4 + 1);
  }

  // Removes the entry of id; false if absent.
  bool Erase(std::span<const uint64_t> ids, uint64_t id);

  // Rebuilds from the rows r < ids.size() with !removed(r) (their ids distinct), sized for
  // `live` entries at a load of about 0.8.
  template <typename Removed>
  void Reset(std::span<const uint64_t> ids, size_t live, Removed&& removed) {
    slots_.assign(std::max<size_t>(64, live + live / 4 + 1), kEmpty);
    slots_.shrink_to_fit();
    size_ = 0;
    for (uint32_t row = 0; row < ids.size(); ++row) {
      if (removed(row)) continue;
      Place(ids, row);
      ++size_;
    }
  }

  size_t size() const { return size_; }
  size_t memory_bytes() const { return slots_.capacity() * sizeof(uint32_t); }

 private:
  size_t Home(uint64_t id) const {
    const uint64_t h = (id ^ (id >> 31)) * 0x9E3779B97F4A7C15ULL;
    __extension__ using Wide = unsigned __int128;
    return static_cast<size_t>((static_cast<Wide>(h) * slots_.size()) >> 64);
  }
  size_t Next(size_t s) const { return s + 1 == slots_.size() ? 0 : s + 1; }
  void Place(std::span<const uint64_t> ids, uint32_t row) {
    size_t s = Home(ids[row]);
    while (slots_[s] != kEmpty) s = Next(s);
    slots_[s] = row;
  }
  void Rehash(std::span<const uint64_t> ids, size_t slots);

  std::vector<uint32_t> slots_;
  size_t size_ = 0;
};

}  // namespace neardup::index_internal

#endif  // NEARDUP_INDEX_ID_MAP_H_
