#pragma once
#include <cstddef>
#include <functional>

namespace ophook::cli {

/// Runs task(i) for every i in [0, count) on up to `threads` threads (the calling thread is one
/// of them), handing out indices in increasing order. When tasks throw, no new index is handed
/// out and the exception of the lowest index that threw is rethrown after all threads stopped.
/// `task` must be safe to call concurrently for different indices.
void parallel_for(std::size_t count, unsigned threads,
                  const std::function<void(std::size_t)>& task);

/// The number of threads worth using: the hardware concurrency, at least 1.
unsigned default_thread_count();

}  // namespace ophook::cli
