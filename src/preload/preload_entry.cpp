// The core's side of the LD_PRELOAD entry: the preloaded stub (preload_stub.cpp) calls
// ophook_preload_attach once it has found a Python interpreter that is not initialised yet; it
// arranges for the embedded bootstrap to run once the interpreter is ready to run user code (the
// first "cpython.run_*" audit event, which fires after `site`, with the GIL held).
#include <sys/stat.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>

#include "core_handoff.hpp"
#include "debug_allocator.hpp"
#include "embedded_bootstrap.hpp"
#include "ophook/config.hpp"
#include "ophook/export.hpp"
#include "ophook/recorder.hpp"
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

/// The directory holding the `ophook` package: build/python_shim beside build/libophook.so, or the
/// site-packages directory when the library lies inside an installed ophook package.
std::string shim_directory() {
  const auto dir = dirname_of(library_path());
  for (const auto& candidate : {dir + "/python_shim", dirname_of(dir)}) {
    if (is_file(candidate + "/ophook/__init__.py")) return candidate;
  }
  return {};
}

std::string hex(std::string_view s) {
  static const char digits[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : s) out += digits[c >> 4], out += digits[c & 15];
  return out;
}

/// The configuration errors of the environment as a Python list literal of hex-encoded
/// messages: checked here, so that the bootstrap need not load the extension before the program
/// imports a framework.
std::string config_errors_literal() {
  std::string out = "[";
  for (const auto& error : core::parse_config_from_environment().errors) {
    out += "'" + hex(error.message()) + "',";
  }
  return out + "]";
}

void run_bootstrap() {
  // Run in a fresh globals dict: PyRun_SimpleString would leave names in the user's __main__.
  PyObjectOpaque *type = nullptr, *value = nullptr, *tb = nullptr;
  api.err_fetch(&type, &value, &tb);
  const std::string code = "_OPHOOK_LIBRARY = bytes.fromhex('" + hex(library_path()) + "').decode()\n" +
                           "_OPHOOK_CONFIG_ERRORS = " + config_errors_literal() + "\n" +
                           kEmbeddedBootstrap;
  if (auto* globals = api.dict_new()) {
    api.dict_set_item_string(globals, "__builtins__", api.eval_get_builtins());
    if (auto* result = api.run_string_flags(code.c_str(), PythonApi::kFileInput, globals, globals, nullptr)) {
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
