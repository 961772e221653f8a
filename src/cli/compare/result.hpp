#pragma once
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "compare/align/alignment.hpp"
#include "compare/referee_verdict.hpp"
#include "compare/values/array_diff.hpp"
#include "read/trace_model.hpp"

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

/// Whether the array inputs (args, kwargs) of a pair of records matched.
enum class InputState : std::uint8_t {
  Match,        // every array input compared by value (or uninitialized in both) and close
  Differ,       // some array input differs: in shape, dtype, values, or presence
  NotRecorded,  // none differs, but some was recorded by shape and dtype only
};

const char* to_string(InputState state);

/// The comparison of one pair of records.
struct PairResult {
  std::size_t base = 0, other = 0;  // record indices
  std::vector<ValueResult> values;
  std::string error_note;  // non-empty when the calls raised different exceptions
  bool differs = false;
  InputState inputs = InputState::Match;
  bool has_values = false;  // an array was compared from .npy files or statistics
  double max_abs = 0;     // over values compared numerically; 0 when none
  double max_rel = 0;     // 0 unless has_rel (statistics give no relative error)
  double min_cosine = 1;  // NaN-free minimum; 1 when nothing defined it
  bool has_rel = false, has_cosine = false;
  bool stats_only = false;  // a value not bitwise equal was compared by statistics only
  bool rel_known() const { return has_rel && !stats_only; }
  bool cosine_known() const { return has_cosine && !stats_only; }
  /// This call introduced a difference: it differs although its array inputs matched.
  bool origin() const { return differs && inputs == InputState::Match; }
  /// "origin", "propagated" (inputs already differed) or "inputs not recorded"; for a differing pair.
  const char* marking() const;
};

/// Per-op totals over all pairs and unmatched records of that op.
struct ComparedOp {
  std::string op;
  std::size_t pairs = 0, differing = 0, origins = 0;
  double max_abs = 0, max_rel = 0, min_cosine = 1;
  bool has_errors = false, has_rel = false, has_cosine = false;  // which of the above are defined
  bool stats_only = false;  // a value not bitwise equal was compared by statistics only
  bool rel_known() const { return has_rel && !stats_only; }
  bool cosine_known() const { return has_cosine && !stats_only; }
  std::size_t shape_mismatches = 0, dtype_mismatches = 0, nonfinite_mismatches = 0;
  std::size_t missing_values = 0, error_mismatches = 0, not_close_values = 0;
  std::size_t uninitialized_values = 0;  // skipped, not a mismatch
  std::size_t unmatched_base = 0, unmatched_new = 0;
  std::size_t first_seen = 0;  // order of first appearance over all processes' alignments
  std::optional<RefereeVerdict> referee;  // compare --referee float64, on ops with differing pairs

  /// "shape 1, NaN/Inf 2, unmatched 0+1" or "-".
  std::string mismatch_text() const;
};

/// "seq=17 op=numpy.matmul source=model.py:33:forward module=- phase=- step=0" (null fields as "-").
std::string record_summary(const TraceRecord& record);

/// The reasons a pair differs, one line each (at most `limit`).
std::vector<std::string> pair_reasons(const PairResult& pair, std::size_t limit = 4);

/// SAME: nothing differs and values were compared; DIFFERENT: a pair differs or a call or a
/// process is unmatched; ValuesNotRecorded: the calls pair up but no array was compared by value.
enum class Verdict : std::uint8_t { Same, Different, ValuesNotRecorded };

/// "same", "different", "same_calls_values_not_recorded".
const char* to_string(Verdict verdict);

/// Counts over the pairs and one-sided calls of one process pair, or of all of them.
struct CompareCounts {
  std::size_t pairs = 0, differing_pairs = 0, origins = 0;
  std::size_t values_compared = 0;  // pairs with an array compared by value (has_values)
  std::size_t unmatched_base = 0, unmatched_new = 0;
  std::size_t uninitialized_values = 0;  // values not compared: uninitialized memory in both runs

  Verdict verdict() const;
  CompareCounts& operator+=(const CompareCounts& other);
};

/// The comparison of one process of BASE with one of NEW (root with root, rank<R> with rank<R>,
/// pid<PID> directories in start order), or of a process only one run has (the other side's name
/// empty, no records: every call one-sided).
struct ProcessComparison {
  std::string base_name, new_name;  // "root", "rank1", "pid4242"; empty for the missing side
  std::filesystem::path base_dir, new_dir;
  std::vector<TraceRecord> base, other;
  bool identical_sequences = false;  // op sequences equal: paired 1:1 without alignment
  /// An eager run against an OPHOOK_COMPILE=record run (kernel_pairing.hpp): the eager calls
  /// computed inside kernels without being paired with one, and the kernels with no eager call to
  /// pair with (a backward kernel against a run without backward ops); neither counts as unmatched.
  std::size_t fused_calls = 0, kernels_without_counterpart = 0;
  /// A kernel paired with an eager call: the copies of both records the pair compares (appended to
  /// their sides' records: copies, not calls), the records themselves, and the eager output's path.
  struct KernelPair {
    std::size_t eager_copy, kernel_copy, eager_record, kernel_record;
    std::string eager_output;
  };
  std::vector<KernelPair> kernel_pairs;
  bool kernels_in_base = false;  // which side the kernels are on

  std::vector<AlignStep> steps;
  std::vector<PairResult> pairs;  // one per paired step, in step order
  std::vector<std::size_t> pair_index_of_step;  // npos for one-sided steps

  /// A first divergent call or first origin: its step (an index into `steps` while they are
  /// kept), its records' seqs, and when it happened on BASE's clock (op_totals.hpp).
  struct FirstCall {
    std::size_t step = 0;
    std::optional<std::int64_t> base_seq, new_seq;
    std::int64_t clock = 0;
  };
  /// What total_process() keeps of the steps, valid after their release too.
  std::optional<FirstCall> first_divergence, first_origin;
  CompareCounts counts;
  /// False once the records, steps and pairs are let go (release_details()): a comparison of many
  /// processes keeps them only for the ones its outputs show call by call (run_comparison.hpp).
  bool detailed = true;

  /// The calls each side recorded.
  std::size_t base_calls() const {
    return detailed ? base.size() - kernel_pairs.size() : released_base_calls;
  }
  std::size_t new_calls() const {
    return detailed ? other.size() - kernel_pairs.size() : released_new_calls;
  }
  /// Frees the records, steps, pairs and kernel pairs; names, counts, calls and first calls stay.
  void release_details();
  std::size_t released_base_calls = 0, released_new_calls = 0;  // the calls, once released

  bool matched() const { return !base_name.empty() && !new_name.empty(); }
  /// A process only one run has, or one with a differing or one-sided call.
  bool differs() const { return !matched() || counts.verdict() == Verdict::Different; }
  /// "root", "pid12 / pid34", "rank1", "pid12 / -".
  std::string label() const;
  /// The pair of a paired step (steps[i].paired()).
  const PairResult* pair_at_step(std::size_t step) const;
};

/// A step of one of the process comparisons.
struct CallRef {
  std::size_t process = 0, step = 0;
};

/// The whole comparison of two runs.
struct CompareResult {
  std::filesystem::path base_dir, new_dir;
  Tolerance tolerance;
  std::vector<ProcessComparison> processes;  // root first, then ranks, then pid<PID> by start
  std::vector<ComparedOp> ops;  // over all processes: differing ops first, then by appearance
  /// The earliest divergent call and origin over all processes, by BASE's clock (t_ns).
  std::optional<CallRef> first_divergence, first_origin;
  CompareCounts counts;  // over all processes
  std::size_t base_calls = 0, new_calls = 0;
  std::size_t unmatched_processes = 0;
  std::vector<std::string> warnings;

  Verdict verdict() const { return counts.verdict(); }
  bool same() const { return verdict() == Verdict::Same; }
};

}  // namespace ophook::cli
