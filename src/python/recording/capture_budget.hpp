#pragma once
#include <cstddef>
#include <cstdint>

#include "ophook/capture/capture_buffer_pool.hpp"

namespace ophook::py {

class ValueCapture;

/// What copying `nbytes` more array bytes into the record being built may do: the copy is made
/// only when the record's arrays stay within OPHOOK_QUEUE_BYTES, and only once the writer has room
/// for them, so captured data held at once never exceeds the cap the user set. Shared by NumPy
/// arrays and torch tensors.
struct CopyBudget {
  bool copy = false;                // false: the array is refused; see reason_id
  std::uint32_t reason_id = 0;      // why the array has no data (0 when copied)
  core::SpareBuffer spare;          // an idle buffer of about nbytes to copy into, if the pool had one
};

/// Decides whether `nbytes` more bytes may be copied into `capture`'s record and, when they may,
/// takes an idle buffer for them if there is one (`into_buffer`; not for bytes a device's staging
/// memory lends), then waits (GIL released) until the writer has room for the record's arrays. A
/// refused array is counted in summary.json under notes.arrays_not_copied, with the reason the
/// record carries.
CopyBudget reserve_copy(ValueCapture& capture, std::size_t nbytes, bool into_buffer = true);

}  // namespace ophook::py
