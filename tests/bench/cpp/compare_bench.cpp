// `ophook compare`'s element kernel (allclose test, max abs/rel error, cosine, NaN pattern) on
// float32 buffers that differ in the last bits, against the floor: max |a - b| in one plain loop.
// Identical buffers take compare_buffers' memcmp path: against memcmp itself.
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "bench_pairs.hpp"
#include "compare/values/array_diff.hpp"

namespace {

using ophook::cli::BufferView;

struct Buffers {
  std::vector<float> a, b;
  explicit Buffers(std::size_t n, bool same) : a(n), b(n) {
    for (std::size_t i = 0; i < n; ++i) {
      a[i] = static_cast<float>(i % 977) * 0.25f + 1.0f;
      b[i] = same ? a[i] : std::nextafter(a[i], 1e30f);
    }
  }
  BufferView view(const std::vector<float>& v) const {
    return {"<f4", sizeof(float), v.size(), std::as_bytes(std::span<const float>(v))};
  }
};

constexpr std::size_t kElements = 4 << 20;  // 16 MiB per side

void compare_differing_ours(benchmark::State& state) {
  const Buffers buf(kElements, false);
  for (auto _ : state) benchmark::DoNotOptimize(ophook::cli::compare_buffers(buf.view(buf.a), buf.view(buf.b), {}, 1));
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * kElements * 2 * sizeof(float)));
}

void compare_differing_baseline(benchmark::State& state) {
  const Buffers buf(kElements, false);
  for (auto _ : state) {
    float worst = 0;
    for (std::size_t i = 0; i < kElements; ++i) worst = std::max(worst, std::fabs(buf.a[i] - buf.b[i]));
    benchmark::DoNotOptimize(worst);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * kElements * 2 * sizeof(float)));
}

void compare_identical_ours(benchmark::State& state) {
  const Buffers buf(kElements, true);
  for (auto _ : state) benchmark::DoNotOptimize(ophook::cli::compare_buffers(buf.view(buf.a), buf.view(buf.b), {}, 1));
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * kElements * 2 * sizeof(float)));
}

void compare_identical_baseline(benchmark::State& state) {
  const Buffers buf(kElements, true);
  // The baseline is a bytewise comparison on purpose: the floats' values are not what it compares.
  // NOLINTNEXTLINE(bugprone-suspicious-memory-comparison)
  for (auto _ : state) benchmark::DoNotOptimize(std::memcmp(buf.a.data(), buf.b.data(), kElements * sizeof(float)));
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * kElements * 2 * sizeof(float)));
}

}  // namespace

OPHOOK_BENCH_PAIR("compare_f32_16MiB_differing", compare_differing_ours, compare_differing_baseline);
OPHOOK_BENCH_PAIR("compare_f32_16MiB_identical", compare_identical_ours, compare_identical_baseline);
