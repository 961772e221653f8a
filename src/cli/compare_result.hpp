#pragma once
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "alignment.hpp"
#include "array_diff.hpp"
#include "referee_verdict.hpp"
#include "trace_model.hpp"

namespace ophook::cli {

/// What a value comparison could rest on.
enum class ValueMethod : std::uint8_t {
  Data,           // both .npy files, element by element
  Stats,          // recorded statistics (equal xxh64 → bitwise equal)
  Spec,           // shape and dtype only: no data or statistics on one side
  Scalar,         // a plain JSON number/string/bool in the record
  Missing,        // the value exists in one record only
  Uninitialized,  // uninitialized memory (torch.empty & co.) in both runs: not compared
};

const char* to_string(ValueMethod method);

/// One value (array or plain leaf) of a pair of records, matched by position ("args[0]").
/// Points into the records of the CompareResult that holds it.
struct ValueResult {
  ValueMethod method = ValueMethod::Spec;
  ArrayDiff diff;
  const ArraySpec* base_array = nullptr;  // set for arrays, on the sides that have the value
  const ArraySpec* new_array = nullptr;
  const ScalarSpec* base_scalar = nullptr;  // set for plain leaves
  const ScalarSpec* new_scalar = nullptr;

  bool differs() const { return method == ValueMethod::Missing || !diff.within_tolerance(); }
  const std::string& path() const;
  /// "float32 [2, 3]" for an array, the JSON text of a leaf, "" when this side lacks the value.
  std::string base_text() const;
  std::string new_text() const;
  /// One line saying what differs ("outputs[0]: 3/6 elements not close, max abs err ...").
  std::string describe() const;
};

/// The comparison of one pair of records.
struct PairResult {
  std::size_t base = 0, other = 0;  // record indices
  std::vector<ValueResult> values;
  std::string error_note;  // non-empty when the calls raised different exceptions
  bool differs = false;
  double max_abs = 0;     // over values compared numerically; 0 when none
  double max_rel = 0;     // 0 unless has_rel (statistics give no relative error)
  double min_cosine = 1;  // NaN-free minimum; 1 when nothing defined it
  bool has_rel = false, has_cosine = false;
  bool stats_only = false;  // a value not bitwise equal was compared by statistics only
  bool rel_known() const { return has_rel && !stats_only; }
  bool cosine_known() const { return has_cosine && !stats_only; }
};

/// Per-op totals over all pairs and unmatched records of that op.
struct OpSummary {
  std::string op;
  std::size_t pairs = 0, differing = 0;
  double max_abs = 0, max_rel = 0, min_cosine = 1;
  bool has_errors = false, has_rel = false, has_cosine = false;  // which of the above are defined
  bool stats_only = false;  // a value not bitwise equal was compared by statistics only
  bool rel_known() const { return has_rel && !stats_only; }
  bool cosine_known() const { return has_cosine && !stats_only; }
  std::size_t shape_mismatches = 0, dtype_mismatches = 0, nonfinite_mismatches = 0;
  std::size_t missing_values = 0, error_mismatches = 0, not_close_values = 0;
  std::size_t uninitialized_values = 0;  // skipped, not a mismatch
  std::size_t unmatched_base = 0, unmatched_new = 0;
  std::int64_t first_step = -1;  // first alignment step of this op (for ordering)
  std::optional<RefereeVerdict> referee;  // compare --referee float64, on ops with differing pairs

  /// "shape 1, NaN/Inf 2, unmatched 0+1" or "-".
  std::string mismatch_text() const;
};

/// "seq=17 op=numpy.matmul source=model.py:33:forward module=- phase=-" (null fields as "-").
std::string record_summary(const TraceRecord& record);

/// The reasons a pair differs, one line each (at most `limit`).
std::vector<std::string> pair_reasons(const PairResult& pair, std::size_t limit = 4);

/// The whole comparison of two runs.
struct CompareResult {
  std::filesystem::path base_dir, new_dir;
  Tolerance tolerance;
  std::vector<TraceRecord> base, other;
  bool identical_sequences = false;  // op sequences equal: paired 1:1 without alignment
  std::vector<AlignStep> steps;
  std::vector<PairResult> pairs;  // one per paired step, in step order
  std::vector<OpSummary> ops;     // differing ops first, then in order of appearance
  std::optional<std::size_t> first_divergent_step;
  std::size_t differing_pairs = 0, unmatched_base = 0, unmatched_new = 0;
  std::size_t uninitialized_values = 0;  // values not compared: uninitialized memory in both runs
  std::vector<std::string> warnings;

  bool same() const { return differing_pairs == 0 && unmatched_base == 0 && unmatched_new == 0; }
  /// The pair of a paired step (steps[i].paired()).
  const PairResult* pair_at_step(std::size_t step) const;
  std::vector<std::size_t> pair_index_of_step;  // npos for one-sided steps
};

}  // namespace ophook::cli
