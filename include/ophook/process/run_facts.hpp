#pragma once
#include <functional>
#include <mutex>
#include <string_view>

#include <nlohmann/json.hpp>

#include "ophook/export.hpp"

namespace ophook::core {

/// Facts for summary.json that the capturing side learns over a process's life: versions
/// ("python", "numpy", "torch"), which last as long as the process, and notes (compile regions,
/// the backward check's costs, a termination signal, a device's costs), which belong to one run.
/// Thread-safe: one mutex, which the recorder holds across fork().
class OPHOOK_API RunFacts {
 public:
  void set_version(std::string_view component, std::string_view version);
  void add_note(std::string_view key, nlohmann::json value);
  /// Changes note `key` (null when the run has none yet) under the facts' lock: a note that counts.
  void update_note(std::string_view key, const std::function<void(nlohmann::json&)>& change);
  /// Adds "versions" and "notes" to a summary being written.
  void merge_into(nlohmann::ordered_json& summary) const;
  /// A new run begins: an earlier run's notes are not this one's; the versions stay.
  void clear_notes();

  void lock_for_fork() noexcept { mu_.lock(); }
  void unlock_after_fork() noexcept { mu_.unlock(); }

 private:
  mutable std::mutex mu_;
  nlohmann::json versions_ = nlohmann::json::object();
  nlohmann::json notes_ = nlohmann::json::object();
};

}  // namespace ophook::core
