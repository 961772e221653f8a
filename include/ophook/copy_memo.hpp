#pragma once
// Copies of large arrays made once and read by every record that sees the same bytes at the same
// address (`dump` mode, and the NaN hunt's ring).
#include <cstddef>
#include <cstdint>

#include "ophook/capture_buffer_pool.hpp"
#include "ophook/export.hpp"
#include "ophook/record.hpp"

namespace ophook::core {

/// Arrays below this size are copied every time: their copies cost little, and remembering them
/// would crowd out the large ones.
inline constexpr std::size_t kSharedCopyMinBytes = CaptureBufferPool::kMinBytes;

/// Captures the `nbytes` at `bytes` — the bytes, as the file keeps them (in C order), of the array
/// at `address`: the same pointer for a host array; for a device tensor, its bytes the statistics
/// kernel staged in host memory — into `out`: the copy an earlier record made of the array at
/// `address` when `bytes` hash block by block as that copy's did (content_memo.hpp), else a fresh
/// copy (into `spare` when it has a buffer), remembered under `address` for the next record. A
/// weight read by the forward, the backward and the optimizer, an activation as one op's output and
/// the next op's input: copied once.
OPHOOK_API void copy_or_share(ArrayCapture& out, const void* address, const std::byte* bytes, std::size_t nbytes,
                              SpareBuffer spare);

/// Forgets every copy remembered so far: a forked child does at once (its parent's records are not
/// its own), and a test starts from none.
OPHOOK_API void forget_copies();

/// Arrays of kSharedCopyMinBytes or more copy_or_share copied, and those it gave an earlier copy.
struct CopyMemoCounts {
  std::uint64_t copied = 0, shared = 0;
};
OPHOOK_API CopyMemoCounts copy_memo_counts() noexcept;

}  // namespace ophook::core
