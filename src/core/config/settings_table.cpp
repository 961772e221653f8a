// The OPHOOK_* settings (README.md, "Configuration"), one row each: the single source of the variables,
// the `ophook run` options, the Python keywords, --help and the README's configuration table.
#include <algorithm>

#include "config/setting_parser.hpp"
#include "ophook/config/settings.hpp"

namespace ophook::core {
namespace {

constexpr Choice<Mode> kModes[] = {{"trace", Mode::Trace}, {"stats", Mode::Stats}, {"dump", Mode::Dump}};
constexpr Choice<NanPolicy> kNanPolicies[] = {
    {"off", NanPolicy::Off}, {"warn", NanPolicy::Warn}, {"raise", NanPolicy::Raise}};
constexpr Choice<CompilePolicy> kCompilePolicies[] = {{"eager", CompilePolicy::Eager},
                                                      {"ignore", CompilePolicy::Ignore},
                                                      {"record", CompilePolicy::Record}};
constexpr Choice<TensorCopy> kTensorCopies[] = {
    {"auto", TensorCopy::Auto}, {"torch", TensorCopy::Torch}, {"fake-device", TensorCopy::FakeDevice}};
constexpr Choice<LogLevel> kLogLevels[] = {
    {"trace", LogLevel::Trace}, {"debug", LogLevel::Debug}, {"info", LogLevel::Info},
    {"warn", LogLevel::Warn},   {"error", LogLevel::Error}, {"off", LogLevel::Off}};

constexpr std::string_view kBoolean = "0 or 1 (also false/true, no/yes, off/on)";
constexpr std::string_view kRegex = "an ECMAScript regular expression";
constexpr std::string_view kRanges = "numbers and ranges: 3, 0-2,10, 100-";

// Below 64K the queue could not hold even a modest array, so the program would stall per call.
constexpr std::uint64_t kMinQueueBytes = std::uint64_t{64} << 10;

constexpr SettingInfo kSettings[] = {
    {"OUTPUT", "DIR", "a directory", "np_op_dumps (relative to the working directory at start)",
     "where the root process writes; other processes write into rank<R>/ or pid<PID>/ below it",
     [](SettingParser& p, Config& c) { p.text("OPHOOK_OUTPUT", c.output); }},
    {"MODE", "MODE", "trace (specs only), stats (+ per-array statistics), dump (+ .npy files)", "dump",
     "how much of each array is kept", [](SettingParser& p, Config& c) { p.keyword("OPHOOK_MODE", c.mode, kModes); }},
    {"LEVELS", "LIST", "comma list of numpy, torch_function, torch_dispatch, collective",
     "numpy,torch_function,collective",
     "the interception levels; each records its own calls (collective: c10d collectives and point-to-point calls)",
     [](SettingParser& p, Config& c) { p.levels("OPHOOK_LEVELS", c.levels); }},
    {"INCLUDE", "RE", kRegex, "all ops", "record only ops whose qualified name matches (searched)",
     [](SettingParser& p, Config& c) { p.regex("OPHOOK_INCLUDE", c.include); }},
    {"EXCLUDE", "RE", kRegex, "no op", "skip ops whose qualified name matches (searched)",
     [](SettingParser& p, Config& c) { p.regex("OPHOOK_EXCLUDE", c.exclude); }},
    {"NESTED", "0|1", kBoolean, "0",
     "1: also record calls made inside a recorded call of the same level",
     [](SettingParser& p, Config& c) { p.boolean("OPHOOK_NESTED", c.nested); }},
    {"STEPS", "LIST", kRanges, "every step", "record only calls made during these optimizer steps",
     [](SettingParser& p, Config& c) { p.ranges("OPHOOK_STEPS", c.steps); }},
    {"RANKS", "LIST", kRanges, "every rank",
     "record only in these ranks (RANK, or the torch.distributed rank); other ranks run unrecorded",
     [](SettingParser& p, Config& c) { p.ranges("OPHOOK_RANKS", c.ranks); }},
    {"MODULES", "RE", kRegex, "every module",
     "record only torch calls made inside an nn.Module whose dotted path matches (searched)",
     [](SettingParser& p, Config& c) { p.regex("OPHOOK_MODULES", c.modules); }},
    {"ACCESSORS", "0|1", kBoolean, "0",
     "1: also record attribute access (__get__/__set__) and metadata queries (dim, size, ...)",
     [](SettingParser& p, Config& c) { p.boolean("OPHOOK_ACCESSORS", c.accessors); }},
    {"IMPORTS", "0|1", kBoolean, "0", "1: also record calls made while a module is being imported",
     [](SettingParser& p, Config& c) { p.boolean("OPHOOK_IMPORTS", c.imports); }},
    {"RING_BYTES", "N", "a byte count with optional K/M/G/T binary suffix; 0 = off",
     "off; 256M when OPHOOK_NAN is set and OPHOOK_MODE is not",
     "dump mode keeps the latest calls' arrays in a memory ring of this size, written only on a trigger",
     [](SettingParser& p, Config& c) {
       p.byte_size("OPHOOK_RING_BYTES", c.ring_bytes, 0, "a byte count with optional K/M/G/T binary suffix, e.g. 256M");
     }},
    {"RING_STEPS", "K", "a whole number from 1 to 1000000", "off",
     "the ring holds only the calls of the current step and the K before it (within OPHOOK_RING_BYTES, 256M "
     "unless set): a trigger at step N writes the calls of steps N-K to N",
     [](SettingParser& p, Config& c) { p.count("OPHOOK_RING_STEPS", c.ring_steps, 1, 1000000); }},
    {"DUMP_INCLUDE", "RE", kRegex, "every recorded op",
     "dump mode writes .npy files only for ops whose qualified name matches; the others get statistics",
     [](SettingParser& p, Config& c) { p.regex("OPHOOK_DUMP_INCLUDE", c.dump_include); }},
    {"TENSOR_COPY", "HOW",
     "auto (CPU tensors read directly, other devices through torch or ophook's CUDA kernel), torch (every tensor "
     "through torch), fake-device (every tensor through torch, CPU tensors' statistics on a simulated device: tests)",
     "auto", "how tensors are read",
     [](SettingParser& p, Config& c) { p.keyword("OPHOOK_TENSOR_COPY", c.tensor_copy, kTensorCopies); }},
    {"MAX_BYTES", "N", "a byte count with optional K/M/G/T binary suffix", "1G",
     "cap on .npy bytes written per process; then the run goes on in stats mode with one warning",
     [](SettingParser& p, Config& c) {
       p.byte_size("OPHOOK_MAX_BYTES", c.max_bytes, 0, "a byte count with optional K/M/G/T binary suffix, e.g. 512M, 1G");
     }},
    {"QUEUE_BYTES", "N", "a byte count of at least 64K with optional K/M/G/T binary suffix", "256M",
     "cap on memory held by captured, not yet written data; when full the program waits, nothing is dropped",
     [](SettingParser& p, Config& c) {
       p.byte_size("OPHOOK_QUEUE_BYTES", c.queue_bytes, kMinQueueBytes,
                   "a byte count of at least 64K with optional K/M/G/T binary suffix, e.g. 256M");
     }},
    {"STACK", "0|1", kBoolean, "1", "1: record the user source line of each call",
     [](SettingParser& p, Config& c) { p.boolean("OPHOOK_STACK", c.stack); }},
    {"NAN", "POLICY", "off, warn, raise", "off",
     "report the first call that makes NaN/Inf from finite inputs (raise: FloatingPointError there)",
     [](SettingParser& p, Config& c) { p.keyword("OPHOOK_NAN", c.nan, kNanPolicies); }},
    {"COMPILE", "POLICY", "eager, ignore, record", "eager",
     "torch.compile'd code: eager runs it eagerly and records it; ignore runs it compiled, unrecorded; "
     "record runs it compiled and records each kernel it launches (level compiled)",
     [](SettingParser& p, Config& c) { p.keyword("OPHOOK_COMPILE", c.compile, kCompilePolicies); }},
    {"MONITOR", "LIST", "comma list of params, modules (1/on: params)", "off",
     "watch training at each optimizer step into monitor.jsonl: every parameter's weight, gradient and update, "
     "the loss, the gradient norm (modules: also each module's activations); alone, no op call is recorded",
     [](SettingParser& p, Config& c) { p.monitor_set("OPHOOK_MONITOR", c.monitor); }},
    {"MONITOR_TRIGGER", "RULES", "comma list of STATISTIC:Nsigma or STATISTIC:Nx, e.g. loss:6sigma,grad_norm:10x",
     "no trigger",
     "the monitor marks a step whose statistic spikes against the window's earlier steps, and writes the ring",
     [](SettingParser& p, Config& c) { p.trigger_rules("OPHOOK_MONITOR_TRIGGER", c.monitor_trigger); }},
    {"MONITOR_WINDOW", "N", "a whole number from 3 to 100000", "50",
     "the earlier steps each trigger rule measures a step against",
     [](SettingParser& p, Config& c) { p.count("OPHOOK_MONITOR_WINDOW", c.monitor_window, 3, 100000); }},
    {"REPLICAS", "K", "a whole number from 1 to 1000000", "off",
     "every K optimizer steps, compare the parameters DistributedDataParallel keeps identical on its ranks, by "
     "digest through the job's store, and name the first step and parameter where they part; alone, no op call "
     "is recorded",
     [](SettingParser& p, Config& c) { p.count("OPHOOK_REPLICAS", c.replicas, 1, 1000000); }},
    {"OVERRIDES", "FILE", "a Python file of @ophook.override rules", "none",
     "replacement implementations of ops, imported at start",
     [](SettingParser& p, Config& c) { p.text("OPHOOK_OVERRIDES", c.overrides); }},
    {"LOG_LEVEL", "LEVEL", "trace, debug, info, warn, error, off", "info",
     "what ophook says on stderr (info: one start line, one summary line)",
     [](SettingParser& p, Config& c) { p.keyword("OPHOOK_LOG_LEVEL", c.log_level, kLogLevels); }},
    {"STRICT", "0|1", kBoolean, "0", "1: a bad setting ends the program with exit code 2 before it runs",
     [](SettingParser& p, Config& c) { p.boolean("OPHOOK_STRICT", c.strict); }},
    {"DISABLE", "0|1", kBoolean, "0", "1: dormant, the program runs unhooked",
     [](SettingParser& p, Config& c) { p.boolean("OPHOOK_DISABLE", c.disable); }},
};

// Set by the project's own tests and benchmarks only, to reach paths no user setting reaches (a
// fake device's timing, the CUDA backend on the stand-in driver, a small staging memory, file
// helpers by count, no links): parsed and checked like the rows above, and the reason the rows
// above need not read the environment anywhere else.
constexpr SettingInfo kTestSettings[] = {
    {"TEST_FAKE_DEVICE_DRIVER", "0|1", kBoolean, "0",
     "1: the fake device's tensors go through the CUDA backend to the libcuda.so.1 first on LD_LIBRARY_PATH",
     [](SettingParser& p, Config& c) { p.boolean("OPHOOK_TEST_FAKE_DEVICE_DRIVER", c.test.fake_device_driver); }},
    {"TEST_FAKE_DEVICE_IDLE", "0|1", kBoolean, "0",
     "1: the fake device does none of a GPU's work (every element finite and zero): the host's cost alone",
     [](SettingParser& p, Config& c) { p.boolean("OPHOOK_TEST_FAKE_DEVICE_IDLE", c.test.fake_device_idle); }},
    {"TEST_FAKE_DEVICE_LAG", "N", "a whole number from 1", "3", "launches a fake device's result trails behind",
     [](SettingParser& p, Config& c) {
       p.count("OPHOOK_TEST_FAKE_DEVICE_LAG", c.test.fake_device_lag, 1, std::uint64_t{1} << 20);
     }},
    {"TEST_STAGING_BYTES", "N", "a byte count of at least 4K", "256M",
     "the host memory that dump's device bytes cross into, per device",
     [](SettingParser& p, Config& c) {
       p.byte_size("OPHOOK_TEST_STAGING_BYTES", c.test.staging_bytes, 4096, "a byte count of at least 4K, e.g. 64K");
     }},
    {"TEST_FILE_HELPERS", "N", "0 to 7", "half the usable CPUs, 1 to 7", "file helper threads of the writer",
     [](SettingParser& p, Config& c) { p.count("OPHOOK_TEST_FILE_HELPERS", c.test.file_helpers, 0, 7); }},
    {"TEST_NO_LINKS", "0|1", kBoolean, "0", "1: every file written, none linked to an equal one",
     [](SettingParser& p, Config& c) { p.boolean("OPHOOK_TEST_NO_LINKS", c.test.no_links); }},
};

}  // namespace

static_assert(kSettings[0].name == "OUTPUT" && kSettings[0].default_text.starts_with(kDefaultOutput));

std::span<const SettingInfo> settings() { return kSettings; }

std::span<const SettingInfo> test_settings() { return kTestSettings; }

std::string SettingInfo::variable() const { return "OPHOOK_" + std::string(name); }

std::string SettingInfo::option() const {
  std::string out = "--" + lower(name);
  std::replace(out.begin(), out.end(), '_', '-');
  return out;
}

std::string SettingInfo::keyword() const { return lower(name); }

std::string_view to_string(LogLevel level) {
  for (const auto& c : kLogLevels) {
    if (c.value == level) return c.name;
  }
  return level == LogLevel::Critical ? "error" : "info";
}

}  // namespace ophook::core
