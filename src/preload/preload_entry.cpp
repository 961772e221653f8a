// The core's side of the LD_PRELOAD entry: the preloaded stub (preload_stub.cpp) calls
// ophook_preload_attach once it has found a Python interpreter that is not initialised yet; it
// arranges for the bootstrap (python_shim/ophook/_bootstrap.py) to run once the interpreter is
// ready to run user code (the first "cpython.run_*" audit event, which fires after `site`, with
// the GIL held).
#include <sys/stat.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>

#include "core_handoff.hpp"
#include "debug_allocator.hpp"
#include "empty_root_run.hpp"
#include "ophook/config/settings.hpp"
#include "ophook/export.hpp"
#include "ophook/process/recorder.hpp"
#include "ophook/process/run_root.hpp"
#include "python_api.hpp"

namespace ophook::preload {
namespace {

PythonApi api;
std::atomic<bool> bootstrap_done{false};
std::string stub_library_path;  // libophook.so, resolved: the shim and the package lie beside it

const std::string& library_path() { return stub_library_path; }

std::string dirname_of(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

bool is_file(const std::string& path) {
  struct stat st{};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

constexpr char kBootstrapModule[] = "/ophook/_bootstrap.py";

/// The directory holding the `ophook` package: build/python_shim beside build/libophook.so, or the
/// site-packages directory when the library lies inside an installed ophook package.
std::string shim_directory() {
  const auto dir = dirname_of(library_path());
  for (const auto& candidate : {dir + "/python_shim", dirname_of(dir)}) {
    if (is_file(candidate + kBootstrapModule)) return candidate;
  }
  return {};
}

/// The configuration errors of the environment, NUL-separated: checked here, so that the
/// bootstrap need not load the extension before the program imports a framework.
std::string config_errors_text() {
  std::string out;
  for (const auto& error : core::parse_config_from_environment().errors) {
    if (!out.empty()) out += '\0';
    out += error.message();
  }
  return out;
}

/// _OPHOOK_WRITE_EMPTY_ROOT_RUN(settings, python_version, start_message), all bytes: see
/// write_empty_root_run. Returns True when the output was written.
PyObjectOpaque* write_empty_root_run_builtin(PyObjectOpaque*, PyObjectOpaque* const* args, PythonApi::Size nargs) {
  std::string_view parts[3];
  if (nargs != 3) return api.err_bad_argument(), nullptr;
  for (int i = 0; i < 3; ++i) {
    char* data = nullptr;
    PythonApi::Size size = 0;
    if (api.bytes_as_string_and_size(args[i], &data, &size) != 0) return nullptr;  // TypeError set
    parts[i] = {data, static_cast<std::size_t>(size)};
  }
  return api.bool_from_long(write_empty_root_run(parts[0], parts[1], parts[2]));
}

PythonApi::MethodDef write_empty_root_run_def{"_OPHOOK_WRITE_EMPTY_ROOT_RUN", &write_empty_root_run_builtin,
                                              PythonApi::kMethFastcall, nullptr};

/// Sets globals[name] = value, taking over the reference; false when value is null (an error set).
bool define(PyObjectOpaque* globals, const char* name, PyObjectOpaque* value) {
  if (value == nullptr) return false;
  const bool ok = api.dict_set_item_string(globals, name, value) == 0;
  api.dec_ref(value);
  return ok;
}

// The root variables' names and the default output directory, NUL-separated, for the Python
// package, which needs them before it loads the extension (python_shim/ophook/_settings.py).
const std::string kRunRoot = std::string(core::kRootPidVariable) + '\0' + core::kRootOutputVariable + '\0' +
                             core::kDefaultOutput;

// Compiled per process, so kept to one line: the bootstrap proper comes from its cached bytecode.
constexpr char kBootstrapLoader[] =
    "exec(__import__('_frozen_importlib_external').SourceFileLoader('ophook._bootstrap', "
    "_OPHOOK_BOOTSTRAP).get_code('ophook._bootstrap'))\n";

void run_bootstrap() {
  const auto shim = shim_directory();
  if (shim.empty()) {
    std::fprintf(stderr, "[ophook] no ophook package found beside %s: running unhooked\n", library_path().c_str());
    return;
  }
  // Run in a fresh globals dict: PyRun_SimpleString would leave names in the user's __main__.
  PyObjectOpaque *type = nullptr, *value = nullptr, *tb = nullptr;
  api.err_fetch(&type, &value, &tb);
  const auto bootstrap = shim + kBootstrapModule;
  const auto init = shim + "/ophook/__init__.py";
  const auto errors = config_errors_text();
  if (auto* globals = api.dict_new()) {
    const bool defined =
        api.dict_set_item_string(globals, "__builtins__", api.eval_get_builtins()) == 0 &&
        define(globals, "_OPHOOK_BOOTSTRAP", api.unicode_decode_fs_default(bootstrap.data(), bootstrap.size())) &&
        define(globals, "_OPHOOK_PACKAGE_INIT", api.unicode_decode_fs_default(init.data(), init.size())) &&
        define(globals, "_OPHOOK_CONFIG_ERRORS", api.unicode_decode_utf8(errors.data(), errors.size(), "replace")) &&
        define(globals, "_OPHOOK_WRITE_EMPTY_ROOT_RUN", api.cfunction_new(&write_empty_root_run_def, nullptr, nullptr)) &&
        define(globals, "_OPHOOK_RUN_ROOT", api.unicode_decode_utf8(kRunRoot.data(), kRunRoot.size(), "strict"));
    auto* result = defined ? api.run_string_flags(kBootstrapLoader, PythonApi::kFileInput, globals, globals, nullptr) : nullptr;
    if (result != nullptr) {
      api.dec_ref(result);
    } else {
      api.err_print();
    }
    api.dec_ref(globals);
  }
  api.err_restore(type, value, tb);
}

int audit_hook(const char* event, PyObjectOpaque*, void*) {
  if (bootstrap_done.load(std::memory_order_relaxed) || std::strncmp(event, "cpython.run_", 12) != 0) return 0;
  // Set before running anything: the bootstrap's own imports raise audit events that re-enter.
  if (bootstrap_done.exchange(true)) return 0;
  run_bootstrap();
  return 0;
}

void prepend_to_pythonpath(const std::string& dir) {
  const char* old = std::getenv("PYTHONPATH");
  const std::string value = old && *old ? dir + ":" + old : dir;
  ::setenv("PYTHONPATH", value.c_str(), 1);
}

void attach(const char* stub_path) {
  if (!api.resolve()) return;  // an interpreter too old to have audit hooks
  stub_library_path = stub_path;
  if (python_will_use_debug_allocator()) {
    // A pre-initialisation audit hook would crash such an interpreter at exit; the shim's
    // sitecustomize starts the same recorder instead.
    if (const auto shim = shim_directory(); !shim.empty()) prepend_to_pythonpath(shim);
    return;
  }
  api.add_audit_hook(&audit_hook, nullptr);
}

}  // namespace
}  // namespace ophook::preload

// The entry points the stub looks up by name (core_handoff.hpp); the types are checked there.
extern "C" OPHOOK_API void ophook_preload_attach(const char* stub_path) {
  static_assert(std::is_same_v<decltype(&ophook_preload_attach), ophook::preload::AttachFunction>);
  ophook::preload::attach(stub_path);
}

extern "C" OPHOOK_API void ophook_preload_finish_before_exit() {
  static_assert(std::is_same_v<decltype(&ophook_preload_finish_before_exit),
                               ophook::preload::FinishBeforeExitFunction>);
  ophook::core::Recorder::finish_before_exit();
}
