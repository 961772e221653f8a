// Per-array statistics (min, max, mean, std, NaN/Inf counts, xxh64) against the floor of one pass
// over the same bytes: a plain sum.
#include <benchmark/benchmark.h>

#include <numeric>
#include <vector>

#include "bench_pairs.hpp"
#include "ophook/stats.hpp"

namespace {

std::vector<float> values(std::size_t n) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<float>(i % 1000) * 0.5f - 7.0f;
  return v;
}

void stats_ours(benchmark::State& state) {
  const auto v = values(static_cast<std::size_t>(state.range(0)));
  for (auto _ : state)
    benchmark::DoNotOptimize(
        ophook::core::compute_stats("<f4", reinterpret_cast<const std::byte*>(v.data()), v.size() * sizeof(float)));
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * v.size() * sizeof(float)));
}

void stats_baseline(benchmark::State& state) {
  const auto v = values(static_cast<std::size_t>(state.range(0)));
  for (auto _ : state) benchmark::DoNotOptimize(std::accumulate(v.begin(), v.end(), 0.0));
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * v.size() * sizeof(float)));
}

}  // namespace

OPHOOK_BENCH_PAIR("stats_f32_16", stats_ours, stats_baseline, 16);
OPHOOK_BENCH_PAIR("stats_f32_16MiB", stats_ours, stats_baseline, 4 << 20);
