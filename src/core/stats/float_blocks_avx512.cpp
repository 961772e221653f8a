// The block kernels compiled with AVX-512 (src/core/CMakeLists.txt sets the flags for this file
// alone): the deviations' sums eight doubles to a register, the same running sums as the other
// sets, so the same bits; float_blocks.cpp uses them only on a CPU that has AVX-512F.
#include "stats/float_blocks.hpp"

#if defined(__AVX512F__)
#include "stats/float_block_kernels.hpp"
#endif

namespace ophook::core::float_blocks {

const Kernels* avx512_kernels() noexcept {
#if defined(__AVX512F__)
  return &kKernels;
#else
  return nullptr;
#endif
}

}  // namespace ophook::core::float_blocks
