#include "torch_bindings.hpp"

#include "device_readback.hpp"
#include "python_common.hpp"
#include "torch_handlers.hpp"
#include "torch_module_stack.hpp"
#include "torch_native.hpp"
#include "torch_tensors.hpp"

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

PyMethodDef fast_functions[] = {
    {"torch_module_enter", fastcall<&module_stack::forward_pre_hook>(), METH_FASTCALL,
     "Global nn.Module forward pre-hook: pushes the module on this thread's module stack."},
    {"torch_module_exit", fastcall<&module_stack::forward_hook>(), METH_FASTCALL,
     "Global nn.Module forward hook (always_call=True): pops the module."},
    {nullptr, nullptr, 0, nullptr},
};

}  // namespace

void bind_torch(pb::module_& m) {
  if (PyModule_AddFunctions(m.ptr(), fast_functions) != 0) throw pb::error_already_set();

  m.def(
      "torch_setup",
      [](const pb::object& torch, const pb::object& function_namer, const pb::object& dispatch_namer,
         const pb::object& module_namer) {
        module_stack::set_module_namer(module_namer.ptr());
        const bool handlers = torch_handlers::configure(torch.ptr(), function_namer.ptr(), dispatch_namer.ptr());
        return handlers && enable_torch_capture(torch.ptr());
      },
      pb::arg("torch"), pb::arg("function_namer"), pb::arg("dispatch_namer"), pb::arg("module_namer"),
      "Prepares torch capture: tensor capturer, op namers, module namer. False if torch lacks a needed piece.");
  m.def(
      "torch_bound_handler",
      [](const pb::object& mode, const std::string& level) {
        if (level != "torch_function" && level != "torch_dispatch") {
          throw pb::value_error("unknown torch level " + level);
        }
        // A builtin whose __self__ is the mode, as torch requires of a mode's handler.
        PyObject* bound = PyCFunction_New(
            level == "torch_function" ? &function_handler : &dispatch_handler, mode.ptr());
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
  m.def("torch_without_native", &torch_native::disable,
        "Tests, before torch_setup: capture torch values the way torch releases without the C++ "
        "functions ophook calls directly have them captured (through the exporter and Python).");
  m.def(
      "torch_reset",
      [] {
        torch_handlers::clear_caches();
        module_stack::clear_names();
      },
      "Forgets cached op and module names (at uninstall).");
}

}  // namespace ophook::py
