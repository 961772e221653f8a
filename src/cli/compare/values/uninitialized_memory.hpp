#pragma once
#include <cstdint>
#include <unordered_set>
#include <vector>

#include "read/trace_model.hpp"

namespace ophook::cli {

/// The arrays of one run that hold uninitialized memory: the outputs of the ops that
/// core::returns_uninitialized_memory names, and the same bytes wherever they appear later
/// (e.g. as the "before" input of an in-place initialiser), recognised by their xxh64 digest.
/// Needs statistics (modes stats and dump). Immutable after construction; thread-safe to query.
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
