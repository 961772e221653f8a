#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace ophook::cli {

/// The "stats" object of an array value (docs/outputs.md, "Values"). min..std are absent when the
/// recorder wrote null (non-numeric data, or no finite value).
struct StatsSpec {
  std::optional<double> min, max, mean, std;
  std::uint64_t nan = 0;
  std::uint64_t inf = 0;
  std::uint64_t xxh64 = 0;  // the hex digest's value, when has_xxh64
  bool has_xxh64 = false;
};

/// One {"kind": "array", ...} value of a record, with where it sat in the call.
struct ArraySpec {
  std::string path;  // "args[0]", "args[1][2]", "kwargs.out", "outputs[0]"
  std::vector<std::int64_t> shape;
  std::string dtype;        // as recorded: "float32", "bfloat16", ...
  std::string saved_dtype;  // dtype of the .npy when it differs from `dtype`, else empty
  std::string device;
  std::string file;  // .npy name relative to the run directory; empty when null
  std::optional<StatsSpec> stats;

  std::uint64_t element_count() const;
  /// Whether it is one of the call's outputs (its path is under "outputs").
  bool is_output() const { return path.starts_with("outputs"); }
  /// Whether its statistics count a NaN or an Inf.
  bool has_nonfinite() const { return stats && (stats->nan > 0 || stats->inf > 0); }
};

/// A plain JSON leaf of a record (number, string, bool, null) with where it sat in the call.
struct ScalarSpec {
  std::string path;
  nlohmann::json value;
};

/// A collective's place in its process group (a record's "collective"): the group and the
/// collective's number there, which every member counts alike.
struct CollectiveSpec {
  std::string group;
  std::int64_t group_seq = 0;
  bool received_nonfinite = false;  // its outputs held NaN/Inf its inputs on this rank did not
};

/// One line of trace.jsonl, reduced to what the reader commands use. Values are flattened in
/// call order: positional arguments, keyword arguments (by name), then outputs.
struct TraceRecord {
  std::int64_t seq = 0;
  std::string op, framework, level;
  std::optional<std::string> error, source, module, phase;
  std::int64_t t_ns = 0, dur_ns = 0;
  std::int64_t pid = 0, tid = 0, depth = 0;
  std::optional<std::int64_t> parent;  // seq of the enclosing recorded call
  std::int64_t step = 0;
  bool overridden = false;
  std::vector<std::string> sources;  // a compiled kernel's: the program's lines its ops come from
  std::vector<std::string> modules;  // a compiled kernel's: the modules its ops run in
  std::optional<CollectiveSpec> collective;  // level `collective`
  std::vector<ArraySpec> arrays;
  std::vector<ScalarSpec> scalars;
  std::size_t line = 0;  // 1-based line number in trace.jsonl
};

}  // namespace ophook::cli
