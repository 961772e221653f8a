#include "compare/values/uninitialized_memory.hpp"

#include "ophook/model/op_kinds.hpp"

namespace ophook::cli {

UninitializedMemory::UninitializedMemory(const std::vector<TraceRecord>& records) {
  for (const TraceRecord& record : records) {
    if (!core::returns_uninitialized_memory(record.op)) continue;
    for (const ArraySpec& array : record.arrays) {
      if (array.is_output() && array.stats && array.stats->has_xxh64) {
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
