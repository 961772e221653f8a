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

/// How far one watched series moved over the run: a module's act_norm, a parameter's grad_norm.
struct SeriesRange {
  std::string name;  // "Net.fc1.act_norm", "Net.fc1.weight.grad_norm"
  double low = 0, high = 0;
  std::int64_t high_step = 0;
  /// high / low (the spread the report ranks by); 0 when low is not above 0.
  double spread() const { return low > 0 ? high / low : 0; }
};

struct MonitorLog {
  bool present = false;
  std::uint64_t steps = 0;  // lines read
  std::vector<MonitorPoint> points;  // one per line: the series `report --html` plots
  std::optional<std::int64_t> first_step, last_step;
  std::vector<MonitorTrigger> triggers;  // in step order
  std::vector<SeriesRange> ranges;       // per module's act_norm and parameter's grad_norm, in first-seen order
};

/// `dir`/monitor.jsonl; absent: present == false. Throws ophook::Error for a malformed line that
/// is not the last.
MonitorLog read_monitor_file(const std::filesystem::path& dir, std::vector<std::string>& warnings);

/// "loss 1.3e+06 is 812.4 sigma above the mean of the 11 steps before (0.41, sigma 0.021) (loss:6sigma)"
std::string describe_trigger(const MonitorTrigger& trigger);

}  // namespace ophook::cli
