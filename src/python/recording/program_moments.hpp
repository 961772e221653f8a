#pragma once
#include <cstdint>

namespace ophook::py {

/// Counts the moments at which the program's code may have run since ophook last looked: before
/// a call's inputs are read, and after the call. A device path that asks the driver whether a
/// stream is capturing a CUDA graph asks again only at the next moment, so a call asks about its
/// stream twice at most, not once per tensor. The GIL guards it.
inline std::uint64_t program_moments = 0;
inline void program_may_have_run() noexcept { ++program_moments; }

}  // namespace ophook::py
