#pragma once
#include <filesystem>
#include <memory>

#include "compare/result.hpp"
#include "compare/values/file_pair_memo.hpp"
#include "compare/values/uninitialized_memory.hpp"
#include "read/trace_model.hpp"

namespace ophook::cli {

/// What every pair comparison of two runs shares; read-only while pairs are compared.
struct PairContext {
  std::filesystem::path base_dir, new_dir;  // the records' "file" names are relative to these
  Tolerance tolerance;
  UninitializedMemory base_uninitialized, new_uninitialized;
  std::shared_ptr<FilePairMemo> file_pairs = std::make_shared<FilePairMemo>();  // linked files compared once
};

/// Compares two paired records value by value (arrays and plain leaves matched by path):
/// from the .npy files when both have one, else from the statistics, else shape and dtype only.
/// Arrays holding uninitialized memory in both runs are not compared. Also notes different
/// exceptions, whether the array inputs matched (PairResult::inputs, for origin marking) and
/// whether any array was compared by value. Throws ophook::Error naming the file for a missing or corrupt .npy. Uses up to
/// `threads` threads per array. Thread-safe (reads files only).
PairResult compare_records(const TraceRecord& base, const TraceRecord& other,
                           const PairContext& ctx, unsigned threads);

/// True when the pair holds an array big enough to be worth all threads on its own.
bool is_large_pair(const TraceRecord& base, const TraceRecord& other);

}  // namespace ophook::cli
