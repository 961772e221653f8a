#include "torch/compiled_kernels.hpp"

#include <algorithm>
#include <cstddef>
#include <string_view>
#include <utility>

#include <structmember.h>

#include "call_recording.hpp"
#include "torch/handlers.hpp"
#include "torch/module_stack.hpp"

namespace ophook::py::compiled_kernels {
namespace {

struct Launcher {
  PyObject_HEAD
  vectorcallfunc vectorcall;
  PyObject* kernel;
  KernelSpec* spec;
  // Ids in the recorder that interned them (a Tracer's run may start another recorder).
  core::Recorder* interned_by;
  std::uint32_t op_id;
  SourceSite site;
};

/// The op and source ids of `self` in `recorder`, registered on the first launch it records.
void intern_in(Launcher* self, core::Recorder& recorder) {
  if (self->interned_by == &recorder) return;
  const auto& spec = *self->spec;
  self->op_id = recorder.op_id(spec.name, core::Level::Compiled, spec.annotation);
  self->site = {};
  if (!spec.source_file.empty()) {
    self->site.file_id = recorder.intern(spec.source_file);
    self->site.func_id = recorder.intern(spec.source_function);
    self->site.line = spec.source_line;
  }
  self->interned_by = &recorder;
}

PyObject* keyword_argument(PyObject* const* args, std::size_t nargs, PyObject* kwnames, std::string_view name) {
  if (kwnames == nullptr) return nullptr;
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(kwnames); ++i) {
    const char* key = PyUnicode_AsUTF8(PyTuple_GET_ITEM(kwnames, i));
    if (key != nullptr && name == key) return args[nargs + static_cast<std::size_t>(i)];
  }
  PyErr_Clear();
  return nullptr;
}

/// The launch's outputs as record_call captures them: the written pointers' tensors, an extern
/// kernel's out= (a tensor or a sequence of them) or its result.
PyObject* outputs_of(const KernelSpec& spec, PyObject* const* args, std::size_t nargs, PyObject* kwnames,
                     PyObject* result) {
  if (spec.extern_call) {
    PyObject* out = keyword_argument(args, nargs, kwnames, "out");
    PyObject* chosen = out != nullptr ? out : result;
    Py_INCREF(chosen);
    return chosen;
  }
  PyObject* tuple = PyTuple_New(static_cast<Py_ssize_t>(spec.writes.size()));
  if (tuple == nullptr) return nullptr;
  for (std::size_t i = 0; i < spec.writes.size(); ++i) {
    const auto at = static_cast<std::size_t>(spec.writes[i]);
    PyObject* value = at < nargs ? args[at] : Py_None;
    Py_INCREF(value);
    PyTuple_SET_ITEM(tuple, static_cast<Py_ssize_t>(i), value);
  }
  return tuple;
}

void capture_inputs(ValueCapture& capture, const KernelSpec& spec, PyObject* const* args, std::size_t nargs,
                    PyObject* kwnames) {
  if (!spec.extern_call) {
    for (const int at : spec.reads) {
      if (static_cast<std::size_t>(at) < nargs) capture.value(args[at]);
    }
    if (spec.writes_inputs) capture.note_inputs_may_be_written();
    capture.begin_kwargs();
    return;
  }
  for (std::size_t i = 0; i < nargs; ++i) capture.value(args[i]);
  capture.begin_kwargs();
  if (kwnames == nullptr) return;
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(kwnames); ++i) {
    const char* key = PyUnicode_AsUTF8(PyTuple_GET_ITEM(kwnames, i));
    if (key == nullptr) {
      PyErr_Clear();
      continue;
    }
    if (std::string_view(key) == "out") continue;  // written, not read: an output
    capture.key(key);
    capture.value(args[nargs + static_cast<std::size_t>(i)]);
  }
}

PyObject* launch(PyObject* callable, PyObject* const* args, std::size_t nargsf, PyObject* kwnames) {
  auto* self = reinterpret_cast<Launcher*>(callable);
  const std::size_t nargs = PyVectorcall_NARGS(nargsf);
  auto& running = thread_state().in_kernel;
  // The torch calls an extern kernel makes (torch.mm…) are the kernel's work: no other level's.
  auto run = [&] {
    ++running;
    PyObject* result = PyObject_Vectorcall(self->kernel, args, nargsf, kwnames);
    --running;
    return result;
  };
  auto* recorder = core::Recorder::get();
  if (recorder == nullptr) return run();
  intern_in(self, *recorder);
  ThreadState* state = nullptr;
  recorder = recorder_for(self->op_id, state);
  if (recorder == nullptr) return run();
  const auto phase = torch_handlers::current_phase(*state);
  const auto module = module_stack::current_module_id(phase);
  if (!module_stack::module_selected(module)) return run();
  const auto& spec = *self->spec;
  PyObject* result = nullptr;
  auto capture = [&](ValueCapture& c) { capture_inputs(c, spec, args, nargs, kwnames); };
  // record_call takes the outputs as the call's result; the kernel's own result goes back to
  // the generated code.
  auto invoke = [&]() -> PyObject* {
    result = run();
    return result == nullptr ? nullptr : outputs_of(spec, args, nargs, kwnames, result);
  };
  // Without a line of the program's in the kernel's FX nodes (a library module compiled whole),
  // the launch's own: the line that called the compiled code, as eager recording would say.
  const SourceSite* site = self->site.file_id != 0 ? &self->site : nullptr;
  PyObject* outputs = record_call(*recorder, *state, self->op_id, phase, module, capture, invoke, false,
                                  RecordUse::Recorded, site);
  if (outputs == nullptr) {  // the kernel raised, or OPHOOK_NAN=raise replaced its outputs
    Py_XDECREF(result);
    return nullptr;
  }
  Py_DECREF(outputs);
  return result;
}

void dealloc(PyObject* object) {
  auto* self = reinterpret_cast<Launcher*>(object);
  PyTypeObject* type = Py_TYPE(object);
  Py_XDECREF(self->kernel);
  delete self->spec;
  PyObject_Free(object);
  Py_DECREF(type);  // instances of a heap type hold a reference to it
}

PyObject* repr(PyObject* object) {
  return PyUnicode_FromFormat("<ophook launcher of %s>", reinterpret_cast<Launcher*>(object)->spec->name.c_str());
}

PyTypeObject* launcher_type() {
  static PyMemberDef members[] = {
      {"__vectorcalloffset__", T_PYSSIZET, static_cast<Py_ssize_t>(offsetof(Launcher, vectorcall)), READONLY, nullptr},
      {nullptr, 0, 0, 0, nullptr}};
  static PyType_Slot slots[] = {
      {Py_tp_dealloc, reinterpret_cast<void*>(&dealloc)},
      {Py_tp_repr, reinterpret_cast<void*>(&repr)},
      {Py_tp_call, reinterpret_cast<void*>(&PyVectorcall_Call)},
      {Py_tp_members, members},
      {Py_tp_doc, const_cast<char*>("A kernel of torch.compile'd code whose launches ophook records "
                                    "(OPHOOK_COMPILE=record).")},
      {0, nullptr}};
  static PyType_Spec spec{"ophook.KernelLauncher", static_cast<int>(sizeof(Launcher)), 0,
                          Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL, slots};
  static PyTypeObject* type = reinterpret_cast<PyTypeObject*>(PyType_FromSpec(&spec));  // held for the process
  return type;
}

}  // namespace

PyObject* launcher_type_object() { return reinterpret_cast<PyObject*>(launcher_type()); }

PyObject* new_launcher(PyObject* kernel, KernelSpec spec) {
  PyTypeObject* type = launcher_type();
  if (type == nullptr) return nullptr;
  auto* self = PyObject_New(Launcher, type);
  if (self == nullptr) return nullptr;
  self->vectorcall = launch;
  Py_INCREF(kernel);
  self->kernel = kernel;
  spec.writes_inputs = std::any_of(spec.writes.begin(), spec.writes.end(), [&](int at) {
    return std::find(spec.reads.begin(), spec.reads.end(), at) != spec.reads.end();
  });
  self->spec = new KernelSpec(std::move(spec));
  self->interned_by = nullptr;
  self->op_id = 0;
  self->site = {};
  return reinterpret_cast<PyObject*>(self);
}

}  // namespace ophook::py::compiled_kernels
