#include "torch/tensors/tensors.hpp"

#include "ophook/process/fork_handlers.hpp"
#include "ophook/process/run_facts.hpp"
#include "torch/torch_device_module.hpp"

#include <pthread.h>

#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "ophook/capture/copy_memo.hpp"
#include "ophook/capture/strided_copy.hpp"
#include "recording/capture_budget.hpp"
#include "recording/value_capture.hpp"
#include "thread_state.hpp"
#include "torch/devices/device_path.hpp"
#include "torch/devices/device_readback.hpp"
#include "torch/tensors/dense_view.hpp"
#include "torch/tensors/dtypes.hpp"
#include "torch/tensors/values.hpp"

namespace ophook::py {
namespace {

using core::element_count;

/// torch objects that capture compares against, held for the life of the process.
struct TorchObjects {
  PyTypeObject* tensor_base = nullptr;  // torch._C.TensorBase: every tensor is one
  PyObject* strided = nullptr;          // torch.strided (the layout object)
  PyObject* plain_dispatch = nullptr;   // torch._C._disabled_torch_dispatch_impl
  PyObject* is_grad_enabled = nullptr;  // torch.is_grad_enabled
  PyObject* get_num_threads = nullptr;  // torch.get_num_threads
};
TorchObjects torch_objects;

/// Interned attribute names, so that each lookup skips building a string.
struct Names {
  PyObject *dtype, *shape, *is_cpu, *is_meta, *layout, *device, *stride, *data_ptr, *is_neg, *is_conj, *resolve_neg,
      *resolve_conj, *is_nested, *requires_grad, *torch_dispatch;
};
Names names;

bool intern_names() {
  auto n = [](const char* s) { return PyUnicode_InternFromString(s); };
  names = {n("dtype"),       n("shape"),        n("is_cpu"),    n("is_meta"),
           n("layout"),      n("device"),       n("stride"),    n("data_ptr"),
           n("is_neg"),      n("is_conj"),      n("resolve_neg"), n("resolve_conj"),
           n("is_nested"),   n("requires_grad"), n("__torch_dispatch__")};
  return names.torch_dispatch != nullptr;
}

/// Whether tensors of a type keep their elements in their own memory: torch.Tensor,
/// nn.Parameter and subclasses that do not take over dispatch. Of the wrapper subclasses, DTensor
/// is read through its local shard; the others (FakeTensor, FunctionalTensor, NJT …) get a spec only.
struct TypeVerdict {
  bool readable = false;
  bool local_shard = false;  // a DTensor
  std::uint32_t reason_id = 0;
};

/// Whether `type` is torch.distributed.tensor.DTensor or a subclass (its module imported by then).
bool is_dtensor_type(PyTypeObject* type) {
  PyRef name = PyRef::steal(PyUnicode_FromString("torch.distributed.tensor"));
  PyRef module = name ? PyRef::steal(PyImport_GetModule(name.get())) : PyRef();
  PyRef dtensor = module ? PyRef::steal(PyObject_GetAttrString(module.get(), "DTensor")) : PyRef();
  const int subclass = dtensor ? PyObject_IsSubclass(reinterpret_cast<PyObject*>(type), dtensor.get()) : 0;
  PyErr_Clear();
  return subclass == 1;
}

const TypeVerdict& type_verdict(core::Recorder& recorder, PyTypeObject* type) {
  static std::unordered_map<PyTypeObject*, TypeVerdict> cache;
  static PyTypeObject* last_type = nullptr;  // most calls see torch.Tensor over and over
  static const TypeVerdict* last_verdict = nullptr;
  if (type == last_type) return *last_verdict;
  if (auto it = cache.find(type); it != cache.end()) {
    last_type = type, last_verdict = &it->second;
    return it->second;
  }
  TypeVerdict verdict;
  PyRef dispatch = PyRef::steal(PyObject_GetAttr(reinterpret_cast<PyObject*>(type), names.torch_dispatch));
  PyErr_Clear();
  verdict.readable = dispatch.get() == torch_objects.plain_dispatch;
  verdict.local_shard = !verdict.readable && is_dtensor_type(type);
  if (!verdict.readable) {
    verdict.reason_id = recorder.intern(std::string("tensor subclass ") + type->tp_name + " with its own dispatch: spec only");
  }
  Py_INCREF(type);  // the key outlives any reuse of its address
  const auto& kept = cache.emplace(type, verdict).first->second;  // node-based: the address stays
  last_type = type, last_verdict = &kept;
  return kept;
}

PyRef attr(PyObject* object, PyObject* name) {
  PyRef value = PyRef::steal(PyObject_GetAttr(object, name));
  if (!value) PyErr_Clear();
  return value;
}

PyRef call(PyObject* object, PyObject* method) {
  PyRef value = PyRef::steal(PyObject_CallMethodNoArgs(object, method));
  if (!value) PyErr_Clear();
  return value;
}

/// Reads a tuple of Python ints (a torch.Size or a stride tuple); false for symbolic sizes.
bool read_ints(PyObject* tuple, std::vector<std::int64_t>& out) {
  if (tuple == nullptr || !PyTuple_Check(tuple)) return false;
  const Py_ssize_t n = PyTuple_GET_SIZE(tuple);
  out.resize(static_cast<std::size_t>(n));
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject* item = PyTuple_GET_ITEM(tuple, i);
    if (!PyLong_Check(item)) return false;
    out[static_cast<std::size_t>(i)] = PyLong_AsLongLong(item);
    if (out[static_cast<std::size_t>(i)] == -1 && PyErr_Occurred()) {
      PyErr_Clear();
      return false;
    }
  }
  return true;
}

bool is_true(const PyRef& value) { return value.get() == Py_True; }

/// Why a tensor whose sizes or memory could not be read has no data.
std::uint32_t diagnose(core::Recorder& recorder, PyObject* tensor) {
  if (is_true(attr(tensor, names.is_nested))) return recorder.intern("nested tensor: spec only");
  return recorder.intern("tensor memory not readable: spec only");
}

/// Copies `count` elements at `src` (C order, strides in bytes) into `out` in the file dtype, into
/// the budget's spare buffer when it has one; a tensor whose memory holds them in C order as the
/// file keeps them shares an earlier record's copy of the same bytes (core::copy_or_share).
void copy_elements(const std::byte* src, std::span<const std::int64_t> shape, std::span<const std::int64_t> strides,
                   const TorchDtype& dtype, std::size_t count, CopyBudget& budget, core::ArrayCapture& out,
                   bool c_order = false) {
  if (c_order && dtype.widen == nullptr) {
    core::copy_or_share(out, src, src, count * dtype.item_size, std::move(budget.spare));
    return;
  }
  std::byte* dst = out.reserve_data(count * dtype.saved_item_size, std::move(budget.spare));
  if (dtype.widen == nullptr) {
    core::strided_copy(dst, src, shape, strides, dtype.item_size);
  } else {
    auto packed = std::make_unique_for_overwrite<std::byte[]>(count * dtype.item_size);
    core::strided_copy(packed.get(), src, shape, strides, dtype.item_size);
    dtype.widen(dst, packed.get(), count);
  }
  out.captured = true;
}

/// Whether the tensor's conjugate or negative bit is set (or cannot be read): its memory then
/// holds other values than the tensor stands for.
bool has_lazy_bits(PyObject* tensor, const TorchDtype& dtype) {
  if (dtype.complex && call(tensor, names.is_conj).get() != Py_False) return true;
  return call(tensor, names.is_neg).get() != Py_False;
}

/// The tensor's dtype attribute, where its DLPack type is shared by several torch dtypes; null
/// when it cannot be had.
const TorchDtype* dtype_asked(core::Recorder& recorder, PyObject* tensor) {
  PyRef dtype_object = attr(tensor, names.dtype);
  return dtype_object ? torch_dtype(recorder, dtype_object.get()) : nullptr;
}

/// The common case — a CPU tensor in strided layout — read through torch's DLPack exporter: no
/// Python attribute, no allocation. False when the tensor needs the attribute path (other
/// layouts and devices, lazy conjugate/negative bits, a shape that changed while the GIL was
/// released to wait for the writer).
bool capture_dense(ValueCapture& capture, PyObject* tensor) {
  DenseTensorView view;
  if (!read_dense_view(tensor, view)) return false;
  const TorchDtype* dtype = view.dtype ? view.dtype : dtype_asked(capture.recorder(), tensor);
  if (dtype == nullptr) return false;
  std::span<const std::int64_t> shape(view.shape, view.ndim);
  // Checked in place: a tensor whose values lie in one block (in any order of its dimensions,
  // broadcast or not) stored as its file dtype (no widening; a lazy conjugate or negative bit changes no NaN or Inf).
  const auto block = capture.checks_in_place() && dtype->widen == nullptr
                         ? core::one_block_elements(shape, {view.strides, view.ndim})
                         : std::nullopt;
  // `stats`: a tensor in C order stored as its file dtype, whose memory holds the values it stands
  // for (no lazy conjugate or negative bit), is summarised where it lies.
  const bool summarised = capture.stats_in_place() && dtype->widen == nullptr && dtype->reason_id == 0 &&
                          core::is_c_order(shape, {view.strides, view.ndim}) && !has_lazy_bits(tensor, *dtype);
  const bool copy = !summarised && capture.copies(block.has_value()) && dtype->reason_id == 0;
  const bool live = !copy && block && dtype->reason_id == 0;
  if (copy && has_lazy_bits(tensor, *dtype)) return false;
  CopyBudget budget;
  if (copy) {
    const auto count = element_count(shape);
    budget = reserve_copy(capture, count * dtype->saved_item_size);
    // Waiting for the writer released the GIL: another thread may have resized the tensor.
    if (budget.copy && (!read_dense_view(tensor, view) || element_count({view.shape, view.ndim}) != count)) {
      return false;
    }
    shape = {view.shape, view.ndim};
  }
  auto& out = capture.new_array(tensor);
  out.shape.assign(shape.begin(), shape.end());
  out.set_strides({view.strides, view.ndim});
  out.dtype_id = dtype->dtype_id;
  out.no_data_reason_id = copy ? budget.reason_id : dtype->reason_id;
  if (live) {
    out.live = view.data;
    out.live_nbytes = *block * dtype->item_size;
  }
  if (summarised) capture.stats_in_place_of(out, view.data, element_count(shape) * dtype->item_size);
  if (budget.copy) {
    thread_local std::vector<std::int64_t> byte_strides;  // reused: no allocation per tensor
    byte_strides.assign(view.strides, view.strides + view.ndim);
    for (auto& s : byte_strides) s *= static_cast<std::int64_t>(dtype->item_size);
    copy_elements(view.data, shape, byte_strides, *dtype, element_count(shape), budget, out,
                  core::is_c_order(shape, {view.strides, view.ndim}));
  }
  return true;
}

/// Copies the tensor's elements through its Python attributes: conjugate and negative views are
/// materialized first (resolve_conj/resolve_neg), so the bytes are the values the tensor stands
/// for. Returns false when the memory cannot be read.
bool copy_through_attributes(ValueCapture& capture, PyObject* tensor, const TorchDtype& dtype,
                             core::ArrayCapture& out) {
  PyRef source = PyRef::borrow(tensor);
  if (dtype.complex && is_true(call(source.get(), names.is_conj))) source = call(source.get(), names.resolve_conj);
  if (source && is_true(call(source.get(), names.is_neg))) source = call(source.get(), names.resolve_neg);
  if (!source) return false;
  std::vector<std::int64_t> strides;
  PyRef stride_tuple = call(source.get(), names.stride);
  if (!read_ints(stride_tuple.get(), strides) || strides.size() != out.shape.size()) return false;
  PyRef pointer = call(source.get(), names.data_ptr);
  if (!pointer) return false;
  const auto address = PyLong_AsUnsignedLongLong(pointer.get());
  if (PyErr_Occurred()) {
    PyErr_Clear();
    return false;
  }
  const auto count = element_count(out.shape);
  if (count > 0 && address == 0) return false;
  auto budget = reserve_copy(capture, count * dtype.saved_item_size);
  if (!budget.copy) {
    out.no_data_reason_id = budget.reason_id;
    return true;
  }
  for (auto& s : strides) s *= static_cast<std::int64_t>(dtype.item_size);
  // data_ptr() hands the address over as a Python int: there is no pointer to derive it from.
  const auto* src = reinterpret_cast<const std::byte*>(static_cast<std::uintptr_t>(address));  // NOLINT(performance-no-int-to-ptr)
  copy_elements(src, out.shape, strides, dtype, count, budget, out);
  return true;
}

/// The tensor's own strides into the record (not those of a copy that resolved a lazy bit): the
/// view as the program has it, whichever way its values are read.
void record_strides(PyObject* tensor, core::ArrayCapture& out) {
  std::vector<std::int64_t> strides;
  PyRef stride_tuple = call(tensor, names.stride);
  if (read_ints(stride_tuple.get(), strides) && strides.size() == out.shape.size()) out.set_strides(strides);
}

std::uint32_t unknown_dtype(core::Recorder& recorder) {
  static const std::uint32_t id = recorder.intern_dtype({"unknown", "", ""});
  return id;
}

/// Everything else — sparse, nested, quantized, meta, other devices, wrapper subclasses, torch
/// without the DLPack exporter, and every tensor under OPHOOK_TENSOR_COPY=torch — described from
/// the tensor's Python attributes; dense tensors that the CPU path does not read are read
/// through torch (torch_device_path).
void capture_through_attributes(ValueCapture& capture, PyObject* tensor) {
  auto& recorder = capture.recorder();
  core::ArrayCapture out;
  const TorchDtype* dtype = nullptr;
  if (PyRef dtype_object = attr(tensor, names.dtype)) dtype = torch_dtype(recorder, dtype_object.get());
  out.dtype_id = dtype ? dtype->dtype_id : unknown_dtype(recorder);
  PyRef shape = attr(tensor, names.shape);
  if (dtype == nullptr || !read_ints(shape.get(), out.shape)) {
    out.shape.clear();
    out.no_data_reason_id = dtype ? diagnose(recorder, tensor) : recorder.intern("tensor dtype not readable: spec only");
    capture.add_array(tensor, std::move(out));
    return;
  }
  const bool on_cpu = is_true(attr(tensor, names.is_cpu));
  if (!on_cpu) out.device_id = recorder.intern(str_or(attr(tensor, names.device).get(), "?"));
  device_readback::Readback read;
  if (PyRef layout = attr(tensor, names.layout); layout.get() != torch_objects.strided) {
    out.no_data_reason_id = recorder.intern("layout " + str_or(layout.get(), "?") + ": spec only");
  } else if (const auto& verdict = type_verdict(recorder, Py_TYPE(tensor)); !verdict.readable) {
    out.no_data_reason_id = verdict.reason_id;
  } else if (dtype->reason_id != 0) {
    out.no_data_reason_id = dtype->reason_id;
  } else if (is_true(attr(tensor, names.is_meta))) {
    out.no_data_reason_id = recorder.intern("meta tensor: no values, never read");
  } else {
    record_strides(tensor, out);
    if (on_cpu && recorder.config().tensor_copy == core::TensorCopy::Auto) {
      if (capture.copies(false) && !copy_through_attributes(capture, tensor, *dtype, out)) {
        out.data.reset();
        out.nbytes = 0;
        out.captured = false;
        out.no_data_reason_id = diagnose(recorder, tensor);
      }
    } else if (capture.copies(false)) {
      read = read_through_torch(capture, tensor, *dtype, out, has_lazy_bits(tensor, *dtype));
    }
  }
  const auto index = capture.add_array(tensor, std::move(out));
  if (read.awaits()) device_readback::expect(capture.record(), index, std::move(read));
}

/// "cuda:N", interned: a CUDA tensor's device as str(tensor.device) names it.
std::uint32_t cuda_device_id(core::Recorder& recorder, std::int32_t ordinal) {
  static std::vector<std::uint32_t> ids;  // by ordinal, 0: not interned yet (the GIL guards it)
  const auto index = static_cast<std::size_t>(ordinal);
  if (index >= ids.size()) ids.resize(index + 1, 0);
  if (ids[index] == 0) ids[index] = recorder.intern("cuda:" + std::to_string(ordinal));
  return ids[index];
}

/// A strided tensor on a CUDA device (on the fake device, a CPU one) described from torch's DLPack
/// view — shape, strides, dtype and device without the Python attribute reads of
/// capture_through_attributes, each of which passes through the program's function modes — and
/// read by the device path. False when the attribute path must describe it: no view (sparse,
/// meta, quantized…), another device, a dtype DLPack does not tell.
bool capture_device_view(ValueCapture& capture, PyObject* tensor) {
  auto& recorder = capture.recorder();
  const auto tensor_copy = recorder.config().tensor_copy;
  DLTensor view;
  if (tensor_copy == core::TensorCopy::Torch || !read_any_device_view(tensor, view)) return false;
  const bool fake = tensor_copy == core::TensorCopy::FakeDevice;
  const TorchDtype* dtype = nullptr;
  if (view.device.device_type != (fake ? kDLCPU : kDLCUDA) || !dtype_of(view.dtype, dtype)) return false;
  if (dtype == nullptr) dtype = dtype_asked(recorder, tensor);
  if (dtype == nullptr) return false;
  core::ArrayCapture out;
  const auto ndim = static_cast<std::size_t>(view.ndim);
  out.shape.assign(view.shape, view.shape + ndim);
  if (view.strides != nullptr) out.set_strides({view.strides, ndim});
  out.dtype_id = dtype->dtype_id;
  if (!fake) out.device_id = cuda_device_id(recorder, view.device.device_id);
  device_readback::Readback read;
  if (dtype->reason_id != 0) {
    out.no_data_reason_id = dtype->reason_id;
  } else if (capture.copies(false)) {
    read = read_through_torch(capture, tensor, *dtype, out, has_lazy_bits(tensor, *dtype));
  }
  const auto index = capture.add_array(tensor, std::move(out));
  if (read.awaits()) device_readback::expect(capture.record(), index, std::move(read));
  return true;
}

/// A DTensor: this rank's local shard is captured in its place, with a note saying so.
void capture_local_shard(ValueCapture& capture, PyObject* tensor);

void capture_tensor(ValueCapture& capture, PyObject* tensor) {
  if (auto alias = capture.alias_of(tensor); alias >= 0) {
    auto& copy = capture.new_array(tensor);
    const auto& first = capture.record().arrays[static_cast<std::size_t>(alias)];
    copy.shape = first.shape;
    copy.strides = first.strides;
    copy.dtype_id = first.dtype_id;
    copy.device_id = first.device_id;
    copy.alias_of = alias;
    return;
  }
  BusyScope busy;  // attribute reads may reach torch's Python code (and its modes)
  const auto& verdict = type_verdict(capture.recorder(), Py_TYPE(tensor));
  if (verdict.local_shard) return capture_local_shard(capture, tensor);
  // OPHOOK_TENSOR_COPY=torch sends CPU tensors through torch too.
  const bool direct = capture.recorder().config().tensor_copy == core::TensorCopy::Auto;
  if (verdict.readable && direct && capture_dense(capture, tensor)) return;
  if (verdict.readable && capture_device_view(capture, tensor)) return;
  capture_through_attributes(capture, tensor);
}

void capture_local_shard(ValueCapture& capture, PyObject* tensor) {
  std::string note;
  PyRef local = local_shard(tensor, note);
  if (!local || !PyObject_TypeCheck(local.get(), torch_objects.tensor_base)) return capture_through_attributes(capture, tensor);
  capture_tensor(capture, local.get());
  auto& array = capture.record().arrays[capture.record().arrays.size() - 1];
  if (array.no_data_reason_id == 0) array.no_data_reason_id = capture.recorder().intern(note);
}

bool requires_grad(PyObject* tensor) {
  BusyScope busy;
  const bool wants_grad = is_true(attr(tensor, names.requires_grad));
  PyErr_Clear();
  return wants_grad;
}

bool grad_mode_enabled() {
  const bool enabled = is_true(PyRef::steal(PyObject_CallNoArgs(torch_objects.is_grad_enabled)));
  PyErr_Clear();
  return enabled;
}

/// torch's intra-op thread count as last noted in this process: -1 before the first note (and in
/// a forked child, whose run has its own summary).
long noted_torch_threads = -1;

/// Notes in summary.json (notes.torch_threads) the intra-op thread count the call at `seq` runs
/// with, when it differs from the last one noted: a product's or a reduction's bits depend on it,
/// and torch.set_num_threads is no call a mode sees, so replay learns it from here.
void note_torch_threads(core::Recorder& recorder, std::uint64_t seq) {
  const long threads = PyLong_AsLong(PyRef::steal(PyObject_CallNoArgs(torch_objects.get_num_threads)).get());
  if (threads == -1 && PyErr_Occurred()) {
    PyErr_Clear();
    return;
  }
  if (threads == noted_torch_threads) return;
  noted_torch_threads = threads;
  recorder.facts().update_note("torch_threads", [&](nlohmann::json& note) {
    note["changes"].push_back({{"seq", seq}, {"threads", threads}});
  });
}

bool capture_torch_value(ValueCapture& capture, PyObject* object) {
  if (PyObject_TypeCheck(object, torch_objects.tensor_base)) {
    const auto index = capture.record().arrays.size();
    capture_tensor(capture, object);
    if (capture.record().arrays.size() > index) {
      auto& array = capture.record().arrays[index];
      array.python_type = core::ArrayType::TorchTensor;
      // For replay, where arrays are copied for files (dump mode, the ring): whether the input
      // requires grad, and if one does, the grad mode the call ran in.
      if (capture.copies(/*dense=*/true) && !capture.in_outputs() && requires_grad(object)) {
        array.requires_grad = true;
        capture.record().grad_disabled = !grad_mode_enabled();
      }
      if (capture.copies(/*dense=*/true) && index == 0) note_torch_threads(capture.recorder(), capture.record().seq);
    }
    return true;
  }
  return capture_torch_non_tensor(capture, object);
}

}  // namespace

void forget_noted_torch_threads() noexcept { noted_torch_threads = -1; }

bool enable_torch_capture(PyObject* torch) {
  if (torch_objects.tensor_base != nullptr) return true;
  if (!intern_names()) {
    PyErr_Clear();
    return false;
  }
  PyObject* base = torch_attribute(torch, "_C.TensorBase");
  PyObject* strided = torch_attribute(torch, "strided");
  PyObject* plain = torch_attribute(torch, "_C._disabled_torch_dispatch_impl");
  PyObject* grad_mode = torch_attribute(torch, "is_grad_enabled");
  PyObject* threads = torch_attribute(torch, "get_num_threads");
  if (!base || !strided || !plain || !grad_mode || !threads || !PyType_Check(base) || !enable_torch_value_capture(torch)) {
    PyErr_Clear();
    Py_XDECREF(base), Py_XDECREF(strided), Py_XDECREF(plain), Py_XDECREF(grad_mode), Py_XDECREF(threads);
    return false;
  }
  torch_objects.get_num_threads = threads;
  core::set_fork_handler(core::ForkStage::TorchThreads, {nullptr, nullptr, []() noexcept { forget_noted_torch_threads(); }});
  torch_objects.tensor_base = reinterpret_cast<PyTypeObject*>(base);
  torch_objects.strided = strided;
  torch_objects.plain_dispatch = plain;
  torch_objects.is_grad_enabled = grad_mode;
  // Without torch's DLPack exporter (older torch), every tensor takes the attribute path.
  if (auto* recorder = core::Recorder::get()) {
    BusyScope busy;  // the dtype probe runs torch ops: not the program's calls
    enable_dense_views(*recorder, torch);
  }
  enable_device_path();
  register_array_like_capturer(&capture_torch_value);
  return true;
}

}  // namespace ophook::py
