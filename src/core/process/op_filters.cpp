#include "process/op_filters.hpp"

#include <algorithm>
#include <vector>

#include "ophook/model/op_kinds.hpp"
#include "ophook/process/recorder.hpp"

namespace ophook::core {
namespace {

std::unique_ptr<std::regex> compiled(const std::string& pattern) {
  return pattern.empty() ? nullptr : std::make_unique<std::regex>(pattern, std::regex::ECMAScript);
}

/// The names the filters look at: the op's, and the aten ops a compiled kernel computes.
std::vector<std::string> filtered_names(const std::string& name, std::string_view annotation) {
  std::vector<std::string> names{name};
  for (auto& op : annotation_list(annotation, "computes")) names.push_back(std::move(op));
  return names;
}

bool any_matches(const std::vector<std::string>& names, const std::regex& pattern) {
  return std::any_of(names.begin(), names.end(), [&](const std::string& n) { return std::regex_search(n, pattern); });
}

}  // namespace

OpFilters::OpFilters(const Config& config)
    : records_ops_(config.records_ops),
      accessors_(config.accessors),
      dump_mode_(config.mode == Mode::Dump),
      include_(compiled(config.include)),
      exclude_(compiled(config.exclude)),
      dump_include_(compiled(config.dump_include)) {}

bool OpFilters::records(const std::string& name, std::string_view annotation) const {
  if (!records_ops_ || (!accessors_ && is_metadata_query(name))) return false;
  if (!include_ && !exclude_) return true;
  const auto names = filtered_names(name, annotation);
  if (include_ && !any_matches(names, *include_)) return false;
  return !(exclude_ && any_matches(names, *exclude_));
}

bool OpFilters::dumps(const std::string& name, std::string_view annotation) const {
  return dump_mode_ && (!dump_include_ || any_matches(filtered_names(name, annotation), *dump_include_));
}

}  // namespace ophook::core
