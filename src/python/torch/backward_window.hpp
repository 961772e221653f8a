#pragma once
#include "python_common.hpp"

namespace ophook::py {

/// The monitor alone records no call: its torch_function mode is there only to see backward()
/// and autograd.grad() hand it the loss. On every other call the mode is torch's round trip
/// through a mode for nothing, and a transformer's step makes hundreds. So the mode steps off this
/// thread's stack when an outermost module's forward or an optimizer step starts, and steps back
/// when an outermost forward ends: it is on the stack from the model's output to the step, where
/// the loss and backward() are. Should an optimizer step start with no backward() seen since the
/// last one (a program that calls it inside its module's forward), the mode stays on from then on.
/// All functions need the GIL.
namespace backward_window {

/// leave() -> bool takes the function mode off this thread's stack (False: it was not on it);
/// enter() puts it back where it was. nullptrs: off, the mode stays where it is.
void set(PyObject* leave, PyObject* enter);

/// The module hooks, at the start and at the end of a forward that runs inside no other module.
void outermost_forward_starts();
void outermost_forward_ended();
/// The optimizer step pre-hook.
void optimizer_step_starts();
/// The function mode's handler, on backward() or autograd.grad().
void backward_seen() noexcept;

}  // namespace backward_window
}  // namespace ophook::py
