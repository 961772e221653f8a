#include "python_api.hpp"

#include <dlfcn.h>

namespace ophook::preload {
namespace {

template <typename F>
bool find(F& slot, const char* name) {
  slot = reinterpret_cast<F>(::dlsym(RTLD_DEFAULT, name));
  return slot != nullptr;
}

}  // namespace

bool PythonApi::resolve() {
  return find(add_audit_hook, "PySys_AddAuditHook") && find(dict_new, "PyDict_New") &&
         find(dict_set_item_string, "PyDict_SetItemString") && find(eval_get_builtins, "PyEval_GetBuiltins") && find(run_string_flags, "PyRun_StringFlags") &&
         find(err_print, "PyErr_Print") && find(err_fetch, "PyErr_Fetch") &&
         find(err_restore, "PyErr_Restore") && find(dec_ref, "Py_DecRef") &&
         find(unicode_decode_fs_default, "PyUnicode_DecodeFSDefaultAndSize") &&
         find(unicode_decode_utf8, "PyUnicode_DecodeUTF8") && find(cfunction_new, "PyCFunction_NewEx") &&
         find(bytes_as_string_and_size, "PyBytes_AsStringAndSize") && find(bool_from_long, "PyBool_FromLong") &&
         find(err_bad_argument, "PyErr_BadArgument");
}

}  // namespace ophook::preload
