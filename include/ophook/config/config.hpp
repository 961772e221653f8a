#pragma once
#include "ophook/export.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ophook::core {

enum class Mode : std::uint8_t { Trace, Stats, Dump };
enum class NanPolicy : std::uint8_t { Off, Warn, Raise };
enum class CompilePolicy : std::uint8_t { Eager, Ignore, Record };
/// How tensors are read (docs/devices.md): fake-device sends CPU tensors through the device path
/// with the statistics kernel's fake device, to test its asynchronous completion without a GPU.
enum class TensorCopy : std::uint8_t { Auto, Torch, FakeDevice };

/// Which interception levels are on (OPHOOK_LEVELS).
struct Levels {
  bool numpy = true;
  bool torch_function = true;
  bool torch_dispatch = false;
  bool collective = true;  // c10d collectives and point-to-point calls (docs/ranks.md), through either torch level's setup
};

/// How much ophook says on stderr (OPHOOK_LOG_LEVEL), in spdlog's order of levels.
enum class LogLevel : std::uint8_t { Trace, Debug, Info, Warn, Error, Critical, Off };

/// A set of non-negative integers written as "3", "0-2,10", "100-" (OPHOOK_STEPS, OPHOOK_RANKS):
/// sorted, merged, inclusive ranges; no range at all means every number.
struct RangeSet {
  static constexpr std::uint64_t kOpen = ~std::uint64_t{0};  // the end of "100-"
  std::vector<std::pair<std::uint64_t, std::uint64_t>> ranges;

  bool all() const noexcept { return ranges.empty(); }
  OPHOOK_API bool contains(std::uint64_t value) const noexcept;
  /// The canonical text ("0-2,10,100-"), "" for all.
  OPHOOK_API std::string to_string() const;
};

/// The settings only the project's tests and benchmarks set (OPHOOK_TEST_*: test_settings(), left
/// out of --help, the README and the Python keywords).
struct TestSettings {
  bool fake_device_driver = false;     // the fake device's tensors through the CUDA backend (tests/fake_cuda)
  bool fake_device_idle = false;       // the fake device does none of a GPU's work: the host's cost alone
  std::uint64_t fake_device_lag = 3;   // launches a fake device's result trails behind
  std::uint64_t staging_bytes = std::uint64_t{256} << 20;  // host memory `dump`'s device bytes cross into
  static constexpr std::uint64_t kAutomatic = ~std::uint64_t{0};
  std::uint64_t file_helpers = kAutomatic;  // file helper threads; kAutomatic: half the usable CPUs (1 to 7)
  bool no_links = false;               // every file written, none linked (the benchmarks' "before")
};

/// What OPHOOK_MONITOR watches at each optimizer step (docs/monitor.md).
struct MonitorSet {
  bool params = false;   // each parameter's weight, gradient and update; the loss; the global gradient norm
  bool modules = false;  // also each module's output activations and the gradients they get back
  bool on() const noexcept { return params || modules; }
};

/// One OPHOOK_MONITOR_TRIGGER rule ("loss:6sigma", "grad_norm:10x"): a step fires when its
/// `statistic` lies more than `threshold` standard deviations above the mean of the window's earlier
/// steps (Sigma), or more than `threshold` times their median (Ratio).
struct TriggerRule {
  enum class Kind : std::uint8_t { Sigma, Ratio };
  std::string statistic;  // "loss", "grad_norm", or "<parameter or module path>.<statistic>" ('*' in the path: any)
  Kind kind = Kind::Sigma;
  double threshold = 0;
};

/// OPHOOK_OUTPUT's default, relative to the working directory at start.
inline constexpr const char* kDefaultOutput = "np_op_dumps";

/// The effective configuration of one process (README.md, "Configuration"). Plain data, copyable.
struct Config {
  std::string output = kDefaultOutput;
  Mode mode = Mode::Dump;
  Levels levels;
  std::string include;  // ECMAScript regex; empty = everything
  std::string exclude;  // ECMAScript regex; empty = nothing
  bool nested = false;
  RangeSet steps;        // empty: every step
  RangeSet ranks;        // empty: every rank
  std::string modules;   // ECMAScript regex over the nn.Module path; empty = every module
  bool accessors = false;
  bool imports = false;
  std::uint64_t ring_bytes = 0;  // 0 = no ring: dump mode writes every file at once
  bool ring_for_nan_hunt = false;  // ring_bytes is OPHOOK_NAN's default, not a setting
  std::uint64_t ring_steps = 0;    // 0: the ring holds calls by bytes only; K: also only the last K steps
  std::string dump_include;      // ECMAScript regex; empty = every recorded op gets files
  TensorCopy tensor_copy = TensorCopy::Auto;
  std::uint64_t max_bytes = std::uint64_t{1} << 30;
  std::uint64_t queue_bytes = std::uint64_t{256} << 20;
  bool stack = true;
  NanPolicy nan = NanPolicy::Off;
  CompilePolicy compile = CompilePolicy::Eager;
  std::string overrides;
  LogLevel log_level = LogLevel::Info;
  MonitorSet monitor;
  std::vector<TriggerRule> monitor_trigger;
  std::uint64_t monitor_window = 50;
  std::uint64_t replicas = 0;  // 0: off; K: DDP's replicas compared by digest every K optimizer steps
  // False when the monitor or the replica check runs alone (OPHOOK_MONITOR or OPHOOK_REPLICAS without
  // OPHOOK_MODE, OPHOOK_NAN or a ring): no op call is recorded, only their per-step work is done.
  bool records_ops = true;
  bool strict = false;
  bool disable = false;
  TestSettings test;
};

/// The ring of a NaN hunt: OPHOOK_NAN set with neither OPHOOK_MODE nor OPHOOK_RING_BYTES given.
inline constexpr std::uint64_t kNanHuntRingBytes = std::uint64_t{256} << 20;

OPHOOK_API std::string_view to_string(Mode mode);
OPHOOK_API std::string_view to_string(NanPolicy policy);
OPHOOK_API std::string_view to_string(CompilePolicy policy);
OPHOOK_API std::string_view to_string(TensorCopy copy);
/// "numpy,torch_function" in canonical order.
OPHOOK_API std::string levels_to_string(const Levels& levels);

/// "params,modules" as OPHOOK_MONITOR spells it ("" when off).
OPHOOK_API std::string monitor_to_string(const MonitorSet& monitor);
/// "loss:6sigma", "grad_norm:10x": the rule as OPHOOK_MONITOR_TRIGGER spells it.
OPHOOK_API std::string to_string(const TriggerRule& rule);

/// OPHOOK_LOG_LEVEL's spelling of a level.
OPHOOK_API std::string_view to_string(LogLevel level);

/// Whether dump mode keeps its arrays in a ring (OPHOOK_RING_BYTES, or a NaN hunt's default).
OPHOOK_API bool uses_ring(const Config& config);
/// The start line's words for the ring ("" without one): its size, the triggers, and whether it is
/// a NaN hunt's default.
OPHOOK_API std::string ring_description(const Config& config);

}  // namespace ophook::core
