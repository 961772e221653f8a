#include "ophook/process/fork_handlers.hpp"

#include <pthread.h>

#include <array>
#include <atomic>
#include <cstddef>
#include <mutex>

namespace ophook::core {
namespace {

using Hook = void (*)() noexcept;
constexpr std::size_t kStages = static_cast<std::size_t>(ForkStage::Count);

struct Stage {
  std::atomic<Hook> prepare{nullptr}, parent{nullptr}, child{nullptr};
};
std::array<Stage, kStages> stages;

void run(std::atomic<Hook> Stage::*which, bool reverse) noexcept {
  for (std::size_t i = 0; i < kStages; ++i) {
    const auto& stage = stages[reverse ? kStages - 1 - i : i];
    if (const Hook hook = (stage.*which).load(std::memory_order_acquire)) hook();
  }
}

}  // namespace

void set_fork_handler(ForkStage stage, ForkHandler handler) noexcept {
  static std::once_flag registered;
  std::call_once(registered, [] {
    pthread_atfork([] { run(&Stage::prepare, false); }, [] { run(&Stage::parent, true); },
                   [] { run(&Stage::child, true); });
  });
  auto& entry = stages[static_cast<std::size_t>(stage)];
  entry.prepare.store(handler.prepare, std::memory_order_release);
  entry.parent.store(handler.parent, std::memory_order_release);
  entry.child.store(handler.child, std::memory_order_release);
}

}  // namespace ophook::core
