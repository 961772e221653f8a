#include "recording/step_counter.hpp"

#include "ophook/process/recorder.hpp"
#include "thread_state.hpp"

namespace ophook::py::steps {
namespace {

void select(std::uint64_t step) noexcept {
  const auto* recorder = core::Recorder::get();
  RecordingGate::set(RecordingGate::kStepSelected, recorder == nullptr || recorder->config().steps.contains(step));
}

}  // namespace

void complete_one() noexcept { select(g_completed.fetch_add(1, std::memory_order_relaxed) + 1); }

void reset() noexcept {
  g_completed.store(0, std::memory_order_relaxed);
  select(0);
}

}  // namespace ophook::py::steps
