#include "python_common.hpp"

namespace ophook::py {

std::string str_or(PyObject* object, std::string_view fallback) {
  PyRef text = PyRef::steal(object ? PyObject_Str(object) : nullptr);
  const char* utf8 = text ? PyUnicode_AsUTF8(text.get()) : nullptr;
  if (utf8 == nullptr) {
    PyErr_Clear();
    return std::string(fallback);
  }
  return utf8;
}

std::string attribute_str_or(PyObject* object, const char* name, std::string_view fallback) {
  PyRef value = PyRef::steal(PyObject_GetAttrString(object, name));
  if (!value) PyErr_Clear();
  return str_or(value.get(), fallback);
}

}  // namespace ophook::py
