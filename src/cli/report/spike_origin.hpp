#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "read/trace_model.hpp"

namespace ophook::cli {

/// The call that made a spike (docs/monitor.md, "The op that made the spike"): the first call of
/// the trigger step whose output left the range the same call had in the steps before. "The same
/// call" is the same op, module and phase at the same place in the step (its how-many-th such
/// call); its output's size is max(|min|, |max|), and NaN/Inf where there was none.
struct SpikeOrigin {
  std::int64_t step = 0;
  const TraceRecord* record = nullptr;
  std::string value_path;  // "outputs[0]"
  std::optional<double> size;  // max(|min|, |max|); none when only NaN/Inf
  std::uint64_t nonfinite = 0;
  double low = 0, high = 0;  // the size's range in the steps before
  std::int64_t from_step = 0, to_step = 0;  // those steps
  std::uint64_t earlier = 0;  // how many earlier calls set the range
};

/// Out of range: above the earlier sizes' top by more than their spread, and by at least this
/// fraction of it (batch-to-batch variation stays inside).
inline constexpr double kSpikeMargin = 0.25;
/// A range needs this many earlier steps' calls.
inline constexpr std::uint64_t kSpikeHistory = 2;

/// Over `records` (one process's, any order), the spike origin of `step`; nullopt when the records
/// hold no call of that step, or none left its range.
std::optional<SpikeOrigin> find_spike_origin(const std::vector<TraceRecord>& records, std::int64_t step);

/// The step's inputs as files: the first forward call of `step` inside an nn.Module (lowest seq)
/// whose arguments have a .npy file — what the model was given: the batch, the token ids an
/// embedding gets (in `dump` mode, or a written ring); null when none has.
const TraceRecord* first_input_files(const std::vector<TraceRecord>& records, std::int64_t step);

}  // namespace ophook::cli
