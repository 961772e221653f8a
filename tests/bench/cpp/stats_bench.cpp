// Per-array statistics (min, max, mean, std, NaN/Inf counts, xxh64) against the floor of one pass
// over the same bytes: a plain sum.
#include <benchmark/benchmark.h>

#include <numeric>
#include <vector>

#include "bench_pairs.hpp"
#include "ophook/stats/stats.hpp"

namespace {

template <typename T>
std::vector<T> values(std::size_t n) {
  std::vector<T> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<T>(i % 1000) * T(0.5) - T(7);
  return v;
}

template <typename T>
constexpr const char* kDescr = sizeof(T) == 4 ? "<f4" : "<f8";

template <typename T>
void stats_ours(benchmark::State& state) {
  const auto v = values<T>(static_cast<std::size_t>(state.range(0)));
  for (auto _ : state)
    benchmark::DoNotOptimize(
        ophook::core::compute_stats(kDescr<T>, reinterpret_cast<const std::byte*>(v.data()), v.size() * sizeof(T)));
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * v.size() * sizeof(T)));
}

template <typename T>
void stats_baseline(benchmark::State& state) {
  const auto v = values<T>(static_cast<std::size_t>(state.range(0)));
  for (auto _ : state) benchmark::DoNotOptimize(std::accumulate(v.begin(), v.end(), 0.0));
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * v.size() * sizeof(T)));
}

}  // namespace

OPHOOK_BENCH_PAIR("stats_f32_16", stats_ours<float>, stats_baseline<float>, 16);
OPHOOK_BENCH_PAIR("stats_f32_16MiB", stats_ours<float>, stats_baseline<float>, 4 << 20);
// Larger than the last-level cache, as the arrays of a dump-heavy run are.
OPHOOK_BENCH_PAIR("stats_f64_64MiB", stats_ours<double>, stats_baseline<double>, 8 << 20);
