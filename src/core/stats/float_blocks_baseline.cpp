// The block kernels compiled for the baseline instruction set, which every x86-64 (and every
// other CPU) runs; float_blocks.cpp falls back on them where neither AVX2 nor AVX-512 is there.
#include "stats/float_blocks.hpp"

#include "stats/float_block_kernels.hpp"

namespace ophook::core::float_blocks {

const Kernels& baseline_kernels() noexcept { return kKernels; }

}  // namespace ophook::core::float_blocks
