// What an op's name tells about its results.
#include "ophook/model/op_kinds.hpp"

#include <algorithm>
#include <array>

namespace ophook::core {
namespace {

/// The function name inside a qualified op: "torch.Tensor.new_empty" → "new_empty",
/// "aten.empty.memory_format" → "empty" (aten names end in an overload), and the same for the op
/// reached through torch.ops at the torch_function level, "torch.ops.aten.empty.memory_format"
/// (DDP's forward calls it so): both name one aten op.
/// "torch.ops.aten.X.overload" (an aten op reached through torch.ops at the torch_function level)
/// as the aten op it names, "aten.X.overload"; any other name as it is.
std::string_view as_aten(std::string_view op) {
  if (op.starts_with("torch.ops.aten.")) op.remove_prefix(std::string_view("torch.ops.").size());
  return op;
}

std::string_view function_name(std::string_view op) {
  op = as_aten(op);
  if (op.starts_with("aten.")) {
    op.remove_prefix(5);
    return op.substr(0, op.find('.'));
  }
  const std::size_t dot = op.rfind('.');
  return dot == std::string_view::npos ? op : op.substr(dot + 1);
}

}  // namespace

bool returns_uninitialized_memory(std::string_view op) {
  static constexpr std::array<std::string_view, 6> kNames = {
      "empty", "empty_like", "empty_strided", "empty_permuted", "new_empty", "new_empty_strided"};
  const std::string_view name = function_name(op);
  for (std::string_view known : kNames) {
    if (name == known) return true;
  }
  return false;
}

bool writes_into_arguments(std::string_view op, Level level) {
  if (level == Level::ArrayFunction) return true;
  if (level != Level::TorchFunction && level != Level::TorchDispatch) return false;
  static constexpr std::array<std::string_view, 15> kInPlaceOperators = {
      "__iadd__", "__isub__",     "__imul__", "__imatmul__", "__itruediv__", "__ifloordiv__", "__idiv__",
      "__imod__", "__ipow__",     "__ilshift__", "__irshift__", "__iand__", "__ixor__",     "__ior__",
      "__setitem__"};
  const std::string_view name = function_name(op);
  if (std::find(kInPlaceOperators.begin(), kInPlaceOperators.end(), name) != kInPlaceOperators.end()) return true;
  if (!name.starts_with("__") && name.ends_with('_')) return true;
  // An aten overload's name after the function: "out", "dim_max", "grad_input" (the output
  // tensors are arguments of out= overloads).
  op = as_aten(op);
  if (!op.starts_with("aten.")) return false;
  const std::size_t dot = op.find('.', 5);
  const std::string_view overload = dot == std::string_view::npos ? std::string_view() : op.substr(dot + 1);
  return overload == "out" || overload.ends_with("_out") || overload.starts_with("out_") ||
         overload == "dim_max" || overload == "dim_min" || overload == "grad_input";
}

bool is_metadata_query(std::string_view op) {
  // Names at each level, kept in step with docs/torch.md's list.
  static constexpr std::array<std::string_view, 28> kTorch = {
      "dim",         "size",        "numel",          "stride",       "data_ptr",      "is_complex",
      "is_floating_point", "element_size", "nelement", "ndimension",  "storage_offset", "is_contiguous",
      "is_signed",   "get_device",  "is_pinned",      "is_shared",    "is_inference",  "is_conj",
      "is_neg",      "has_names",   "dense_dim",      "sparse_dim",   "is_coalesced",  "__len__",
      "__hash__",    "is_set_to", "untyped_storage", "is_same_size"};
  static constexpr std::array<std::string_view, 12> kAten = {
      "sym_size",    "sym_stride", "sym_numel",     "sym_storage_offset", "size",       "stride",
      "dim",         "numel",      "is_contiguous", "is_complex",         "is_floating_point", "is_same_size"};
  static constexpr std::array<std::string_view, 9> kNumpy = {
      "numpy.shape",     "numpy.ndim",        "numpy.size",        "numpy.iscomplexobj", "numpy.isrealobj",
      "numpy.can_cast",  "numpy.result_type", "numpy.min_scalar_type", "numpy.may_share_memory"};
  auto listed = [](std::string_view name, const auto& names) {
    return std::find(names.begin(), names.end(), name) != names.end();
  };
  // The profiler's record_function ranges (optimizer.step, zero_grad) and grad-mode switches are
  // bookkeeping, not operators.
  if (op.starts_with("profiler.") || op.starts_with("torch.ops.profiler.") || op == "torch._C._set_grad_enabled") {
    return true;
  }
  if (op.starts_with("aten.") || op.starts_with("prim.")) return op.starts_with("prim.") || listed(function_name(op), kAten);
  if (op.starts_with("numpy.")) return listed(op, kNumpy);
  const std::string_view name = function_name(op);
  return name == "__get__" || name == "__set__" || name == "__delete__" || listed(name, kTorch);
}

}  // namespace ophook::core
