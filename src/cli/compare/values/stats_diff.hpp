#pragma once
#include "compare/values/array_diff.hpp"
#include "read/trace_model.hpp"

namespace ophook::cli {

/// Compares two arrays through their recorded statistics, for runs without .npy files. Equal
/// xxh64 digests mean equal bytes. Otherwise min, max, mean and std must each be close
/// (numpy.isclose rules) and the NaN and Inf counts equal. max_abs is the largest difference of
/// the four statistics: a lower bound of the true max abs error, since each of them moves by at
/// most that much. max_rel is NaN (unknown); not_close counts statistics out of tolerance.
/// Pure, thread-safe.
ArrayDiff compare_stats(const StatsSpec& a, const StatsSpec& b, Tolerance tolerance);

}  // namespace ophook::cli
