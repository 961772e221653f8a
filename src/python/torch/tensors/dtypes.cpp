#include "torch/tensors/dtypes.hpp"

#include <array>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "device/kernel/statistics_kernel.hpp"

namespace ophook::py {
namespace {

/// A torch dtype's file form: npy descr, the NumPy name when it differs from torch's, and the
/// widener that produces it.
struct SavedForm {
  std::string_view torch_name;
  std::string_view descr;
  std::string_view saved_name;  // empty: same as torch_name
};

constexpr std::array kSavedForms = {
    SavedForm{"float16", "<f2", ""},         SavedForm{"float32", "<f4", ""},
    SavedForm{"float64", "<f8", ""},         SavedForm{"bfloat16", "<f4", "float32"},
    SavedForm{"float8_e4m3fn", "<f4", "float32"},   SavedForm{"float8_e4m3fnuz", "<f4", "float32"},
    SavedForm{"float8_e5m2", "<f4", "float32"},     SavedForm{"float8_e5m2fnuz", "<f4", "float32"},
    SavedForm{"float8_e8m0fnu", "<f4", "float32"},  SavedForm{"complex32", "<c8", "complex64"},
    SavedForm{"complex64", "<c8", ""},       SavedForm{"complex128", "<c16", ""},
    SavedForm{"bool", "|b1", ""},            SavedForm{"int8", "|i1", ""},
    SavedForm{"uint8", "|u1", ""},           SavedForm{"int16", "<i2", ""},
    SavedForm{"int32", "<i4", ""},           SavedForm{"int64", "<i8", ""},
    SavedForm{"uint16", "<u2", ""},          SavedForm{"uint32", "<u4", ""},
    SavedForm{"uint64", "<u8", ""},
    // Packed and raw-bit dtypes have no NumPy counterpart: their bytes are saved unchanged.
    SavedForm{"float4_e2m1fn_x2", "|u1", "uint8"},  SavedForm{"bits8", "|u1", "uint8"},
    SavedForm{"bits16", "<u2", "uint16"},    SavedForm{"bits1x8", "|u1", "uint8"},
    SavedForm{"bits2x4", "|u1", "uint8"},    SavedForm{"bits4x2", "|u1", "uint8"},
};

const SavedForm* saved_form(std::string_view name) {
  for (const auto& form : kSavedForms) {
    if (form.torch_name == name) return &form;
  }
  return nullptr;
}

std::string dtype_name(PyObject* dtype) {
  auto name = str_or(dtype, "");  // "torch.float32"
  if (name.starts_with("torch.")) name.erase(0, 6);
  return name;
}

std::size_t dtype_itemsize(PyObject* dtype) {
  PyRef size = PyRef::steal(PyObject_GetAttrString(dtype, "itemsize"));
  const long n = size ? PyLong_AsLong(size.get()) : -1;
  if (n <= 0) {
    PyErr_Clear();
    return 0;
  }
  return static_cast<std::size_t>(n);
}

/// The device kernel's element kind for a torch dtype name; kNone for the dtypes it does not read
/// (those then take the generic device path).
std::uint32_t kernel_kind(std::string_view name) {
  namespace k = device::statistics_kernel;
  static constexpr std::pair<std::string_view, k::ElementKind> kinds[] = {
      {"bool", k::kBool},         {"int8", k::kInt8},           {"uint8", k::kUInt8},
      {"int16", k::kInt16},       {"uint16", k::kUInt16},       {"int32", k::kInt32},
      {"uint32", k::kUInt32},     {"int64", k::kInt64},         {"uint64", k::kUInt64},
      {"float16", k::kFloat16},   {"bfloat16", k::kBFloat16},   {"float32", k::kFloat32},
      {"float64", k::kFloat64},   {"complex64", k::kComplex64}, {"complex128", k::kComplex128},
      {"float8_e4m3fn", k::kFloat8E4M3FN}, {"float8_e5m2", k::kFloat8E5M2},
  };
  for (const auto& [torch_name, kind] : kinds) {
    if (torch_name == name) return kind;
  }
  return k::kNone;
}

TorchDtype describe(core::Recorder& recorder, PyObject* dtype, const std::string& name) {
  TorchDtype out;
  out.kernel_kind = kernel_kind(name);
  out.item_size = dtype_itemsize(dtype);
  const SavedForm* form = saved_form(name);
  out.complex = name.starts_with("complex");
  if (form != nullptr && out.item_size > 0) {
    out.widen = widener_for(name.c_str());
    // The descr's digits are the file's element size ("<c8": 8 bytes per complex64 element).
    out.saved_item_size = std::stoul(std::string(form->descr.substr(2)));
    out.savable = out.widen != nullptr || out.saved_item_size == out.item_size;
  }
  if (!out.savable) {
    out.reason_id = recorder.intern(name.starts_with("q") ? "quantized tensor: spec only"
                                                          : "dtype " + name + " has no NumPy form: spec only");
  }
  out.dtype_id = recorder.intern_dtype({name, out.savable ? std::string(form->descr) : "",
                                        form ? std::string(form->saved_name) : ""});
  return out;
}

}  // namespace

const TorchDtype* torch_dtype(core::Recorder& recorder, PyObject* dtype) {
  static std::unordered_map<PyObject*, TorchDtype> cache;
  if (auto it = cache.find(dtype); it != cache.end()) return &it->second;
  const auto name = dtype_name(dtype);
  if (name.empty()) return nullptr;
  Py_INCREF(dtype);  // keeps the key's address from being reused (dtypes are immortal singletons anyway)
  return &cache.emplace(dtype, describe(recorder, dtype, name)).first->second;
}

}  // namespace ophook::py
