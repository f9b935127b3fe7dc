#include "util/parallel.h"

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

namespace neardup {

int ResolveThreads(int threads) {
  if (threads > 0) return threads;
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

namespace util_internal {

void ParallelFor(size_t count, int threads, const std::function<void(size_t)>& body) {
  const size_t workers = std::min<size_t>(count, static_cast<size_t>(ResolveThreads(threads)));
  if (workers <= 1) {
    for (size_t i = 0; i < count; ++i) body(i);
    return;
  }
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next.fetch_add(1); i < count; i = next.fetch_add(1)) body(i);
  };
  std::vector<std::thread> pool;
  for (size_t w = 1; w < workers; ++w) pool.emplace_back(work);
  work();
  for (auto& thread : pool) thread.join();
}

}  // namespace util_internal
}  // namespace neardup
