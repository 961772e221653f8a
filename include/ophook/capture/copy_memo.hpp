#pragma once
// Copies of large arrays made once and read by every record that sees the same bytes at the same
// address (`dump` mode, and the NaN hunt's ring).
#include <cstddef>
#include <cstdint>
#include <memory>

#include "ophook/capture/capture_buffer_pool.hpp"
#include "ophook/export.hpp"
#include "ophook/model/record.hpp"

namespace ophook::core {

/// Arrays below this size are copied every time: their copies cost little, and remembering them
/// would crowd out the large ones.
inline constexpr std::size_t kSharedCopyMinBytes = CaptureBufferPool::kMinBytes;

/// The device statistics kernel's fingerprint of a tensor's bytes (ophook/statistics_kernel.hpp:
/// two sums over its words).
struct StagedFingerprint {
  std::uint64_t position = 0, by_value = 0;
};

/// Captures the `nbytes` at `bytes` — the bytes, as the file keeps them (in C order), of the array
/// at `address` — into `out`: the copy an earlier record made of the array at `address` when
/// `bytes` hash block by block as that copy's did (content_memo.hpp), else a fresh copy (into
/// `spare` when it has a buffer), remembered under `address` for the next record. A weight read by
/// the forward, the backward and the optimizer, an activation as one op's output and the next
/// op's input: copied once.
OPHOOK_API void copy_or_share(ArrayCapture& out, const void* address, const std::byte* bytes, std::size_t nbytes,
                              SpareBuffer spare);

/// Gives `out` the `nbytes` of `copy`, the bytes a device staged for the tensor at device address
/// `address` (in C order: the staging memory's copy, lent, not copied again on the host), and
/// remembers it there with the device's `fingerprint` of them for held_copy() — or, when it is
/// the copy remembered there already (an earlier read's, which the device found these bytes equal
/// to), shares it. `address` null: a tensor not in C order, whose copy is not remembered.
OPHOOK_API void share_staged_copy(ArrayCapture& out, const void* address, std::shared_ptr<const SharedCopy> copy,
                                  std::size_t nbytes, const StagedFingerprint& fingerprint);

/// A device tensor's copy that records still hold (share_staged_copy), and the device's
/// fingerprint of those bytes: the device compares the tensor's bytes
/// with it before they cross the bus again (docs/devices.md, "dump").
struct HeldCopy {
  std::shared_ptr<const SharedCopy> copy;  // null: none
  StagedFingerprint fingerprint;
};

/// The copy remembered for the `nbytes` at device address `address`, when it came with a
/// fingerprint and a record still holds it; the caller keeps it alive until it knows.
OPHOOK_API HeldCopy held_copy(const void* address, std::size_t nbytes);

/// Gives `out` the `nbytes` of `copy`, a held_copy() at `address` the device found the tensor's
/// bytes still equal to, `spare` going back.
OPHOOK_API void share_held_copy(ArrayCapture& out, const void* address, std::shared_ptr<const SharedCopy> copy,
                                std::size_t nbytes, SpareBuffer spare);

/// Forgets every copy remembered so far: a forked child does at once (its parent's records are not
/// its own), and a test starts from none.
OPHOOK_API void forget_copies();

/// Arrays of kSharedCopyMinBytes or more copy_or_share copied, and those it gave an earlier copy.
struct CopyMemoCounts {
  std::uint64_t copied = 0, shared = 0;
};
OPHOOK_API CopyMemoCounts copy_memo_counts() noexcept;

}  // namespace ophook::core
