#include "torch/libtorch_symbols.hpp"

#include <dlfcn.h>

#include <cstddef>

namespace ophook::py::libtorch_symbols {
namespace {

// The parameter is `const at::Tensor&`: passed as the address of the at::Tensor.
using TensorConverter = void (*)(const void* tensor, DLTensor* out);
using GraphTaskId = int (*)();  // int in torch 2.13; a wider integer would still hold -1 in eax

constexpr const char* kTensorConverterSymbol = "_ZN2at17toDLPackNonOwningERKNS_6TensorEP8DLTensor";
constexpr const char* kGraphTaskIdSymbol = "_ZN5torch8autograd25get_current_graph_task_idEv";

TensorConverter tensor_converter = nullptr;
GraphTaskId graph_task_id = nullptr;
bool disabled = false;

/// torch._C's own library, already loaded: dlsym on it searches the libraries it depends on
/// (libtorch_cpu), which torch loads RTLD_LOCAL, out of reach of a global lookup.
void* torch_library(PyObject* torch) {
  PyRef c = PyRef::steal(PyObject_GetAttrString(torch, "_C"));
  PyRef file = c ? PyRef::steal(PyObject_GetAttrString(c.get(), "__file__")) : PyRef();
  const char* path = file && PyUnicode_Check(file.get()) ? PyUnicode_AsUTF8(file.get()) : nullptr;
  PyErr_Clear();
  return path ? dlopen(path, RTLD_LAZY | RTLD_NOLOAD) : nullptr;
}

/// THPVariable is {PyObject_HEAD; at::Tensor cdata; two hook pointers}. Older torch kept a
/// 16-byte c10::MaybeOwned<at::Tensor> there instead, which this size tells apart.
bool tensor_follows_header(PyObject* torch) {
  PyRef c = PyRef::steal(PyObject_GetAttrString(torch, "_C"));
  PyRef base = c ? PyRef::steal(PyObject_GetAttrString(c.get(), "TensorBase")) : PyRef();
  PyErr_Clear();
  return base && PyType_Check(base.get()) &&
         reinterpret_cast<PyTypeObject*>(base.get())->tp_basicsize ==
             static_cast<Py_ssize_t>(sizeof(PyObject) + 3 * sizeof(void*));
}

}  // namespace

void find(PyObject* torch) {
  if (disabled || (tensor_converter != nullptr && graph_task_id != nullptr)) return;
  void* library = torch_library(torch);
  if (library == nullptr) return;
  if (tensor_follows_header(torch)) {
    tensor_converter = reinterpret_cast<TensorConverter>(dlsym(library, kTensorConverterSymbol));
  }
  graph_task_id = reinterpret_cast<GraphTaskId>(dlsym(library, kGraphTaskIdSymbol));
}

bool has_tensor_converter() { return tensor_converter != nullptr; }

bool describe_tensor(PyObject* tensor, DLTensor& out) noexcept {
  const auto* cdata = reinterpret_cast<const std::byte*>(tensor) + sizeof(PyObject);
  try {
    tensor_converter(cdata, &out);
    return true;
  } catch (...) {  // c10::Error for what DLPack cannot express
    return false;
  }
}

bool has_graph_task_id() { return graph_task_id != nullptr; }

bool in_backward_pass() noexcept { return graph_task_id() != -1; }

void disable() {
  disabled = true;
  tensor_converter = nullptr;
  graph_task_id = nullptr;
}

}  // namespace ophook::py::libtorch_symbols
