#pragma once
#include <memory>
#include <regex>
#include <string>
#include <string_view>

#include "ophook/config/config.hpp"

namespace ophook::core {

/// OPHOOK_INCLUDE/OPHOOK_EXCLUDE, OPHOOK_ACCESSORS and OPHOOK_DUMP_INCLUDE, compiled once per run
/// (the patterns were validated by the settings' parser) and applied to an op once, at its first
/// sight: never per call. A compiled kernel's op is matched on its name and on each aten op it
/// computes (its annotation's "computes"): included when one of them matches, excluded when one
/// matches. Thread-safe once built (const).
class OpFilters {
 public:
  explicit OpFilters(const Config& config);

  /// Whether calls of the op are recorded.
  bool records(const std::string& name, std::string_view annotation) const;
  /// Whether dump mode gives the op's arrays files.
  bool dumps(const std::string& name, std::string_view annotation) const;

 private:
  bool records_ops_ = true;  // false: the monitor alone (Config::records_ops)
  bool accessors_ = false;
  bool dump_mode_ = false;
  std::unique_ptr<std::regex> include_, exclude_, dump_include_;
};

}  // namespace ophook::core
