// The choice, once per process, of the best set of block kernels this CPU runs
// (docs/performance.md has what each set costs).
#include "stats/float_blocks.hpp"

namespace ophook::core::float_blocks {
namespace {

const Kernels& chosen() noexcept {
  static const Kernels& kernels = [] () -> const Kernels& {
#if defined(__x86_64__)
    if (const Kernels* avx512 = avx512_kernels(); avx512 != nullptr && __builtin_cpu_supports("avx512f")) {
      return *avx512;
    }
    if (const Kernels* avx2 = avx2_kernels(); avx2 != nullptr && __builtin_cpu_supports("avx2")) return *avx2;
#endif
    return baseline_kernels();
  }();
  return kernels;
}

}  // namespace

bool moments_and_digest_f32(const std::byte* data, std::size_t n, double centre, Extremes& running, ShiftedSums& sums,
                            XXH64_state_t& digest) noexcept {
  return chosen().moments_and_digest_f32(data, n, centre, running, sums, digest);
}
bool moments_and_digest_f64(const std::byte* data, std::size_t n, double centre, Extremes& running, ShiftedSums& sums,
                            XXH64_state_t& digest) noexcept {
  return chosen().moments_and_digest_f64(data, n, centre, running, sums, digest);
}
bool moments_f32(const std::byte* data, std::size_t n, double centre, Extremes& running, ShiftedSums& sums) noexcept {
  return chosen().moments_f32(data, n, centre, running, sums);
}
bool moments_f64(const std::byte* data, std::size_t n, double centre, Extremes& running, ShiftedSums& sums) noexcept {
  return chosen().moments_f64(data, n, centre, running, sums);
}
bool squared_distance_f32(const std::byte* a, const std::byte* b, std::size_t n, double& squares) noexcept {
  return chosen().squared_distance_f32(a, b, n, squares);
}
bool squared_distance_f64(const std::byte* a, const std::byte* b, std::size_t n, double& squares) noexcept {
  return chosen().squared_distance_f64(a, b, n, squares);
}
bool any_all_ones_exponent_u16(const std::byte* data, std::size_t count, std::uint16_t mask) noexcept {
  return chosen().any_all_ones_exponent_u16(data, count, mask);
}
bool any_all_ones_exponent_u32(const std::byte* data, std::size_t count, std::uint32_t mask) noexcept {
  return chosen().any_all_ones_exponent_u32(data, count, mask);
}
bool any_all_ones_exponent_u64(const std::byte* data, std::size_t count, std::uint64_t mask) noexcept {
  return chosen().any_all_ones_exponent_u64(data, count, mask);
}
std::uint64_t content_hash(const std::byte* data, std::size_t n) noexcept { return chosen().content_hash(data, n); }

}  // namespace ophook::core::float_blocks
