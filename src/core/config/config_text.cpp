// The words of the settings: their values' names (summary.json, messages) and the start line's
// account of the ring.
#include <string>

#include "ophook/config/config.hpp"

namespace ophook::core {

bool uses_ring(const Config& config) { return config.mode == Mode::Dump && config.ring_bytes > 0; }

std::string ring_description(const Config& config) {
  if (!uses_ring(config)) return "";
  const auto bytes = config.ring_bytes;
  const auto size = bytes % (1 << 20) == 0 ? std::to_string(bytes >> 20) + " MiB"
                    : bytes % (1 << 10) == 0 ? std::to_string(bytes >> 10) + " KiB"
                                             : std::to_string(bytes) + " bytes";
  std::string text = "arrays of the latest calls held in a " + size +
                     " ring, written on the first NaN/Inf, an uncaught exception, a termination signal or "
                     "ophook.dump_ring()";
  if (config.ring_steps > 0) text += ", of the current step and the " + std::to_string(config.ring_steps) + " before it";
  if (config.ring_for_nan_hunt) {
    text += " (OPHOOK_NAN's default: OPHOOK_RING_BYTES sets another size, OPHOOK_MODE=dump writes every array)";
  }
  return text;
}

std::string_view to_string(Mode mode) {
  switch (mode) {
    case Mode::Trace: return "trace";
    case Mode::Stats: return "stats";
    case Mode::Dump: return "dump";
  }
  return "dump";
}

std::string_view to_string(NanPolicy policy) {
  switch (policy) {
    case NanPolicy::Off: return "off";
    case NanPolicy::Warn: return "warn";
    case NanPolicy::Raise: return "raise";
  }
  return "off";
}

std::string_view to_string(CompilePolicy policy) {
  switch (policy) {
    case CompilePolicy::Eager: return "eager";
    case CompilePolicy::Ignore: return "ignore";
    case CompilePolicy::Record: return "record";
  }
  return "eager";
}

std::string_view to_string(TensorCopy copy) {
  switch (copy) {
    case TensorCopy::Torch: return "torch";
    case TensorCopy::FakeDevice: return "fake-device";
    case TensorCopy::Auto: break;
  }
  return "auto";
}

std::string levels_to_string(const Levels& levels) {
  std::string out;
  auto add = [&out](bool on, std::string_view name) {
    if (!on) return;
    if (!out.empty()) out += ',';
    out += name;
  };
  add(levels.numpy, "numpy");
  add(levels.torch_function, "torch_function");
  add(levels.torch_dispatch, "torch_dispatch");
  add(levels.collective, "collective");
  return out;
}

}  // namespace ophook::core
