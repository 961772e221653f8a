#include "torch/backward_window.hpp"

#include "thread_state.hpp"

namespace ophook::py::backward_window {
namespace {

PyObject* leave_stack = nullptr;  // held
PyObject* enter_stack = nullptr;  // held
bool seen_since_step = false;
bool staying = false;             // a step came without backward(): the mode stays on
thread_local bool aside = false;  // this thread's mode is off its stack

void leave() {
  if (leave_stack == nullptr || staying || aside) return;
  BusyScope busy;
  PyRef left = PyRef::steal(PyObject_CallNoArgs(leave_stack));
  aside = left && left.get() == Py_True;
  PyErr_Clear();
}

void enter() {
  if (enter_stack == nullptr || !aside) return;
  BusyScope busy;
  PyRef done = PyRef::steal(PyObject_CallNoArgs(enter_stack));
  aside = false;
  PyErr_Clear();
}

}  // namespace

void set(PyObject* leave, PyObject* enter) {
  Py_XINCREF(leave);
  Py_XINCREF(enter);
  Py_XDECREF(leave_stack);
  Py_XDECREF(enter_stack);
  leave_stack = leave;
  enter_stack = enter;
  seen_since_step = staying = aside = false;
}

void outermost_forward_starts() { leave(); }

void outermost_forward_ended() { enter(); }

void optimizer_step_starts() {
  if (leave_stack == nullptr || staying) return;
  if (!seen_since_step) {
    staying = true;
    enter();
    return;
  }
  seen_since_step = false;
  leave();
}

void backward_seen() noexcept { seen_since_step = true; }

}  // namespace ophook::py::backward_window
