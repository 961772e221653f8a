#include "compare/values/record_compare.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <unordered_map>

#include "compare/values/stats_diff.hpp"
#include "read/arrays/mapped_npy.hpp"

namespace ophook::cli {

namespace {

constexpr std::uint64_t kLargeElements = std::uint64_t{4} << 20;

/// The .npy's bytes in C order: the mapping itself, or a reordered copy kept in `copy`.
BufferView c_order_view(const MappedNpy& npy, std::vector<std::byte>& copy) {
  const core::NpyHeader& h = npy.header();
  BufferView view{h.descr, h.item_size, npy.elements(), npy.data()};
  if (h.fortran_order && h.shape.size() > 1 && h.item_size > 0) {
    copy = fortran_to_c_order(npy.data(), h.shape, h.item_size);
    view.data = copy;
  }
  return view;
}

ArrayDiff compare_files(const ArraySpec& a, const ArraySpec& b, const PairContext& ctx,
                        unsigned threads) {
  const auto path_a = ctx.base_dir / a.file, path_b = ctx.new_dir / b.file;
  return ctx.file_pairs->compare(path_a, path_b, [&] {
    const MappedNpy npy_a(path_a);
    const MappedNpy npy_b(path_b);
    if (npy_a.header().shape != npy_b.header().shape) {
      ArrayDiff diff;
      diff.shape_mismatch = true;
      return diff;
    }
    std::vector<std::byte> copy_a, copy_b;
    return compare_buffers(c_order_view(npy_a, copy_a), c_order_view(npy_b, copy_b), ctx.tolerance,
                           threads);
  });
}

void attach(ValueResult& result, const ArraySpec* base, const ArraySpec* other) {
  result.base_array = base;
  result.new_array = other;
}

void attach(ValueResult& result, const ScalarSpec* base, const ScalarSpec* other) {
  result.base_scalar = base;
  result.new_scalar = other;
}

ValueResult compare_values(const ArraySpec& a, const ArraySpec& b, const PairContext& ctx,
                           unsigned threads) {
  ValueResult result;
  attach(result, &a, &b);
  if (a.shape != b.shape) {
    result.diff.shape_mismatch = true;
  } else if (ctx.base_uninitialized.holds(a) && ctx.new_uninitialized.holds(b)) {
    result.method = ValueMethod::Uninitialized;  // garbage in both runs: nothing to compare
  } else if (!a.file.empty() && !b.file.empty()) {
    result.method = ValueMethod::Data;
    result.diff = compare_files(a, b, ctx, threads);
  } else if (a.stats && b.stats) {
    result.method = ValueMethod::Stats;
    result.diff = compare_stats(*a.stats, *b.stats, ctx.tolerance);
  }
  result.diff.elements = a.element_count();
  result.diff.shape_mismatch = result.diff.shape_mismatch || a.shape != b.shape;
  result.diff.dtype_mismatch = a.dtype != b.dtype;
  return result;
}

ValueResult compare_values(const ScalarSpec& a, const ScalarSpec& b, const PairContext& ctx,
                           unsigned /*threads*/) {
  ValueResult result;
  attach(result, &a, &b);
  result.method = ValueMethod::Scalar;
  if (a.value.is_number() && b.value.is_number()) {
    result.diff = compare_scalars(a.value.get<double>(), b.value.get<double>(), ctx.tolerance);
    result.diff.cosine = std::numeric_limits<double>::quiet_NaN();  // meaningless for one number
  } else {
    result.diff.compared = true;
    result.diff.elements = 1;
    result.diff.bitwise_equal = a.value == b.value;
    result.diff.not_close = result.diff.bitwise_equal ? 0 : 1;
  }
  return result;
}

template <typename Item>
ValueResult one_sided(const Item* base, const Item* other) {
  ValueResult result;
  result.method = ValueMethod::Missing;
  attach(result, base, other);
  return result;
}

/// Pairs the values of two records by path (by index when both list the same paths, the usual
/// case): pairs in base order, then the values only NEW has.
template <typename Item>
void compare_lists(const std::vector<Item>& base, const std::vector<Item>& other,
                   const PairContext& ctx, unsigned threads, std::vector<ValueResult>& out) {
  const bool same_paths = base.size() == other.size() &&
                          std::equal(base.begin(), base.end(), other.begin(),
                                     [](const Item& x, const Item& y) { return x.path == y.path; });
  if (same_paths) {
    for (std::size_t i = 0; i < base.size(); ++i) {
      out.push_back(compare_values(base[i], other[i], ctx, threads));
    }
    return;
  }
  std::unordered_map<std::string_view, const Item*> by_path;
  for (const Item& item : other) by_path.emplace(item.path, &item);
  for (const Item& item : base) {
    auto it = by_path.find(item.path);
    if (it == by_path.end()) {
      out.push_back(one_sided<Item>(&item, nullptr));
    } else {
      out.push_back(compare_values(item, *it->second, ctx, threads));
      by_path.erase(it);
    }
  }
  for (const Item& item : other) {
    if (by_path.count(item.path)) out.push_back(one_sided<Item>(nullptr, &item));
  }
}

std::string exception_type(const std::optional<std::string>& error) {
  if (!error) return "";
  return error->substr(0, error->find(':'));
}

bool is_array(const ValueResult& value) { return value.base_array || value.new_array; }

bool is_input(const ValueResult& value) {
  const std::string& path = value.path();
  return path.starts_with("args") || path.starts_with("kwargs");
}

/// Whether the pair's array inputs matched. Plain arguments (a Python float, an axis) do not
/// count: a call whose arrays came in equal but whose epsilon changed is where the difference
/// entered. Uninitialized memory in both runs counts as matching: it is not data.
InputState input_state(const std::vector<ValueResult>& values) {
  InputState state = InputState::Match;
  for (const ValueResult& value : values) {
    if (!is_array(value) || !is_input(value)) continue;
    if (value.differs()) return InputState::Differ;
    if (!value.diff.compared && value.method != ValueMethod::Uninitialized) {
      state = InputState::NotRecorded;
    }
  }
  return state;
}

void summarise(PairResult& pair) {
  pair.inputs = input_state(pair.values);
  for (const ValueResult& value : pair.values) {
    pair.differs = pair.differs || value.differs();
    pair.has_values = pair.has_values || value.method == ValueMethod::Data ||
                      value.method == ValueMethod::Stats;
    const ArrayDiff& d = value.diff;
    if (!d.compared) continue;
    if (!std::isnan(d.max_abs)) pair.max_abs = std::max(pair.max_abs, d.max_abs);
    if (std::isnan(d.max_rel)) {
      pair.stats_only = true;
    } else {
      pair.max_rel = std::max(pair.max_rel, d.max_rel);
      pair.has_rel = true;
    }
    if (!std::isnan(d.cosine)) {
      pair.min_cosine = pair.has_cosine ? std::min(pair.min_cosine, d.cosine) : d.cosine;
      pair.has_cosine = true;
    }
  }
  pair.differs = pair.differs || !pair.error_note.empty();
}

}  // namespace

PairResult compare_records(const TraceRecord& base, const TraceRecord& other,
                           const PairContext& ctx, unsigned threads) {
  PairResult pair;
  pair.values.reserve(base.arrays.size() + base.scalars.size());
  compare_lists(base.arrays, other.arrays, ctx, threads, pair.values);
  compare_lists(base.scalars, other.scalars, ctx, threads, pair.values);
  if (exception_type(base.error) != exception_type(other.error)) {
    pair.error_note = fmt::format("exception {} vs {}", base.error.value_or("none"),
                                  other.error.value_or("none"));
  }
  summarise(pair);
  return pair;
}

bool is_large_pair(const TraceRecord& base, const TraceRecord& other) {
  for (const TraceRecord* record : {&base, &other}) {
    for (const ArraySpec& array : record->arrays) {
      if (!array.file.empty() && array.element_count() >= kLargeElements) return true;
    }
  }
  return false;
}

}  // namespace ophook::cli
