#pragma once
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

/// A process directory's monitor.jsonl (docs/monitor.md): the training monitor's line per optimizer
/// step, read for the steps it covers and the triggers that fired. A last line cut short (a run
/// killed while writing it) is left out with a warning; the lines before it stand.
namespace ophook::cli {

struct MonitorTrigger {
  std::int64_t step = 0;
  nlohmann::json facts;  // the trigger as the line holds it: rule, statistic, value, sigmas or times, ...
};

/// A step's loss and global gradient norm (none where the line holds null).
struct MonitorPoint {
  std::int64_t step = 0;
  std::optional<double> loss, grad_norm;
};

struct MonitorLog {
  bool present = false;
  std::uint64_t steps = 0;  // lines read
  std::vector<MonitorPoint> points;  // one per line: the series `report --html` plots
  std::optional<std::int64_t> first_step, last_step;
  std::vector<MonitorTrigger> triggers;  // in step order
};

/// `dir`/monitor.jsonl; absent: present == false. Throws ophook::Error for a malformed line that
/// is not the last.
MonitorLog read_monitor_file(const std::filesystem::path& dir, std::vector<std::string>& warnings);

/// "loss 1.3e+06 is 812.4 sigma above the mean of the 11 steps before (0.41, sigma 0.021) (loss:6sigma)"
std::string describe_trigger(const MonitorTrigger& trigger);

}  // namespace ophook::cli
