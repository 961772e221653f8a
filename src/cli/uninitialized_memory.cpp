#include "uninitialized_memory.hpp"

#include <array>

namespace ophook::cli {

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

bool holds_array_output(const ArraySpec& array) { return array.path.starts_with("outputs"); }

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

UninitializedMemory::UninitializedMemory(const std::vector<TraceRecord>& records) {
  for (const TraceRecord& record : records) {
    if (!returns_uninitialized_memory(record.op)) continue;
    for (const ArraySpec& array : record.arrays) {
      if (holds_array_output(array) && array.stats && array.stats->has_xxh64) {
        digests_.insert(array.stats->xxh64);
      }
    }
  }
}

bool UninitializedMemory::holds(const ArraySpec& array) const {
  return !digests_.empty() && array.stats && array.stats->has_xxh64 &&
         digests_.count(array.stats->xxh64) > 0;
}

}  // namespace ophook::cli
