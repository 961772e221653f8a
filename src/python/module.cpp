// The _ophook extension module: the Python-facing surface of the recorder. Policy (what to patch,
// when, which errors end the program) lives in the Python shim; mechanism lives here and in core.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdlib>
#include <optional>

#include "import_guard.hpp"
#include "numpy/hooks.hpp"
#include "ophook/config/config_json.hpp"
#include "ophook/config/settings.hpp"
#include "ophook/error.hpp"
#include "ophook/log.hpp"
#include "ophook/process/process_rank.hpp"
#include "ophook/process/recorder.hpp"
#include "ophook/process/run_facts.hpp"
#include "ophook/process/run_root.hpp"
#include "ophook/stats/stats.hpp"
#include "overrides.hpp"
#include "program_pause.hpp"
#include "python_common.hpp"
#include "recording/device_reads.hpp"
#include "recording/source_location.hpp"
#include "recording/step_counter.hpp"
#include "thread_state.hpp"
#include "torch/bindings.hpp"
#include "torch/tensors/tensors.hpp"
#include "trigger_listener.hpp"

namespace pb = pybind11;
using ophook::core::Recorder;

namespace ophook::py {
namespace {

using core::Settings;

std::vector<std::string> config_errors(const Settings& settings) {
  std::vector<std::string> out;
  for (const auto& error : core::parse_config(settings).errors) out.push_back(error.message());
  return out;
}

/// A path or environment value as Python's os module spells it: undecodable bytes (a non-UTF-8
/// OPHOOK_OUTPUT) come back surrogate-escaped instead of raising UnicodeDecodeError.
pb::str os_text(const std::string& bytes) {
  PyObject* text = PyUnicode_DecodeFSDefaultAndSize(bytes.data(), static_cast<Py_ssize_t>(bytes.size()));
  if (!text) throw pb::error_already_set();
  return pb::reinterpret_steal<pb::str>(text);
}

/// Starts (or returns) the process's recorder with `settings` (OPHOOK_* name → value) and turns
/// recording on. Returns the output directory, or None in a rank that OPHOOK_RANKS leaves out
/// (nothing is started there: the rank runs unrecorded and writes nothing).
pb::object start(const Settings& settings) {
  auto parsed = core::parse_config(settings);
  if (!parsed.errors.empty()) throw Error(parsed.errors.front().message());
  core::set_log_level(parsed.config.log_level);
  // RANK, inherited or not: a DataLoader worker of a rank left out is left out too.
  const long rank = core::ProcessRank::from_environment();
  if (rank >= 0 && !parsed.config.ranks.contains(static_cast<std::uint64_t>(rank))) return pb::none();
  auto* running = Recorder::get();
  auto& recorder = running && !running->finished() ? *running : Recorder::start(parsed.config);
  install_program_pause();
  steps::reset();
  forget_noted_torch_threads();
  RecordingGate::set(RecordingGate::kRankSelected, true);
  if (!recorder.config().imports) import_guard::install(PyImport_AddModule("_frozen_importlib"));
  RecordingGate::set(RecordingGate::kOn, true);
  return os_text(recorder.output_path());
}

Recorder& running_recorder() {
  auto* recorder = Recorder::get();
  if (recorder == nullptr) throw Error("ophook is not started");
  return *recorder;
}

std::vector<std::pair<PyObject*, std::string>> object_names(const pb::list& items) {
  std::vector<std::pair<PyObject*, std::string>> out;
  for (const auto& item : items) {
    auto pair = item.cast<pb::tuple>();
    out.emplace_back(pair[0].ptr(), pair[1].cast<std::string>());
  }
  return out;
}

/// XXH64 of each buffer's bytes: the digest a `stats` record carries for the same bytes, by the same
/// code. "|V1" has no statistics, so only the digest is computed; the GIL is released meanwhile.
std::vector<std::uint64_t> digests(const pb::list& buffers) {
  std::vector<pb::buffer_info> views;
  views.reserve(buffers.size());
  for (const auto& buffer : buffers) {
    views.push_back(pb::reinterpret_borrow<pb::buffer>(buffer).request());
    const auto& view = views.back();
    if (view.ndim > 1 || (view.ndim == 1 && view.strides[0] != view.itemsize)) {
      throw pb::value_error("digests: a one-dimensional contiguous buffer expected");
    }
  }
  std::vector<std::uint64_t> out(views.size());
  pb::gil_scoped_release release;
  for (std::size_t i = 0; i < views.size(); ++i) {
    const auto bytes = static_cast<std::size_t>(views[i].size * views[i].itemsize);
    out[i] = core::compute_stats("|V1", static_cast<const std::byte*>(views[i].ptr), bytes).xxh64;
  }
  return out;
}

void log_message(const std::string& level, const std::string& message) {
  core::log(spdlog::level::from_str(level), "{}", message);
}

}  // namespace
}  // namespace ophook::py

PYBIND11_MODULE(_ophook, m) {
  using namespace ophook::py;
  m.doc() = "ophook's native recorder (internal; use the ophook package)";
  pb::register_exception<ophook::Error>(m, "OphookError", PyExc_RuntimeError);
  m.attr("version") = OPHOOK_VERSION;
  m.attr("python_version") = pb::make_tuple(PY_MAJOR_VERSION, PY_MINOR_VERSION);

  m.def("config_errors", &config_errors, "Messages for every invalid setting in an OPHOOK_* mapping.");
  m.def(
      "settings",
      [] {
        pb::list out;
        for (const auto& s : ophook::core::settings()) {
          pb::dict row;
          row["variable"] = s.variable();
          row["option"] = s.option();
          row["keyword"] = s.keyword();
          row["metavar"] = std::string(s.metavar);
          row["values"] = std::string(s.values);
          row["default"] = std::string(s.default_text);
          row["help"] = std::string(s.help);
          out.append(row);
        }
        return out;
      },
      "The OPHOOK_* settings table: variable, option, keyword, metavar, values, default, help.");
  m.def("start", &start, "Start recording with an OPHOOK_* mapping; returns the output directory.");
  m.def("set_recording", [](bool on) { RecordingGate::set(RecordingGate::kOn, on); });
  m.def("is_recording", [] { return RecordingGate::on() && Recorder::get() && !Recorder::get()->finished(); });
  m.def("flush", [] {
    resolve_held_device_reads();
    pb::gil_scoped_release release;
    if (auto* r = Recorder::get()) r->flush();
  });
  m.def(
      "dump_ring",
      [](const std::string& why) {
        pb::gil_scoped_release release;
        auto* r = Recorder::get();
        return r != nullptr && r->dump_ring(why);
      },
      "Write dump mode's ring (OPHOOK_RING_BYTES) now, `why` noted; False when there is none.");
  m.def("records_ops", [] {
    auto* r = Recorder::get();
    return r == nullptr || r->config().records_ops;
  }, "False when the training monitor runs alone: no op call is recorded (docs/monitor.md).");
  m.def("uses_ring", [] {
    auto* r = Recorder::get();
    return r != nullptr && !r->finished() && ophook::core::uses_ring(r->config());
  });
  m.def(
      "ring_description",
      [](const Settings& settings) { return ophook::core::ring_description(ophook::core::parse_config(settings).config); },
      "The start line's words for the ring that an OPHOOK_* mapping sets up (\"\" for none).");
  m.def("finish", [] {
    RecordingGate::set(RecordingGate::kOn, false);
    import_guard::uninstall();
    Recorder::run_exit_hooks();  // what the capturing side held back goes in first
    pb::gil_scoped_release release;
    if (auto* r = Recorder::get()) r->finish();
  });
  m.def(
      "set_trigger_listener", [](pb::object callable) { set_trigger_listener(callable.is_none() ? nullptr : callable.ptr()); },
      pb::arg("callable"),
      "callable(why) is told of the ring's triggers that fire on the program's side (the first NaN/Inf, a "
      "termination signal), so that the other ranks of a job write theirs; None: nobody.");
  m.def("exported_environment", [] {
    // What the recorder exported with setenv(), which os.environ does not see by itself.
    pb::dict out;
    for (const char* name : {ophook::core::kRootPidVariable, ophook::core::kRootOutputVariable,
                             ophook::core::ProcessRank::kHeldRankVar}) {
      if (const char* value = std::getenv(name)) out[name] = os_text(value);
    }
    return out;
  });
  m.def(
      "run_root_names",
      [] {
        return pb::make_tuple(ophook::core::kRootPidVariable, ophook::core::kRootOutputVariable,
                              ophook::core::kDefaultOutput);
      },
      "(the root pid variable, the root output variable, the default output directory): the names the "
      "recorder uses.");
  m.def("output_path", [] { return os_text(running_recorder().output_path()); });
  m.def("config", [] { return ophook::core::config_to_json(running_recorder().config()).dump(); });
  m.def("set_version", [](const std::string& k, const std::string& v) { running_recorder().facts().set_version(k, v); });
  m.def("add_note", [](const std::string& k, const std::string& json) {
    running_recorder().facts().add_note(k, nlohmann::json::parse(json));
  });
  m.def("log", &log_message, pb::arg("level"), pb::arg("message"));
  m.def("digests", &digests, pb::arg("buffers"),
        "XXH64 of each C-contiguous buffer's bytes, as a stats record's xxh64 (OPHOOK_REPLICAS' digests).");
  m.def("step", &steps::complete_one, "One more step is complete (ophook.step(), the optimizer's post-hook).");
  m.def("steps_completed", &steps::completed, "Steps completed in this process so far.");
  m.def(
      "learn_rank",
      [](std::optional<long> rank) -> pb::object {
        const long known = rank.value_or(ophook::core::ProcessRank::from_environment());
        if (known < 0) return pb::none();
        auto* recorder = Recorder::get();
        if (recorder != nullptr) recorder->learn_rank(known);
        const bool selected =
            recorder == nullptr || recorder->config().ranks.contains(static_cast<std::uint64_t>(known));
        RecordingGate::set(RecordingGate::kRankSelected, selected);
        if (!selected) {
          ophook::core::log_info("rank {} is not in OPHOOK_RANKS: no more calls are recorded in this process",
                                      known);
        }
        return pb::bool_(selected);
      },
      pb::arg("rank") = pb::none(),
      "The rank this process learned after it started: torch.distributed's, or None for a RANK the "
      "program set. Names a child's directory after it; records stop if OPHOOK_RANKS leaves it out. "
      "Returns whether it is selected, or None when there is no rank to learn.");

  m.def("enable_numpy_capture", [] { return ensure_numpy_api(); },
        "Import NumPy's C API (call once numpy is imported).");
  m.def("add_library_directory", &add_library_directory);
  m.def("patch_ufuncs", [](const pb::list& items) { return NumpyHooks::patch_ufuncs(object_names(items)); });
  m.def("patch_ufunc_methods", [](const pb::object& type) { return NumpyHooks::patch_ufunc_methods(type.ptr()); });
  m.def("patch_dispatchers", [](const pb::list& items) { return NumpyHooks::patch_dispatchers(object_names(items)); });
  m.def("unpatch_numpy", &NumpyHooks::unpatch_all);
  m.def("patched_count", &NumpyHooks::patched_count);
  m.def("set_override", [](const std::string& op, const pb::object& rule) { set_override(op, rule.ptr()); },
        "Register an override rule for a qualified op name (use ophook.override).");
  m.def(
      "in_outermost_call",
      [] {
        // During a recorded call its own depth is counted: 1 in all means no recorded call encloses it.
        const ThreadState& state = thread_state();
        int depth = 0;
        for (const int level_depth : state.depth) depth += level_depth;
        return state.innermost_seq != ophook::core::CallRecord::kNoParent && depth == 1;
      },
      "Whether the call whose override rule runs now is recorded and no recorded call encloses it (its "
      "record's parent is null): `ophook bisect` counts only those calls.");
  bind_torch(m);
}
