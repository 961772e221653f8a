// The "ophook" spdlog logger. Not registered in spdlog's global registry: the traced program may
// use spdlog itself, and the registry's mutex would be one more lock to survive fork().
#include "ophook/log.hpp"

#include <spdlog/logger.h>
#include <spdlog/sinks/base_sink.h>
#include <unistd.h>

#include <atomic>
#include <memory>
#include <cerrno>
#include <mutex>
#include <string>

#include "ophook/config/config.hpp"

namespace ophook::core {
namespace {

// Writes each formatted line to fd 2 with one write(2). spdlog's stderr_sink_mt locks a single
// process-wide console mutex, so a fresh one after fork could still deadlock on a copy of that
// mutex held by another parent thread; this sink's mutex belongs to the sink. One write per line
// also keeps lines from forked children and workers sharing stderr whole.
class StderrSink final : public spdlog::sinks::base_sink<std::mutex> {
 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    spdlog::memory_buf_t line;
    formatter_->format(msg, line);
    const char* data = line.data();
    std::size_t size = line.size();
    while (size > 0) {
      const ssize_t n = ::write(STDERR_FILENO, data, size);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return;  // stderr closed or full: logging must never fail the program
      data += n;
      size -= static_cast<std::size_t>(n);
    }
  }
  void flush_() override {}
};

// Every logger made, held forever: messages may be logged from exit handlers after static
// destructors ran, and after fork the previous logger must not be destroyed (its mutex may be
// held). Chained from a global, so that LeakSanitizer sees them held, not lost.
struct HeldLogger {
  std::shared_ptr<spdlog::logger> logger;
  const HeldLogger* previous;
};
std::atomic<const HeldLogger*> g_held{nullptr};

spdlog::logger* make_logger(spdlog::level::level_enum level) {
  auto logger = std::make_shared<spdlog::logger>("ophook", std::make_shared<StderrSink>());
  logger->set_pattern("[ophook %P:%t] %l: %v");
  logger->set_level(level);
  auto* held = new HeldLogger{std::move(logger), g_held.load(std::memory_order_acquire)};
  while (!g_held.compare_exchange_weak(held->previous, held, std::memory_order_acq_rel)) {
  }
  return held->logger.get();
}

std::atomic<spdlog::logger*> g_logger{nullptr};

spdlog::logger& logger() {
  spdlog::logger* current = g_logger.load(std::memory_order_acquire);
  if (current != nullptr) return *current;
  static std::once_flag once;
  std::call_once(once, [] {
    spdlog::logger* expected = nullptr;
    g_logger.compare_exchange_strong(expected, make_logger(spdlog::level::info));
  });
  return *g_logger.load(std::memory_order_acquire);
}

}  // namespace

bool log_enabled(spdlog::level::level_enum level) noexcept { return logger().should_log(level); }

void log_formatted(spdlog::level::level_enum level, fmt::string_view format, fmt::format_args args) noexcept {
  try {
    const std::string line = fmt::vformat(format, args);
    logger().log(level, spdlog::string_view_t(line.data(), line.size()));
  } catch (...) {  // out of memory or a bad runtime format spec: the line is lost, the program is not
  }
}

void set_log_level(LogLevel level) {
  // LogLevel lists spdlog's levels in spdlog's order.
  static_assert(static_cast<int>(LogLevel::Off) == spdlog::level::off && static_cast<int>(LogLevel::Warn) == spdlog::level::warn);
  logger().set_level(static_cast<spdlog::level::level_enum>(level));
}

void reset_logger_after_fork() {
  // Not through logger(): its once_flag may be mid-flight in a parent thread that fork dropped.
  // A reference taken before the fork keeps pointing at the old logger; fetch logger() anew.
  const spdlog::logger* old = g_logger.load(std::memory_order_acquire);
  const auto level = old != nullptr ? old->level() : spdlog::level::info;  // atomic, no lock
  g_logger.store(make_logger(level), std::memory_order_release);
}

}  // namespace ophook::core
