#pragma once
// Every figure is a pair: `<figure>:ours` and `<figure>:baseline`, which bench.py (figures/cpp.py)
// matches by name and turns into one table row. Registered at static-initialisation time.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <optional>
#include <string>

namespace ophook::bench {

using BenchFunction = void (*)(benchmark::State&);

/// `real_time`: bytes and items per second by the wall clock, for a figure whose work runs on
/// other threads too (the default counts the benchmark thread's CPU time).
inline int register_pair(const std::string& figure, BenchFunction ours, BenchFunction baseline,
                         std::optional<std::int64_t> arg = std::nullopt, bool real_time = false) {
  for (auto [variant, fn] : {std::pair{":ours", ours}, std::pair{":baseline", baseline}}) {
    auto* b = benchmark::RegisterBenchmark((figure + variant).c_str(), fn);
    if (arg) b->Arg(*arg);
    if (real_time) b->UseRealTime();
  }
  return 0;
}

}  // namespace ophook::bench

#define OPHOOK_BENCH_CONCAT2(a, b) a##b
#define OPHOOK_BENCH_CONCAT(a, b) OPHOOK_BENCH_CONCAT2(a, b)
/// OPHOOK_BENCH_PAIR("figure", ours, baseline[, arg[, real_time]]);
#define OPHOOK_BENCH_PAIR(...) \
  static const int OPHOOK_BENCH_CONCAT(ophook_bench_pair_, __LINE__) = ::ophook::bench::register_pair(__VA_ARGS__)
