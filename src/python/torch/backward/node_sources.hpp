#pragma once
#include <cstdint>

#include "recording/source_location.hpp"

/// Which line of the program's forward made an autograd node, for OPHOOK_NAN's backward check: a
/// backward culprit (`autograd.SqrtBackward0`) is named with the forward call that made its node,
/// not only with the `backward()` line its pass ran from. As node_modules does for modules: each
/// recorded forward torch call notes where its thread's autograd sequence counter stood and its
/// source line; a node's sequence number finds the call that made it by a binary search. Recorded
/// only while the backward check is on. All functions need the GIL.
namespace ophook::py::node_sources {

/// Whether the table is recorded: the torch_function handler then notes each forward call.
bool recording() noexcept;

/// A recorded forward call from `site` starts on this thread (its nodes take the counter's next
/// numbers).
void call_starts(const SourceSite& site);

/// The source of the forward call that made `node` (an autograd node object) on this thread; no
/// file when none is known (the table keeps the last 65,536 calls).
SourceSite site_of(PyObject* node);

}  // namespace ophook::py::node_sources
