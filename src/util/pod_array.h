// PodArray<T>: a growable array of a trivially copyable T that grows with realloc().
//
// A large array (hundreds of MB, as the online index's band tables are) that grows by copying, as
// std::vector does, reads and writes every byte once more and faults in a fresh copy of every page
// at each growth. glibc serves large blocks with mmap and grows them with mremap, which moves page
// table entries instead of bytes; elsewhere realloc() copies, as a vector would.
//
// PrefaultForWrite() maps a block's pages in one call (Linux MADV_POPULATE_WRITE) rather than one
// page fault at a time as it is first written: on this project's 2-core virtual machine, page
// faults were a fifth of the online index's insert time at 10M documents. The online index
// prefaults its sketch chunks; prefaulting the band tables' growth as well made inserts no faster
// and queries 30% slower there (bench/README.md), so PodArray does not.
//
// Thread safety: none (as std::vector).
#ifndef NEARDUP_UTIL_POD_ARRAY_H_
#define NEARDUP_UTIL_POD_ARRAY_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <type_traits>
#include <utility>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace neardup::util_internal {

// Maps the whole pages inside [data, data + bytes) for writing now, in one call, where the system
// can (a hint: on failure or elsewhere the pages fault in when first written, as usual).
inline void PrefaultForWrite(void* data, size_t bytes) {
#if defined(__linux__) && defined(MADV_POPULATE_WRITE)
  constexpr uintptr_t kPage = 4096;
  if (bytes < 16 * kPage) return;
  const auto begin = (reinterpret_cast<uintptr_t>(data) + kPage - 1) & ~(kPage - 1);
  const auto end = (reinterpret_cast<uintptr_t>(data) + bytes) & ~(kPage - 1);
  if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_POPULATE_WRITE);
#else
  (void)data;
  (void)bytes;
#endif
}

template <typename T>
class PodArray {
  static_assert(std::is_trivially_copyable_v<T> && std::is_trivially_destructible_v<T>);

 public:
  PodArray() = default;
  PodArray(const PodArray&) = delete;
  PodArray& operator=(const PodArray&) = delete;
  PodArray(PodArray&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)),
        size_(std::exchange(other.size_, 0)),
        capacity_(std::exchange(other.capacity_, 0)) {}
  PodArray& operator=(PodArray&& other) noexcept {
    if (this != &other) {
      std::free(data_);
      data_ = std::exchange(other.data_, nullptr);
      size_ = std::exchange(other.size_, 0);
      capacity_ = std::exchange(other.capacity_, 0);
    }
    return *this;
  }
  ~PodArray() { std::free(data_); }

  T* data() { return data_; }
  const T* data() const { return data_; }
  size_t size() const { return size_; }
  size_t capacity() const { return capacity_; }
  bool empty() const { return size_ == 0; }
  T& operator[](size_t i) { return data_[i]; }
  const T& operator[](size_t i) const { return data_[i]; }
  T* begin() { return data_; }
  T* end() { return data_ + size_; }
  const T* begin() const { return data_; }
  const T* end() const { return data_ + size_; }

  // Capacity for at least n elements. Throws std::bad_alloc when memory runs out (as a vector).
  void reserve(size_t n) {
    if (n <= capacity_) return;
    if (n > static_cast<size_t>(-1) / sizeof(T)) throw std::bad_alloc();
    void* grown = std::realloc(data_, n * sizeof(T));
    if (grown == nullptr) throw std::bad_alloc();
    data_ = static_cast<T*>(grown);
    capacity_ = n;
  }
  // New elements are left uninitialised. Grows the capacity by at least 1/8.
  void resize(size_t n) {
    if (n > capacity_) reserve(std::max(n, capacity_ + capacity_ / 8));
    size_ = n;
  }
  void clear() { size_ = 0; }

 private:
  T* data_ = nullptr;
  size_t size_ = 0;
  size_t capacity_ = 0;
};

}  // namespace neardup::util_internal

#endif  // NEARDUP_UTIL_POD_ARRAY_H_
