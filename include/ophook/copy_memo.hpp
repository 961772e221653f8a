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

/// Captures the `nbytes` at `live` (the array's bytes as the file keeps them, in C order) into
/// `out`: the copy an earlier record made of them when the bytes at `live` hash block by block
/// as that copy's did (content_memo.hpp), else a fresh copy (into `spare` when it has a buffer),
/// remembered under `live` for the next record. A weight read by the forward, the backward and
/// the optimizer, an activation as one op's output and the next op's input: copied once.
OPHOOK_API void copy_or_share(ArrayCapture& out, const std::byte* live, std::size_t nbytes, SpareBuffer spare);

/// Forgets every copy remembered so far: a forked child does at once (its parent's records are not
/// its own), and a test starts from none.
OPHOOK_API void forget_copies();

/// Arrays of kSharedCopyMinBytes or more copy_or_share copied, and those it gave an earlier copy.
struct CopyMemoCounts {
  std::uint64_t copied = 0, shared = 0;
};
OPHOOK_API CopyMemoCounts copy_memo_counts() noexcept;

}  // namespace ophook::core
