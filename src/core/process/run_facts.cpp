#include "ophook/process/run_facts.hpp"

#include <string>
#include <utility>

namespace ophook::core {

void RunFacts::set_version(std::string_view component, std::string_view version) {
  std::lock_guard lock(mu_);
  versions_[std::string(component)] = std::string(version);
}

void RunFacts::add_note(std::string_view key, nlohmann::json value) {
  std::lock_guard lock(mu_);
  notes_[std::string(key)] = std::move(value);
}

void RunFacts::update_note(std::string_view key, const std::function<void(nlohmann::json&)>& change) {
  std::lock_guard lock(mu_);
  change(notes_[std::string(key)]);
}

void RunFacts::merge_into(nlohmann::ordered_json& summary) const {
  std::lock_guard lock(mu_);
  summary["versions"] = nlohmann::ordered_json::parse(versions_.dump());
  summary["notes"] = nlohmann::ordered_json::parse(notes_.dump());
}

void RunFacts::clear_notes() {
  std::lock_guard lock(mu_);
  notes_ = nlohmann::json::object();
}

}  // namespace ophook::core
