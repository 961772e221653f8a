#pragma once
// Every translation unit of the extension includes Python through here, so that the NumPy C API
// table is one shared symbol, imported lazily (numpy may never be imported by the program).
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define PY_ARRAY_UNIQUE_SYMBOL ophook_numpy_api
#ifndef OPHOOK_NUMPY_API_OWNER
#define NO_IMPORT_ARRAY
#endif
#include <numpy/arrayobject.h>

#include <string>
#include <string_view>
#include <utility>

namespace ophook::py {

/// str(object) as UTF-8, or `fallback` (the Python error cleared) when that fails. GIL required.
std::string str_or(PyObject* object, std::string_view fallback);
/// str(getattr(object, name)) as UTF-8, or `fallback`.
std::string attribute_str_or(PyObject* object, const char* name, std::string_view fallback);

/// Imports NumPy's C API on first use. False (with no Python error set) when numpy cannot be
/// imported; call only once the program itself has imported numpy. Needs the GIL.
bool ensure_numpy_api() noexcept;

/// A strong reference that is released with the GIL held (only ever destroyed under the GIL).
class PyRef {
 public:
  PyRef() = default;
  static PyRef steal(PyObject* o) { return PyRef(o); }
  static PyRef borrow(PyObject* o) { Py_XINCREF(o); return PyRef(o); }
  PyRef(PyRef&& other) noexcept : o_(other.o_) { other.o_ = nullptr; }
  PyRef& operator=(PyRef&& other) noexcept { std::swap(o_, other.o_); return *this; }
  PyRef(const PyRef&) = delete;
  PyRef& operator=(const PyRef&) = delete;
  ~PyRef() { Py_XDECREF(o_); }
  PyObject* get() const { return o_; }
  /// Gives the reference up to the caller.
  PyObject* release() { return std::exchange(o_, nullptr); }
  explicit operator bool() const { return o_ != nullptr; }

 private:
  explicit PyRef(PyObject* o) : o_(o) {}
  PyObject* o_ = nullptr;
};

}  // namespace ophook::py
