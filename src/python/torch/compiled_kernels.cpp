#include "torch/compiled_kernels.hpp"

#include <algorithm>
#include <cstddef>
#include <string_view>
#include <utility>
#include <vector>

#include <structmember.h>

#include "recording/call_recording.hpp"
#include "torch/handlers.hpp"
#include "torch/module_stack.hpp"

namespace ophook::py::compiled_kernels {
namespace {

/// A site's ids in the recorder that interned them.
struct InternedSite {
  std::uint32_t op_id = 0;
  SourceSite source;
};

struct Launcher {
  PyObject_HEAD
  vectorcallfunc vectorcall;
  PyObject* kernel;
  KernelSpec* spec;
  // Ids in the recorder that interned them (a Tracer's run may start another recorder), one per
  // site of spec.
  core::Recorder* interned_by;
  std::vector<InternedSite>* interned;
};

/// The op and source ids of each site of `self` in `recorder`, registered on the first launch
/// it records.
void intern_in(Launcher* self, core::Recorder& recorder) {
  if (self->interned_by == &recorder) return;
  const auto& spec = *self->spec;
  self->interned->clear();
  for (const auto& site : spec.sites) {
    InternedSite ids{recorder.op_id(spec.name, core::Level::Compiled, site.annotation), {}};
    if (!site.source_file.empty()) {
      ids.source.file_id = recorder.intern(site.source_file);
      ids.source.func_id = recorder.intern(site.source_function);
      ids.source.line = site.source_line;
    }
    self->interned->push_back(ids);
  }
  self->interned_by = &recorder;
}

/// Which of the kernel's sites launches it now: the one on the calling frame's line (the
/// generated call()), the first when none is (or there is only one).
std::size_t current_site(const KernelSpec& spec) {
  if (spec.sites.size() < 2) return 0;
  PyFrameObject* caller = PyEval_GetFrame();  // borrowed: call()'s frame
  if (caller == nullptr) return 0;
  const int line = PyFrame_GetLineNumber(caller);
  for (std::size_t i = 0; i < spec.sites.size(); ++i) {
    if (spec.sites[i].line == line) return i;
  }
  return 0;
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
PyObject* outputs_of(const KernelSpec& spec, const KernelSite& site, PyObject* const* args, std::size_t nargs,
                     PyObject* kwnames, PyObject* result) {
  if (spec.extern_call) {
    PyObject* out = keyword_argument(args, nargs, kwnames, "out");
    PyObject* chosen = out != nullptr ? out : result;
    Py_INCREF(chosen);
    return chosen;
  }
  PyObject* tuple = PyTuple_New(static_cast<Py_ssize_t>(site.writes.size()));
  if (tuple == nullptr) return nullptr;
  for (std::size_t i = 0; i < site.writes.size(); ++i) {
    const auto at = static_cast<std::size_t>(site.writes[i]);
    PyObject* value = at < nargs ? args[at] : Py_None;
    Py_INCREF(value);
    PyTuple_SET_ITEM(tuple, static_cast<Py_ssize_t>(i), value);
  }
  return tuple;
}

void capture_inputs(ValueCapture& capture, const KernelSpec& spec, const KernelSite& site, PyObject* const* args,
                    std::size_t nargs, PyObject* kwnames) {
  if (!spec.extern_call) {
    for (const int at : site.reads) {
      if (static_cast<std::size_t>(at) < nargs) capture.value(args[at]);
    }
    if (site.writes_inputs) capture.note_inputs_may_be_written();
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
  const auto& spec = *self->spec;
  const auto at = current_site(spec);
  const auto& site = spec.sites[at];
  const auto& ids = (*self->interned)[at];
  ThreadState* state = nullptr;
  recorder = recorder_for(ids.op_id, state);
  if (recorder == nullptr) return run();
  const auto phase = torch_handlers::current_phase(*state);
  const auto module = module_stack::current_module_id(phase);
  if (!module_stack::module_selected(module)) return run();
  PyObject* result = nullptr;
  auto capture = [&](ValueCapture& c) { capture_inputs(c, spec, site, args, nargs, kwnames); };
  // record_call takes the outputs as the call's result; the kernel's own result goes back to
  // the generated code.
  auto invoke = [&]() -> PyObject* {
    result = run();
    return result == nullptr ? nullptr : outputs_of(spec, site, args, nargs, kwnames, result);
  };
  // Without a line of the program's in the site's FX nodes (a library module compiled whole),
  // the launch's own: the line that called the compiled code, as eager recording would say.
  const SourceSite* source = ids.source.file_id != 0 ? &ids.source : nullptr;
  PyObject* outputs = record_call(*recorder, *state, ids.op_id, phase, module, capture, invoke, false,
                                  RecordUse::Recorded, source);
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
  delete self->interned;
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
  if (spec.sites.empty()) {
    PyErr_SetString(PyExc_ValueError, "a kernel launcher needs the site that launches the kernel");
    return nullptr;
  }
  PyTypeObject* type = launcher_type();
  if (type == nullptr) return nullptr;
  auto* self = PyObject_New(Launcher, type);
  if (self == nullptr) return nullptr;
  self->vectorcall = launch;
  Py_INCREF(kernel);
  self->kernel = kernel;
  for (auto& site : spec.sites) {
    site.writes_inputs = std::any_of(site.writes.begin(), site.writes.end(), [&](int at) {
      return std::find(site.reads.begin(), site.reads.end(), at) != site.reads.end();
    });
  }
  self->spec = new KernelSpec(std::move(spec));
  self->interned_by = nullptr;
  self->interned = new std::vector<InternedSite>();
  return reinterpret_cast<PyObject*>(self);
}

}  // namespace ophook::py::compiled_kernels
