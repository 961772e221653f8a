#pragma once
#include <atomic>
#include <cstdint>

namespace ophook::py::steps {

/// Optimizer steps completed in this process (torch.optim's global step post-hook, or
/// ophook.step()): each record's "step". Any thread.
inline std::atomic<std::uint64_t> g_completed{0};

inline std::uint64_t completed() noexcept { return g_completed.load(std::memory_order_relaxed); }

/// One more step is complete: counts it and opens or closes the recording gate for the next
/// step as OPHOOK_STEPS says. Any thread.
void complete_one() noexcept;

/// Back to step 0 (a new recording in this process), the gate set for step 0.
void reset() noexcept;

}  // namespace ophook::py::steps
