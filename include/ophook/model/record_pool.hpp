#pragma once
#include "ophook/export.hpp"
#include "ophook/model/record.hpp"

namespace ophook::core {

/// Recycles CallRecords so that the program's threads allocate nothing per call in the steady
/// state. The writer gives processed records back (cleared, keeping their small buffers); a
/// program thread takes records from its own thread-local chain and, when that is empty, takes
/// the whole shared chain at once — one atomic exchange per batch, never per call. Only a few MiB
/// of idle records are kept; beyond that, given records are freed.
/// take() and give() are thread-safe; give() is meant for the single writer thread.
class RecordPool {
 public:
  /// A cleared record: recycled when one is available, else new.
  OPHOOK_API static RecordPtr take();
  /// Clears `record` and keeps it for a later take(), or frees it when the pool is full.
  OPHOOK_API static void give(RecordPtr record) noexcept;
};

}  // namespace ophook::core
