// ChunkedArray: an append-only array in fixed-size chunks. Appending never moves existing elements,
// so a Snapshot taken under a lock can be read without it while later elements are appended.
//
// Thread safety: appends and Snapshot need exclusive access; a Snapshot is then read-only and
// independent of the array (it shares the chunks, which live as long as the array).
#ifndef NEARDUP_INDEX_CHUNKED_ARRAY_H_
#define NEARDUP_INDEX_CHUNKED_ARRAY_H_

#include <algorithm>
#include <cstddef>
#include <memory>
#include <span>
#include <vector>

namespace neardup::index_internal {

template <typename T>
class ChunkedArray {
 public:
  static constexpr size_t kChunkBits = 16;
  static constexpr size_t kChunk = size_t{1} << kChunkBits;

  class View {
   public:
    T operator[](size_t i) const { return chunks_[i >> kChunkBits][i & (kChunk - 1)]; }
    size_t size() const { return size_; }

   private:
    friend class ChunkedArray;
    std::vector<const T*> chunks_;
    size_t size_ = 0;
  };

  void push_back(T value) {
    if (size_ % kChunk == 0) chunks_.push_back(std::make_unique_for_overwrite<T[]>(kChunk));
    chunks_.back()[size_ % kChunk] = value;
    ++size_;
  }

  void Assign(std::span<const T> values) {
    chunks_.clear();
    for (size_t base = 0; base < values.size(); base += kChunk) {
      chunks_.push_back(std::make_unique_for_overwrite<T[]>(kChunk));
      const size_t count = std::min(kChunk, values.size() - base);
      std::copy(values.begin() + base, values.begin() + base + count, chunks_.back().get());
    }
    size_ = values.size();
  }

  T operator[](size_t i) const { return chunks_[i >> kChunkBits][i & (kChunk - 1)]; }
  // The element itself: elements i .. the end of i's chunk are contiguous from here.
  const T& at(size_t i) const { return chunks_[i >> kChunkBits][i & (kChunk - 1)]; }
  size_t size() const { return size_; }
  size_t memory_bytes() const { return chunks_.size() * kChunk * sizeof(T); }

  View Snapshot() const {
    View view;
    for (const auto& chunk : chunks_) view.chunks_.push_back(chunk.get());
    view.size_ = size_;
    return view;
  }

 private:
  std::vector<std::unique_ptr<T[]>> chunks_;
  size_t size_ = 0;
};

}  // namespace neardup::index_internal

#endif  // NEARDUP_INDEX_CHUNKED_ARRAY_H_
