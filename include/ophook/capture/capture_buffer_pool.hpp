#pragma once
#include <cstddef>
#include <memory>

#include "ophook/export.hpp"

namespace ophook::core {

/// An array buffer and the bytes allocated at it.
struct SpareBuffer {
  std::unique_ptr<std::byte[]> data;
  std::size_t capacity = 0;
};

/// Large capture buffers the writer is done with, kept for the next copies of about their size.
/// A fresh buffer of megabytes is fresh memory, which the kernel zeroes page by page as the copy
/// first touches it, which in a dump of large arrays costs the program's thread more than the copy
/// itself. Buffers of a few hundred KiB fare no better through malloc: freed by the writer, they go
/// back to the system as the heap's top is trimmed. docs/performance.md ("Figures behind the code")
/// has both costs.
///
/// Idle bytes count against OPHOOK_QUEUE_BYTES: RecordQueue::has_room frees whatever would take
/// idle and queued bytes together over the cap, so captured data held at once stays within it.
/// Process-wide (records and their buffers cross threads); empty and disabled outside a run.
/// Thread-safe; the mutex is only taken when a buffer of kMinBytes or more is taken, kept or freed.
class CaptureBufferPool {
 public:
  /// Smaller buffers are not kept: malloc reuses freed memory of that size from its own heap.
  static constexpr std::size_t kMinBytes = std::size_t{1} << 16;
  /// Idle buffers kept at most, so that a take() looks through few: the writer frees them at the
  /// pace the program copies, so a handful are idle at a time; more only after a burst of frees.
  static constexpr std::size_t kMaxIdle = 64;

  /// A buffer of `bytes` up to `bytes` + 1/8 from the pool, or an empty one.
  OPHOOK_API static SpareBuffer take(std::size_t bytes);
  /// Keeps a buffer of kMinBytes or more while the idle bytes stay within the limit (the oldest idle
  /// ones freed to make room, and beyond kMaxIdle buffers); frees the rest.
  OPHOOK_API static void give(std::unique_ptr<std::byte[]> data, std::size_t capacity) noexcept;
  /// Frees idle buffers, oldest first, until at most `keep_bytes` stay idle.
  OPHOOK_API static void trim(std::size_t keep_bytes) noexcept;
  /// The idle bytes allowed from now on (0: keep nothing); trims to it.
  OPHOOK_API static void set_limit(std::size_t bytes) noexcept;
  OPHOOK_API static std::size_t idle_bytes() noexcept;

  /// fork(): held across it by Recorder's atfork handlers, so no child inherits it locked.
  static void lock_for_fork() noexcept;
  static void unlock_after_fork() noexcept;
};

}  // namespace ophook::core
