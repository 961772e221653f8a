#pragma once
#include <cstdint>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "trace_model.hpp"

namespace ophook::cli {

/// True for ops that return fresh, uninitialized memory: torch.empty, empty_like,
/// empty_strided, Tensor.new_empty, aten.empty.memory_format, numpy.empty_like, ... Their
/// contents differ from run to run by nature (nn.Module constructors call them before their
/// initialisers fill the tensors). Pure.
bool returns_uninitialized_memory(std::string_view op);

/// The arrays of one run that hold uninitialized memory: the outputs of the ops above, and the
/// same bytes wherever they appear later (e.g. as the "before" input of an in-place
/// initialiser), recognised by their xxh64 digest. Needs statistics (modes stats and dump).
/// Immutable after construction; thread-safe to query.
class UninitializedMemory {
 public:
  UninitializedMemory() = default;
  explicit UninitializedMemory(const std::vector<TraceRecord>& records);

  bool holds(const ArraySpec& array) const;
  bool empty() const { return digests_.empty(); }

 private:
  std::unordered_set<std::uint64_t> digests_;
};

}  // namespace ophook::cli
