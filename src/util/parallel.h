// Internal: running a loop's iterations on several threads.
#ifndef NEARDUP_UTIL_PARALLEL_H_
#define NEARDUP_UTIL_PARALLEL_H_

#include <cstddef>
#include <functional>

#include "neardup/cpu.h"

namespace neardup::util_internal {

// Runs body(i) for i in 0..count-1 on up to `threads` threads (0: ResolveThreads, the hardware
// concurrency). Iterations are handed out one at a time, in increasing order; the calling thread is
// one of the workers, and the call returns when every iteration has run.
void ParallelFor(size_t count, int threads, const std::function<void(size_t)>& body);

}  // namespace neardup::util_internal

#endif  // NEARDUP_UTIL_PARALLEL_H_
