// The block kernels compiled with AVX2 (src/core/CMakeLists.txt sets the flags for this file
// alone); float_blocks.cpp uses them only on a CPU that has it.
#include "stats/float_blocks.hpp"

#if defined(__AVX2__)
#include "stats/float_block_kernels.hpp"
#endif

namespace ophook::core::float_blocks {

const Kernels* avx2_kernels() noexcept {
#if defined(__AVX2__)
  return &kKernels;
#else
  return nullptr;
#endif
}

}  // namespace ophook::core::float_blocks
