// The OPHOOK_* settings (README.md, "Configuration"), one row each: the single source of the variables,
// the `ophook run` options, the Python keywords, --help and the README's configuration table.
#include <spdlog/common.h>

#include <algorithm>

#include "config/setting_parser.hpp"
#include "ophook/config/config.hpp"

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
constexpr Choice<spdlog::level::level_enum> kLogLevels[] = {
    {"trace", spdlog::level::trace}, {"debug", spdlog::level::debug}, {"info", spdlog::level::info},
    {"warn", spdlog::level::warn},   {"error", spdlog::level::err},   {"off", spdlog::level::off}};

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
    {"LEVELS", "LIST", "comma list of numpy, torch_function, torch_dispatch", "numpy,torch_function",
     "the interception levels; each records its own calls",
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

}  // namespace

std::span<const SettingInfo> settings() { return kSettings; }

std::string SettingInfo::variable() const { return "OPHOOK_" + std::string(name); }

std::string SettingInfo::option() const {
  std::string out = "--" + lower(name);
  std::replace(out.begin(), out.end(), '_', '-');
  return out;
}

std::string SettingInfo::keyword() const { return lower(name); }

std::string_view log_level_name(spdlog::level::level_enum level) {
  for (const auto& c : kLogLevels) {
    if (c.value == level) return c.name;
  }
  return level == spdlog::level::critical ? "error" : "info";
}

}  // namespace ophook::core
