#include "read/process_dirs.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <nlohmann/json.hpp>
#include <tuple>

#include "ophook/error.hpp"
#include "read/json_fields.hpp"
#include "read/parallel_for.hpp"
#include "read/summary_file.hpp"

namespace ophook::cli {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string prefix(std::string_view role) {
  return role.empty() ? std::string() : fmt::format("{}: ", role);
}

/// "rank3" -> (Rank, 3), "pid4242" -> (Pid, 4242); nullopt for any other name.
std::optional<std::pair<ProcessDir::Kind, std::int64_t>> parse_name(const std::string& name) {
  for (auto [prefix, kind] : {std::pair{std::string_view("rank"), ProcessDir::Kind::Rank},
                              std::pair{std::string_view("pid"), ProcessDir::Kind::Pid}}) {
    if (!name.starts_with(prefix) || name.size() == prefix.size()) continue;
    std::int64_t number = 0;
    const char* first = name.data() + prefix.size();
    const char* last = name.data() + name.size();
    const auto [end, ec] = std::from_chars(first, last, number);
    if (ec == std::errc() && end == last && *first != '-' && *first != '+') {
      return std::pair{kind, number};
    }
  }
  return std::nullopt;
}

/// The integer at `key` of a summary or record, nullopt when it has none that is one: the order
/// of processes then falls back on what else is known.
std::optional<std::int64_t> integer(const json& object, const char* key) {
  try {
    return optional_integer(object, key, key);
  } catch (const Error&) {
    return std::nullopt;
  }
}

/// summary.json of a process directory, or null when there is none (a killed process) or it
/// cannot be used (said in `warnings`).
json read_summary(const fs::path& dir, std::string_view role, std::vector<std::string>& warnings) {
  auto file = read_summary_file(dir);
  if (!file.problem.empty()) {
    warnings.push_back(fmt::format("{}{}; the process is ordered by its first record", prefix(role), file.problem));
  }
  return file.document ? std::move(*file.document) : json();
}

/// t_ns of the first record of dir/trace.jsonl, for a process that left no summary.json.
std::optional<std::int64_t> first_record_t_ns(const fs::path& dir) {
  std::ifstream in(dir / "trace.jsonl");
  std::string line;
  if (!std::getline(in, line)) return std::nullopt;
  const json record = json::parse(line, nullptr, /*allow_exceptions=*/false);
  return record.is_object() ? integer(record, "t_ns") : std::nullopt;
}

}  // namespace

bool started_before(const ProcessDir& a, const ProcessDir& b) {
  // Known starts first, in start order, then by pid.
  return std::tuple(!a.start_t_ns.has_value(), a.start_t_ns.value_or(0), a.number) <
         std::tuple(!b.start_t_ns.has_value(), b.start_t_ns.value_or(0), b.number);
}

std::vector<ProcessDir> find_processes(const fs::path& run_dir, std::string_view role,
                                       std::vector<std::string>& warnings, const ProcessScan& scan) {
  ProcessDir root;
  root.name = "root";
  root.dir = run_dir;
  const json root_summary = read_summary(run_dir, role, warnings);
  const std::optional<std::int64_t> root_pid =
      root_summary.is_object() ? integer(root_summary, "pid") : std::nullopt;
  std::vector<ProcessDir> found;
  std::error_code ec;
  for (const fs::directory_entry& entry : fs::directory_iterator(run_dir, ec)) {
    const std::string name = entry.path().filename().string();
    const auto parsed = parse_name(name);
    if (!parsed || !entry.is_directory(ec)) continue;
    found.push_back({parsed->first, parsed->second, name, entry.path(), std::nullopt});
  }
  // Thousands of rank directories: their summaries are read on every core.
  struct Look {
    std::vector<std::string> warnings;
    bool left_out = false, stale = false;
  };
  std::vector<Look> looks(found.size());
  parallel_for(found.size(), default_thread_count(), [&](std::size_t i) {
    ProcessDir& child = found[i];
    Look& look = looks[i];
    const bool summary_only = scan.summary_suffices && fs::is_regular_file(child.dir / "summary.json");
    if (!fs::is_regular_file(child.dir / "trace.jsonl") && !summary_only) {
      look.warnings.push_back(fmt::format("{}{}: no trace.jsonl; process left out", prefix(role), child.dir.string()));
      look.left_out = true;
      return;
    }
    const json summary = read_summary(child.dir, role, look.warnings);
    const auto its_root = summary.is_object() ? integer(summary, "root_pid") : std::nullopt;
    if (root_pid && its_root && *its_root != *root_pid) {
      look.warnings.push_back(fmt::format("{}{}: left by an earlier run (its root pid {}, this run's {}); left out",
                                          prefix(role), child.dir.string(), *its_root, *root_pid));
      look.left_out = look.stale = true;
      return;
    }
    child.start_t_ns = summary.is_object() ? integer(summary, "start_t_ns") : std::nullopt;
    if (!child.start_t_ns) child.start_t_ns = first_record_t_ns(child.dir);
  });
  std::vector<ProcessDir> children;
  for (std::size_t i = 0; i < found.size(); ++i) {
    std::move(looks[i].warnings.begin(), looks[i].warnings.end(), std::back_inserter(warnings));
    if (!looks[i].left_out) {
      children.push_back(std::move(found[i]));
    } else if (scan.stale != nullptr && looks[i].stale) {
      scan.stale->push_back(found[i].name);
    }
  }
  std::sort(children.begin(), children.end(), [](const ProcessDir& a, const ProcessDir& b) {
    if (a.kind != b.kind) return a.kind < b.kind;
    return a.kind == ProcessDir::Kind::Rank ? a.number < b.number
                                            : started_before(a, b);
  });
  std::vector<ProcessDir> processes{std::move(root)};
  std::move(children.begin(), children.end(), std::back_inserter(processes));
  return processes;
}

}  // namespace ophook::cli
