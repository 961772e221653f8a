#include "compare/align/kernel_pairing.hpp"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <optional>
#include <string_view>

namespace ophook::cli {

namespace {

constexpr std::string_view kCompiled = "compiled";
// One-sided eager calls a kernel looks through for its counterpart: a fused kernel rarely
// covers more calls than this.
constexpr std::size_t kWindow = 64;
// Statistics this close (distance()) are the same value computed twice.
constexpr double kClose = 1e-3;

bool has_kernels(const std::vector<TraceRecord>& records) {
  return std::any_of(records.begin(), records.end(), [](const TraceRecord& r) { return r.level == kCompiled; });
}


/// How far apart two arrays' statistics are (0: equal, infinity: not comparable).
double distance(const ArraySpec& a, const ArraySpec& b) {
  if (!a.stats || !b.stats || !a.stats->mean || !b.stats->mean || !a.stats->std || !b.stats->std) {
    return std::numeric_limits<double>::infinity();
  }
  const double scale = std::abs(*a.stats->mean) + *a.stats->std + 1e-30;
  return (std::abs(*a.stats->mean - *b.stats->mean) + std::abs(*a.stats->std - *b.stats->std)) / scale;
}

struct Choice {
  std::size_t candidate = 0;  // index into the one-sided eager steps
  const ArraySpec* eager_output = nullptr;
  const ArraySpec* kernel_output = nullptr;
  double distance = std::numeric_limits<double>::infinity();
};

/// A copy of `record` whose only value is `output`, as the pair's one output.
TraceRecord holding_only(const TraceRecord& record, const ArraySpec& output) {
  TraceRecord copy = record;
  copy.arrays.clear();
  copy.scalars.clear();
  copy.error.reset();
  copy.arrays.push_back(output);
  copy.arrays.back().path = "outputs[0]";
  return copy;
}

}  // namespace

void pair_kernels(ProcessComparison& process) {
  const bool base_kernels = has_kernels(process.base), new_kernels = has_kernels(process.other);
  if (base_kernels == new_kernels) return;
  process.kernels_in_base = base_kernels;
  std::vector<TraceRecord>& kernels = base_kernels ? process.base : process.other;
  std::vector<TraceRecord>& eager = base_kernels ? process.other : process.base;
  auto kernel_of = [&](const AlignStep& s) { return base_kernels ? s.base : s.other; };
  auto eager_of = [&](const AlignStep& s) { return base_kernels ? s.other : s.base; };

  // The one-sided steps of each side, in that side's record order.
  std::vector<std::size_t> kernel_steps, eager_steps;
  for (std::size_t s = 0; s < process.steps.size(); ++s) {
    const AlignStep& step = process.steps[s];
    if (step.paired()) continue;
    if (kernel_of(step) >= 0 && kernels[static_cast<std::size_t>(kernel_of(step))].level == kCompiled) {
      kernel_steps.push_back(s);
    } else if (eager_of(step) >= 0) {
      eager_steps.push_back(s);
    }
  }
  auto record_at = [&](std::vector<TraceRecord>& side, std::int64_t index) -> TraceRecord& {
    return side[static_cast<std::size_t>(index)];
  };
  auto by_seq = [&](auto side_of, std::vector<TraceRecord>& side) {
    return [&, side_of](std::size_t x, std::size_t y) {
      return record_at(side, side_of(process.steps[x])).seq < record_at(side, side_of(process.steps[y])).seq;
    };
  };
  std::sort(kernel_steps.begin(), kernel_steps.end(), by_seq(kernel_of, kernels));
  std::sort(eager_steps.begin(), eager_steps.end(), by_seq(eager_of, eager));

  // The calls outside compiled code pair up as usual; as (kernel side's seq, eager side's seq),
  // they bracket each stretch of compiled code: the eager calls of a kernel lie between the eager
  // counterparts of the calls around it.
  std::vector<std::pair<std::int64_t, std::int64_t>> anchors;
  for (const AlignStep& step : process.steps) {
    if (step.paired()) {
      anchors.emplace_back(record_at(kernels, kernel_of(step)).seq, record_at(eager, eager_of(step)).seq);
    }
  }
  std::sort(anchors.begin(), anchors.end());
  auto bracket_of = [&](std::int64_t kernel_seq) {
    const auto it = std::lower_bound(anchors.begin(), anchors.end(), std::pair{kernel_seq, std::int64_t{0}});
    return std::pair{it == anchors.begin() ? std::numeric_limits<std::int64_t>::min() : std::prev(it)->second,
                     it == anchors.end() ? std::numeric_limits<std::int64_t>::max() : it->second};
  };
  std::vector<std::pair<std::int64_t, std::int64_t>> brackets;  // of the kernels, for the calls left over

  std::vector<std::int8_t> eager_taken(eager_steps.size(), 0);  // 1: paired or fused
  std::vector<std::optional<AlignStep>> replaced(process.steps.size());
  std::vector<bool> dropped(process.steps.size(), false);
  std::size_t next = 0;
  for (const std::size_t kernel_step : kernel_steps) {
    const auto kernel_index = kernel_of(process.steps[kernel_step]);
    const TraceRecord& kernel = record_at(kernels, kernel_index);
    std::vector<std::string> lines = kernel.sources;
    if (lines.empty() && kernel.source) lines.push_back(*kernel.source);
    // Plain variables rather than a structured binding: clang 14 cannot capture those in lambdas.
    const auto bracket = bracket_of(kernel.seq);
    const std::int64_t after = bracket.first, before = bracket.second;
    brackets.push_back(bracket);
    auto on_lines = [&](const TraceRecord& call) {
      return call.seq > after && call.seq < before && call.source &&
             std::find(lines.begin(), lines.end(), *call.source) != lines.end() && call.step == kernel.step &&
             call.phase == kernel.phase;
    };
    // Each output of the kernel that agrees with an eager call's (statistics within kClose) is
    // that call's value, the earliest such call: the kernel ends in the latest of them. When none
    // agrees (the kernel differs), the closest in the first run of calls on its lines.
    std::optional<Choice> last_agreeing, closest;
    std::vector<bool> output_matched(kernel.arrays.size(), false);
    bool block_ended = false;
    for (std::size_t j = next; j < eager_steps.size() && j < next + kWindow; ++j) {
      if (eager_taken[j]) continue;
      const TraceRecord& call = record_at(eager, eager_of(process.steps[eager_steps[j]]));
      if (!on_lines(call)) {
        block_ended = block_ended || closest.has_value();
        continue;
      }
      for (const ArraySpec& out : call.arrays) {
        if (!out.is_output()) continue;
        for (std::size_t k = 0; k < kernel.arrays.size(); ++k) {
          const ArraySpec& kernel_out = kernel.arrays[k];
          if (!kernel_out.is_output() || kernel_out.shape != out.shape || kernel_out.dtype != out.dtype) continue;
          const double d = distance(out, kernel_out);
          if (d <= kClose && !output_matched[k]) {
            output_matched[k] = true;
            last_agreeing = Choice{j, &out, &kernel_out, d};
          }
          // among equals (or without statistics) the later call
          if (!block_ended && (!closest || d <= closest->distance)) closest = Choice{j, &out, &kernel_out, d};
        }
      }
    }
    const std::optional<Choice>& best = last_agreeing ? last_agreeing : closest;
    if (!best) {
      dropped[kernel_step] = true;
      ++process.kernels_without_counterpart;
      continue;
    }
    for (std::size_t j = next; j < best->candidate; ++j) {
      if (eager_taken[j] || !on_lines(record_at(eager, eager_of(process.steps[eager_steps[j]])))) continue;
      eager_taken[j] = 1;
      dropped[eager_steps[j]] = true;
      ++process.fused_calls;
    }
    eager_taken[best->candidate] = 1;
    const std::size_t eager_step = eager_steps[best->candidate];
    const auto call_index = static_cast<std::size_t>(eager_of(process.steps[eager_step]));
    const TraceRecord& call = eager[call_index];
    std::string eager_output = best->eager_output->path;
    eager.push_back(holding_only(call, *best->eager_output));
    kernels.push_back(holding_only(kernel, *best->kernel_output));
    const auto eager_copy = static_cast<std::int64_t>(eager.size() - 1);
    const auto kernel_copy = static_cast<std::int64_t>(kernels.size() - 1);
    const AlignStep pair = base_kernels ? AlignStep{kernel_copy, eager_copy} : AlignStep{eager_copy, kernel_copy};
    // The pair takes BASE's place in the order; NEW's one-sided step goes.
    replaced[base_kernels ? kernel_step : eager_step] = pair;
    dropped[base_kernels ? eager_step : kernel_step] = true;
    process.kernel_pairs.push_back({eager.size() - 1, kernels.size() - 1, call_index,
                                    static_cast<std::size_t>(kernel_index), std::move(eager_output)});
    next = best->candidate + 1;
  }
  // What is left of the eager calls between the calls around a kernel ran inside compiled code:
  // fused into its kernels, or no kernel at all (a view, a reshape).
  for (std::size_t j = 0; j < eager_steps.size(); ++j) {
    if (eager_taken[j]) continue;
    const TraceRecord& call = record_at(eager, eager_of(process.steps[eager_steps[j]]));
    const bool inside = std::any_of(brackets.begin(), brackets.end(),
                                    [&](const auto& b) { return call.seq > b.first && call.seq < b.second; });
    if (inside) {
      dropped[eager_steps[j]] = true;
      ++process.fused_calls;
    }
  }
  std::vector<AlignStep> steps;
  steps.reserve(process.steps.size());
  for (std::size_t s = 0; s < process.steps.size(); ++s) {
    if (replaced[s]) {
      steps.push_back(*replaced[s]);
    } else if (!dropped[s]) {
      steps.push_back(process.steps[s]);
    }
  }
  process.steps = std::move(steps);
}

void judge_kernel_pair_inputs(ProcessComparison& process) {
  bool earlier_difference = false;
  for (PairResult& pair : process.pairs) {
    const bool base_kernel = process.base[pair.base].level == kCompiled;
    const bool new_kernel = process.other[pair.other].level == kCompiled;
    if (base_kernel != new_kernel) pair.inputs = earlier_difference ? InputState::Differ : InputState::Match;
    earlier_difference = earlier_difference || pair.differs;
  }
}

}  // namespace ophook::cli
