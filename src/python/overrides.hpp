#pragma once
#include <cstdint>
#include <functional>
#include <string>

#include "python_common.hpp"

namespace ophook::py {

/// Replacement implementations registered with @ophook.override, by qualified op name, resolved
/// to op ids on first use. When no rule exists anywhere, has_overrides() is false and the hooks
/// pay one load. GIL required throughout.
bool has_overrides() noexcept;
void set_override(const std::string& op_name, PyObject* rule);
/// The rule for `op_id` (borrowed), or nullptr. Never while a rule of this thread is running:
/// calls a rule makes reach the real operators.
PyObject* override_for(std::uint32_t op_id) noexcept;

/// A Python callable that runs the original operator, bypassing every hook.
using OriginalFunction = std::function<PyObject*(PyObject* args, PyObject* kwargs)>;
PyObject* make_original_callable(OriginalFunction function);

/// Calls `rule(original, *args, **kwargs)` through ophook._overrides.invoke, which checks the
/// result's kind; marks this thread as inside a rule meanwhile. Returns a new reference or
/// nullptr with the rule's (or the check's) exception set.
PyObject* run_override(PyObject* rule, PyObject* original, std::uint32_t op_id, PyObject* args, PyObject* kwargs);

/// Calls a vectorcall function with a tuple and a dict (a new reference, or nullptr).
PyObject* call_vectorcall(vectorcallfunc function, PyObject* callable, PyObject* args, PyObject* kwargs);

/// Positional args of a vectorcall as a tuple and its keywords as a dict (new references).
PyObject* vectorcall_args_tuple(PyObject* const* args, Py_ssize_t nargs);
PyObject* vectorcall_kwargs_dict(PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames);

}  // namespace ophook::py
