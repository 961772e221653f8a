// What an op's name tells about its results.
#include "ophook/op_kinds.hpp"

#include <array>

namespace ophook::core {
namespace {

/// The function name inside a qualified op: "torch.Tensor.new_empty" → "new_empty",
/// "aten.empty.memory_format" → "empty" (aten names end in an overload).
std::string_view function_name(std::string_view op) {
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

}  // namespace ophook::core
