#pragma once
#include <string>

#include "python_common.hpp"

/// A Python callable told of the triggers of the ring that fire on the program's side — the run's
/// first NaN/Inf (made or received), a termination signal — so that the other ranks of a
/// torch.distributed job write their rings too (python_shim/ophook/_ranks/rank_signals.py); the others
/// (exceptions, ophook.dump_ring()) are seen in Python already. GIL required.
namespace ophook::py {

/// `callable(why)`, or none (nullptr).
void set_trigger_listener(PyObject* callable);

/// Tells the listener, if any; its errors are cleared (a trigger never fails the program).
void tell_trigger_listener(const std::string& why) noexcept;

}  // namespace ophook::py
