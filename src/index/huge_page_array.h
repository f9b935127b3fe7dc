// A fixed-size array of trivially copyable values whose memory is asked to be backed by 2 MiB
// pages where the system allows it (Linux transparent huge pages in "madvise" mode): scatters into
// thousands of places of a large array then miss the TLB far less. The contents start
// uninitialised. Not copyable; movable.
#ifndef NEARDUP_INDEX_HUGE_PAGE_ARRAY_H_
#define NEARDUP_INDEX_HUGE_PAGE_ARRAY_H_

#include <cstddef>
#include <cstdlib>
#include <memory>
#include <new>
#include <span>
#include <type_traits>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace neardup::index_internal {

template <typename T>
class HugePageArray {
  static_assert(std::is_trivially_copyable_v<T>);

 public:
  HugePageArray() = default;
  // Throws std::bad_alloc when the memory cannot be had, as std::vector does.
  explicit HugePageArray(size_t size) : size_(size) {
    if (size == 0) return;
    constexpr size_t kHugePage = size_t{2} << 20;
    const size_t bytes = size * sizeof(T);
    const bool huge = bytes >= kHugePage;
    const size_t alignment = huge ? kHugePage : alignof(std::max_align_t);
    const size_t rounded = (bytes + alignment - 1) / alignment * alignment;
    void* memory = std::aligned_alloc(alignment, rounded);
    if (memory == nullptr) throw std::bad_alloc();
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (huge) madvise(memory, rounded, MADV_HUGEPAGE);  // advice only: failure is harmless
#endif
    data_.reset(static_cast<T*>(memory));
  }

  T* data() { return data_.get(); }
  const T* data() const { return data_.get(); }
  size_t size() const { return size_; }
  T& operator[](size_t i) { return data_.get()[i]; }
  const T& operator[](size_t i) const { return data_.get()[i]; }
  std::span<T> span() { return {data_.get(), size_}; }

 private:
  struct Free {
    void operator()(T* p) const { std::free(p); }
  };
  std::unique_ptr<T, Free> data_;
  size_t size_ = 0;
};

}  // namespace neardup::index_internal

#endif  // NEARDUP_INDEX_HUGE_PAGE_ARRAY_H_
