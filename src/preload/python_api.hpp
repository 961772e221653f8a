#pragma once
#include <cstddef>

namespace ophook::preload {

/// Opaque CPython object: the core never includes Python.h, so that it links no libpython and the
/// same library serves a shared-libpython interpreter and a static one alike.
struct PyObjectOpaque;

/// The few CPython entry points the preload entry needs, found with dlsym in the running process.
struct PythonApi {
  using AuditHook = int (*)(const char* event, PyObjectOpaque* args, void* user_data);
  using Size = std::ptrdiff_t;  // Py_ssize_t
  /// A METH_FASTCALL builtin: (self, arguments, count).
  using FastFunction = PyObjectOpaque* (*)(PyObjectOpaque* self, PyObjectOpaque* const* args, Size nargs);
  /// PyMethodDef, laid out as CPython declares it.
  struct MethodDef {
    const char* name;
    FastFunction function;
    int flags;
    const char* doc;
  };
  static constexpr int kMethFastcall = 0x0080;  // METH_FASTCALL

  int (*add_audit_hook)(AuditHook hook, void* user_data) = nullptr;
  PyObjectOpaque* (*dict_new)() = nullptr;
  int (*dict_set_item_string)(PyObjectOpaque* dict, const char* key, PyObjectOpaque* value) = nullptr;
  PyObjectOpaque* (*eval_get_builtins)() = nullptr;
  PyObjectOpaque* (*run_string_flags)(const char* code, int start, PyObjectOpaque* globals,
                                      PyObjectOpaque* locals, void* flags) = nullptr;
  void (*err_print)() = nullptr;
  void (*err_fetch)(PyObjectOpaque** type, PyObjectOpaque** value, PyObjectOpaque** tb) = nullptr;
  void (*err_restore)(PyObjectOpaque* type, PyObjectOpaque* value, PyObjectOpaque* tb) = nullptr;
  void (*dec_ref)(PyObjectOpaque* object) = nullptr;
  PyObjectOpaque* (*unicode_decode_fs_default)(const char* text, Size size) = nullptr;
  PyObjectOpaque* (*unicode_decode_utf8)(const char* text, Size size, const char* errors) = nullptr;
  PyObjectOpaque* (*cfunction_new)(MethodDef* def, PyObjectOpaque* self, PyObjectOpaque* module) = nullptr;
  int (*bytes_as_string_and_size)(PyObjectOpaque* bytes, char** data, Size* size) = nullptr;
  PyObjectOpaque* (*bool_from_long)(long value) = nullptr;
  int (*err_bad_argument)() = nullptr;

  static constexpr int kFileInput = 257;  // Py_file_input

  /// Resolves every entry point; false when this interpreter is too old to have audit hooks (the
  /// stub loads the core into Python interpreters only), in which case recording stays off.
  bool resolve();
};

}  // namespace ophook::preload
