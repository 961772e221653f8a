#include "compare/result.hpp"

#include <fmt/format.h>

#include <cmath>

#include "render/json_text.hpp"
#include "render/text_format.hpp"

namespace ophook::cli {

const char* to_string(ValueMethod method) {
  switch (method) {
    case ValueMethod::Data:
      return "data";
    case ValueMethod::Stats:
      return "stats";
    case ValueMethod::Spec:
      return "spec";
    case ValueMethod::Scalar:
      return "scalar";
    case ValueMethod::Missing:
      return "missing";
    case ValueMethod::Uninitialized:
      return "uninitialized";
  }
  return "?";
}

const char* to_string(InputState state) {
  switch (state) {
    case InputState::Match:
      return "match";
    case InputState::Differ:
      return "differ";
    case InputState::NotRecorded:
      return "not_recorded";
  }
  return "?";
}

const char* to_string(Verdict verdict) {
  switch (verdict) {
    case Verdict::Same:
      return "same";
    case Verdict::Different:
      return "different";
    case Verdict::ValuesNotRecorded:
      return "same_calls_values_not_recorded";
  }
  return "?";
}

namespace {

std::string array_text(const ArraySpec* spec) {
  return spec ? fmt::format("{} {}", spec->dtype, format_shape(spec->shape)) : "";
}

std::string scalar_text(const ScalarSpec* spec) {
  if (spec == nullptr) return "";
  if (spec->value.is_number_float() && !std::isfinite(spec->value.get<double>())) {
    return format_error(spec->value.get<double>());
  }
  return compact(spec->value);
}

}  // namespace

const std::string& ValueResult::path() const {
  static const std::string kNone;
  if (base_array) return base_array->path;
  if (new_array) return new_array->path;
  if (base_scalar) return base_scalar->path;
  if (new_scalar) return new_scalar->path;
  return kNone;
}

std::string ValueResult::base_text() const {
  return base_array ? array_text(base_array) : scalar_text(base_scalar);
}

std::string ValueResult::new_text() const {
  return new_array ? array_text(new_array) : scalar_text(new_scalar);
}

std::string ValueResult::describe() const {
  const std::string& where = path();
  if (method == ValueMethod::Missing) {
    const bool in_base = base_array || base_scalar;
    return fmt::format("{}: only in {} ({})", where, in_base ? "BASE" : "NEW",
                       in_base ? base_text() : new_text());
  }
  if (diff.shape_mismatch || diff.dtype_mismatch || method == ValueMethod::Scalar) {
    return fmt::format("{}: {} vs {}", where, base_text(), new_text());
  }
  std::string text = where + ":";
  if (diff.nonfinite_mismatch > 0) {
    text += fmt::format(" NaN/Inf pattern differs ({}{});", diff.nonfinite_mismatch,
                        method == ValueMethod::Stats ? " in counts" : " positions");
  }
  if (method == ValueMethod::Stats) {
    text +=
        fmt::format(" {} of min/max/mean/std not close, largest difference {} (statistics only)",
                    diff.not_close, format_error(diff.max_abs));
    return text;
  }
  text += fmt::format(" {}/{} elements not close, max abs err {}", diff.not_close, diff.elements,
                      format_error(diff.max_abs));
  if (diff.worst_index >= 0) text += fmt::format(" at flat index {}", diff.worst_index);
  text += fmt::format(", max rel err {}, cosine {}", format_error(diff.max_rel),
                      format_cosine(diff.cosine));
  return text;
}

std::string ComparedOp::mismatch_text() const {
  std::string text;
  auto add = [&](std::size_t count, const char* label) {
    if (count == 0) return;
    if (!text.empty()) text += ", ";
    text += fmt::format("{} {}", label, count);
  };
  add(not_close_values, "not close");
  add(shape_mismatches, "shape");
  add(dtype_mismatches, "dtype");
  add(nonfinite_mismatches, "NaN/Inf");
  add(missing_values, "one-sided");
  add(error_mismatches, "exception");
  if (unmatched_base + unmatched_new > 0) {
    if (!text.empty()) text += ", ";
    text += fmt::format("unmatched {}+{}", unmatched_base, unmatched_new);
  }
  return text.empty() ? "-" : text;
}

std::string record_summary(const TraceRecord& record) {
  auto or_dash = [](const std::optional<std::string>& v) { return v ? *v : std::string("-"); };
  return fmt::format("seq={} op={} source={} module={} phase={} step={}", record.seq, record.op,
                     or_dash(record.source), or_dash(record.module), or_dash(record.phase),
                     record.step);
}

std::vector<std::string> pair_reasons(const PairResult& pair, std::size_t limit) {
  std::vector<std::string> reasons;
  if (!pair.error_note.empty()) reasons.push_back(pair.error_note);
  std::size_t more = 0;
  for (const ValueResult& value : pair.values) {
    if (!value.differs()) continue;
    if (reasons.size() < limit) {
      reasons.push_back(value.describe());
    } else {
      ++more;
    }
  }
  if (more > 0) reasons.push_back(fmt::format("... and {} more differing values", more));
  return reasons;
}

const char* PairResult::marking() const {
  switch (inputs) {
    case InputState::Match:
      return "origin";
    case InputState::Differ:
      return "propagated";
    case InputState::NotRecorded:
      return "inputs not recorded";
  }
  return "?";
}

Verdict CompareCounts::verdict() const {
  if (differing_pairs > 0 || unmatched_base > 0 || unmatched_new > 0) return Verdict::Different;
  return values_compared > 0 ? Verdict::Same : Verdict::ValuesNotRecorded;
}

CompareCounts& CompareCounts::operator+=(const CompareCounts& other) {
  pairs += other.pairs;
  differing_pairs += other.differing_pairs;
  origins += other.origins;
  values_compared += other.values_compared;
  unmatched_base += other.unmatched_base;
  unmatched_new += other.unmatched_new;
  uninitialized_values += other.uninitialized_values;
  return *this;
}

std::string ProcessComparison::label() const {
  if (base_name == new_name) return base_name;
  return fmt::format("{} / {}", base_name.empty() ? "-" : base_name,
                     new_name.empty() ? "-" : new_name);
}

const PairResult* ProcessComparison::pair_at_step(std::size_t step) const {
  if (step >= pair_index_of_step.size()) return nullptr;
  const std::size_t index = pair_index_of_step[step];
  return index < pairs.size() ? &pairs[index] : nullptr;
}

void ProcessComparison::release_details() {
  released_base_calls = base_calls();
  released_new_calls = new_calls();
  // Swapped with empty vectors, not cleared: clear() keeps the capacity, which is the memory.
  std::vector<TraceRecord>().swap(base);
  std::vector<TraceRecord>().swap(other);
  std::vector<KernelPair>().swap(kernel_pairs);
  std::vector<AlignStep>().swap(steps);
  std::vector<PairResult>().swap(pairs);
  std::vector<std::size_t>().swap(pair_index_of_step);
  detailed = false;
}

}  // namespace ophook::cli
