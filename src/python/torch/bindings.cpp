#include "torch/bindings.hpp"

#include <pybind11/stl.h>

#include <string>
#include <tuple>
#include <vector>

#include "device/driver/nvrtc_compiler.hpp"
#include "python_common.hpp"
#include "recording/source_location.hpp"
#include "recording/step_counter.hpp"
#include "thread_state.hpp"
#include "torch/backward/backward_check.hpp"
#include "torch/backward/backward_modules.hpp"
#include "torch/backward/node_modules.hpp"
#include "torch/backward_window.hpp"
#include "torch/collectives/collective_records.hpp"
#include "torch/compiled_kernels.hpp"
#include "torch/devices/device_path.hpp"
#include "torch/devices/held_records.hpp"
#include "torch/handlers.hpp"
#include "torch/libtorch_symbols.hpp"
#include "torch/module_names.hpp"
#include "torch/module_stack.hpp"
#include "torch/monitor/json_line.hpp"
#include "torch/monitor/statistics_pass.hpp"
#include "torch/tensors/tensors.hpp"
#include "torch/torch_device_module.hpp"

namespace pb = pybind11;

namespace ophook::py {
namespace {

template <PyObject* (*F)(PyObject*, PyObject* const*, Py_ssize_t)>
PyCFunction fastcall() {
  return reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(F));
}

// The per-call entry points are plain METH_FASTCALL functions rather than pybind11 functions:
// they run once per torch op (or module call), where pybind11's argument dispatch would cost
// more than the rest of the pass-through.
PyMethodDef function_handler{"__torch_function__", fastcall<&torch_handlers::on_torch_function>(),
                             METH_FASTCALL,
                             "ophook's TorchFunctionMode handler: func(*args, **kwargs), recorded at "
                             "level torch_function."};
PyMethodDef dispatch_handler{"__torch_dispatch__", fastcall<&torch_handlers::on_torch_dispatch>(),
                             METH_FASTCALL,
                             "ophook's TorchDispatchMode handler: func(*args, **kwargs), recorded at "
                             "level torch_dispatch."};

PyObject* optimizer_enter(PyObject*, PyObject* const*, Py_ssize_t) {
  ++thread_state().in_optimizer;
  backward_window::optimizer_step_starts();
  Py_RETURN_NONE;
}

PyObject* optimizer_exit(PyObject*, PyObject* const*, Py_ssize_t) {
  auto& state = thread_state();
  if (state.in_optimizer > 0) --state.in_optimizer;
  steps::complete_one();
  Py_RETURN_NONE;
}

// An optimizer step that compiled code entered or completed: the __setattr__ of ophook._torch.modes'
// step mark, called as (name, count) by the attribute writes Dynamo replays around the graphs
// of a compiled optimizer.step() (see ophook._torch.modes._StepMark).
PyObject* compiled_optimizer_mark(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 2 || !PyUnicode_Check(args[0])) {
    PyErr_SetString(PyExc_TypeError, "compiled_optimizer_mark(name, count)");
    return nullptr;
  }
  const long long count = PyLong_AsLongLong(args[1]);
  if (count == -1 && PyErr_Occurred()) return nullptr;
  auto& state = thread_state();
  if (PyUnicode_CompareWithASCIIString(args[0], "entered") == 0) {
    state.in_optimizer += static_cast<int>(count);
  } else if (PyUnicode_CompareWithASCIIString(args[0], "completed") == 0) {
    for (long long i = 0; i < count; ++i) {
      if (state.in_optimizer > 0) --state.in_optimizer;
      steps::complete_one();
    }
  } else {
    PyErr_Format(PyExc_AttributeError, "the step mark has no attribute %R", args[0]);
    return nullptr;
  }
  Py_RETURN_NONE;
}

PyMethodDef fast_functions[] = {
    {"torch_module_enter", fastcall<&module_stack::forward_pre_hook>(), METH_FASTCALL,
     "Global nn.Module forward pre-hook: pushes the module on this thread's module stack."},
    {"torch_module_exit", fastcall<&module_stack::forward_hook>(), METH_FASTCALL,
     "Global nn.Module forward hook (always_call=True): pops the module."},
    {"torch_optimizer_enter", fastcall<&optimizer_enter>(), METH_FASTCALL,
     "Global optimizer step pre-hook: the ops until the step returns have phase 'optimizer'."},
    {"torch_optimizer_exit", fastcall<&optimizer_exit>(), METH_FASTCALL,
     "Global optimizer step post-hook: one more step is complete."},
    {"torch_compiled_optimizer_mark", fastcall<&compiled_optimizer_mark>(), METH_FASTCALL,
     "(name, count): compiled code entered ('entered') or completed ('completed') `count` optimizer steps."},
    {nullptr, nullptr, 0, nullptr},
};

}  // namespace

void bind_torch(pb::module_& m) {
  if (PyModule_AddFunctions(m.ptr(), fast_functions) != 0) throw pb::error_already_set();

  m.def(
      "torch_setup",
      [](const pb::object& torch, const pb::object& function_namer, const pb::object& dispatch_namer,
         const pb::object& module_namer) {
        module_names::set_module_namer(module_namer.ptr());
        const bool handlers = torch_handlers::configure(torch.ptr(), function_namer.ptr(), dispatch_namer.ptr());
        return handlers && enable_torch_capture(torch.ptr());
      },
      pb::arg("torch"), pb::arg("function_namer"), pb::arg("dispatch_namer"), pb::arg("module_namer"),
      "Prepares torch capture: tensor capturer, op namers, module namer. False if torch lacks a needed piece.");
  m.def(
      "torch_bound_handler",
      [](const pb::object& mode, const std::string& level) {
        PyMethodDef* handler = level == "torch_function"   ? &function_handler
                               : level == "torch_dispatch" ? &dispatch_handler
                                                           : nullptr;
        if (handler == nullptr) throw pb::value_error("unknown torch level " + level);
        // A builtin whose __self__ is the mode, as torch requires of a mode's handler.
        PyObject* bound = PyCFunction_New(handler, mode.ptr());
        if (bound == nullptr) throw pb::error_already_set();
        return pb::reinterpret_steal<pb::object>(bound);
      },
      pb::arg("mode"), pb::arg("level"),
      "The mode's handler for `level` (torch_function / torch_dispatch), a builtin bound to "
      "`mode`: handler(func, types, args=(), kwargs=None) runs func(*args, **kwargs) and "
      "records the call.");
  m.def(
      "torch_set_compiled_region_markers",
      [](const pb::list& codes) {
        std::vector<PyObject*> out;
        for (const auto& code : codes) {
          if (!PyCode_Check(code.ptr())) throw pb::type_error("code objects expected");
          out.push_back(code.ptr());
        }
        torch_handlers::set_compiled_region_markers(out);
      },
      "OPHOOK_COMPILE=ignore: calls made below a frame running one of these code objects are not recorded.");
  m.def(
      "torch_set_backward_window",
      [](const pb::object& leave, const pb::object& enter) {
        if (leave.is_none() || enter.is_none()) {
          backward_window::set(nullptr, nullptr);
        } else {
          backward_window::set(leave.ptr(), enter.ptr());
        }
      },
      pb::arg("leave"), pb::arg("enter"),
      "The monitor alone: leave() -> bool takes the torch_function mode off this thread's stack when an "
      "outermost forward or an optimizer step starts, enter() puts it back when an outermost forward ends "
      "(backward_window.hpp). Nones switch it off.");
  m.def(
      "torch_set_jit_guard",
      [](const pb::object& probe, const pb::object& traced_type, const pb::object& guard) {
        if (probe.is_none() || guard.is_none() || !PyType_Check(traced_type.ptr())) {
          module_stack::set_jit_guard(nullptr, nullptr, nullptr);
        } else {
          module_stack::set_jit_guard(probe.ptr(), traced_type.ptr(), guard.ptr());
        }
      },
      pb::arg("probe"), pb::arg("traced_type"), pb::arg("guard"),
      "torch.jit: the module hooks call guard(module, entering) -> bool (mode aside) when a forward starts "
      "while probe() returns a tracing state or the module is a traced_type, and at every forward start "
      "and end while the mode is aside. Nones switch it off.");
  m.def(
      "torch_read_back_held",
      [] {
        device_readback::resolve_held();
        pb::gil_scoped_release release;
        if (auto* recorder = core::Recorder::get()) recorder->flush();
      },
      "At exit: reads back what records held for their device values wait for, submits them and "
      "waits until they are written (a Tracer never stopped finishes no run).");
  m.def(
      "torch_track_backward_modules",
      [](const pb::object& tracker, const pb::object& queue_callback, const pb::object& graph_task_id) {
        module_stack::set_backward_tracker(tracker.is_none() ? nullptr : tracker.ptr());
        backward_modules::set_engine(queue_callback.is_none() ? nullptr : queue_callback.ptr(),
                                     graph_task_id.is_none() ? nullptr : graph_task_id.ptr());
      },
      pb::arg("tracker"), pb::arg("queue_callback"), pb::arg("graph_task_id"),
      "Backward module attribution: the module hooks call tracker(module, values, is_output) (None: off); "
      "queue_callback is the autograd engine's, to reset the backward module stack after each pass, "
      "graph_task_id torch._C._current_graph_task_id, to tell passes apart.");
  m.def(
      "torch_backward_hook",
      [](const pb::object& module, bool entering, std::uint32_t expected) {
        PyObject* hook = backward_modules::hook_for(module.ptr(), entering, expected);
        if (hook == nullptr) throw pb::error_already_set();
        return pb::reinterpret_steal<pb::object>(hook);
      },
      pb::arg("module"), pb::arg("entering"), pb::arg("expected"),
      "The gradient hook to register on each of the `expected` tensors a forward of `module` returned "
      "(entering: its backward starts at the first gradient of a pass) or was given (leaving: it ends at the "
      "last).");
  m.def(
      "torch_set_backward_check",
      [](bool on, const pb::object& next_sequence_number) {
        backward_check::enable(on);
        node_modules::enable(on && !next_sequence_number.is_none() ? next_sequence_number.ptr() : nullptr);
      },
      pb::arg("on"), pb::arg("next_sequence_number"),
      "OPHOOK_NAN without the torch_dispatch level: around each backward entry the torch_function level "
      "sees, the autograd nodes below it are hooked and what each computes is checked for NaN/Inf's birth. "
      "next_sequence_number is torch._C._autograd._get_sequence_nr, by which a node's module is found "
      "(None: culprits of backward passes name no module).");
  m.def(
      "torch_set_backward_observer", [](const pb::object& observer) { torch_handlers::set_backward_observer(observer.ptr()); },
      pb::arg("observer"),
      "observer(args) for each torch.Tensor.backward / torch.autograd.backward call, before it runs (the "
      "training monitor's loss); None removes it.");
  m.def("monitor_parameter_statistics", &monitor::parameter_statistics, pb::arg("weights"), pb::arg("grads"),
        pb::arg("befores"),
        "The training monitor's statistics of CPU float32/float64 parameters, one pass per array: per "
        "parameter None (not readable here) or ((sum of squares, min, max, nan, inf) of the weight, the same "
        "of the gradient or None, the update's sum of squares or None); each weight is then copied into its before.");
  m.def("monitor_tensor_statistics", &monitor::tensor_statistics, pb::arg("tensor"),
        "The training monitor's (sum of squares, min, max, nan, inf) of a contiguous CPU float32/float64 tensor "
        "(a module's output, its gradient), or None where it cannot be read here.");
  m.def("monitor_json_line", &monitor::json_line, pb::arg("line"),
        "A monitor.jsonl line (dicts, lists, str, int, float, bool, None) as JSON text, each float in the "
        "fewest digits that read back to it; ValueError for NaN/Inf, TypeError for anything else.");
  m.def("collective_op", &collectives::op_id, pb::arg("name"),
        "The op id of a c10d collective (\"c10d.allreduce_\"), registered at level collective.");
  m.def(
      "collective_begin",
      [](std::uint32_t op_id, pb::handle values, const std::string& group, const std::string& ranks,
         std::uint64_t group_seq, std::int64_t peer) {
        return pb::reinterpret_steal<pb::object>(collectives::begin(op_id, values.ptr(), group, ranks, group_seq, peer));
      },
      pb::arg("op_id"), pb::arg("values"), pb::arg("group"), pb::arg("ranks"), pb::arg("group_seq"),
      pb::arg("peer"),
      "Opens a collective's record (its arguments read now); a token for collective_end, or None when "
      "the call is not recorded.");
  m.def(
      "collective_end",
      [](pb::handle token, pb::handle outputs, pb::handle error, bool async_op) {
        collectives::complete(token.ptr(), outputs.ptr(), error.ptr(), async_op);
      },
      pb::arg("token"), pb::arg("outputs"), pb::arg("error"), pb::arg("async_op"),
      "Closes a collective's record once its work completed (its outputs read now) and submits it.");
  m.def("torch_set_module_filter", &module_stack::set_module_filter, pb::arg("pattern"),
        "OPHOOK_MODULES: record only torch calls inside modules whose dotted path matches (\"\" = all).");
  m.def(
      "torch_notice_compiled_calls",
      [](const pb::list& codes) {
        std::vector<PyObject*> out;
        for (const auto& code : codes) out.push_back(code.ptr());
        notice_compiled_calls(out);
      },
      "OPHOOK_COMPILE=eager: say once on stderr, at the first recorded call below one of these code objects, "
      "that compiled code runs eagerly.");
  m.def("torch_without_native", &libtorch_symbols::disable,
        "Tests, before torch_setup: capture torch values the way torch releases without the C++ "
        "functions ophook calls directly have them captured (through the exporter and Python).");
  m.def(
      "torch_compiled_kernel",
      [](const pb::object& kernel, std::string name, bool extern_call,
         const std::vector<std::tuple<int, std::string, std::vector<int>, std::vector<int>, std::string, std::string,
                                      int>>& sites) {
        compiled_kernels::KernelSpec spec;
        spec.name = std::move(name), spec.extern_call = extern_call;
        for (const auto& [line, annotation, reads, writes, file, function, source_line] : sites) {
          spec.sites.push_back({line, annotation, reads, writes, false, file, function, source_line});
        }
        PyObject* launcher = compiled_kernels::new_launcher(kernel.ptr(), std::move(spec));
        if (launcher == nullptr) throw pb::error_already_set();
        return pb::reinterpret_steal<pb::object>(launcher);
      },
      pb::arg("kernel"), pb::arg("name"), pb::arg("extern_call"), pb::arg("sites"),
      "OPHOOK_COMPILE=record: a callable that runs `kernel` and records each launch as op `name` at level "
      "compiled, as the site on the calling line says. `sites`: (line of call(), annotation (JSON fields for "
      "its trace lines), positional arguments read, written (extern_call: every argument read, out= or the "
      "result written), the user's file, function, line).");
  m.attr("KernelLauncher") = pb::reinterpret_borrow<pb::object>(compiled_kernels::launcher_type_object());
  m.def(
      "torch_compile_statistics_kernel",
      [](int major, int minor) {
        std::string why;
        const auto kernel = device::compile_statistics_kernel(major, minor, nvrtc_libraries(), why);
        if (!kernel) throw std::runtime_error(why);
        return pb::make_tuple(kernel->target, pb::bytes(kernel->image), kernel->from_cache);
      },
      pb::arg("major"), pb::arg("minor"),
      "Has the device statistics kernel for compute capability major.minor as the first CUDA tensor does: from "
      "the kernel cache, else compiled with NVRTC and kept there: (target, image, from_cache). Raises RuntimeError "
      "with NVRTC's log when it cannot (tests; no GPU needed).");
  m.def(
      "torch_reset",
      [] {
        torch_handlers::clear_caches();
        module_names::clear_names();
      },
      "Forgets cached op and module names (at uninstall).");
}

}  // namespace ophook::py
