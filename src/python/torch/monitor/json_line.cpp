#include "torch/monitor/json_line.hpp"

#include <charconv>
#include <cmath>
#include <string>
#include <string_view>

namespace pb = pybind11;

namespace ophook::py::monitor {
namespace {

void append_string(std::string& out, std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  out.push_back('"');
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(c);
    } else if (byte < 0x20) {
      out.append("\\u00");
      out.push_back(kHex[byte >> 4]);
      out.push_back(kHex[byte & 15]);
    } else {
      out.push_back(c);  // UTF-8 as it is: JSON text may hold any character but these
    }
  }
  out.push_back('"');
}

void append_str_object(std::string& out, PyObject* text) {
  Py_ssize_t size = 0;
  const char* utf8 = PyUnicode_AsUTF8AndSize(text, &size);
  if (utf8 == nullptr) throw pb::error_already_set();
  append_string(out, std::string_view(utf8, static_cast<std::size_t>(size)));
}

void append_double(std::string& out, double value) {
  if (!std::isfinite(value)) throw pb::value_error("Out of range float values are not JSON compliant");
  char digits[32];
  const auto end = std::to_chars(digits, digits + sizeof digits, value).ptr;
  const std::string_view text(digits, static_cast<std::size_t>(end - digits));
  out.append(text);
  // As Python writes a float: 2.0, not the integer 2.
  if (text.find_first_of(".e") == std::string_view::npos) out.append(".0");
}

void append_int(std::string& out, PyObject* value) {
  int overflow = 0;
  const long long number = PyLong_AsLongLongAndOverflow(value, &overflow);
  if (overflow != 0) throw pb::type_error("an int beyond 64 bits");
  if (number == -1 && PyErr_Occurred()) throw pb::error_already_set();
  char digits[24];
  out.append(digits, std::to_chars(digits, digits + sizeof digits, number).ptr);
}

void append_value(std::string& out, PyObject* value);

void append_dict(std::string& out, PyObject* dict) {
  out.push_back('{');
  Py_ssize_t position = 0;
  PyObject* key = nullptr;
  PyObject* item = nullptr;
  bool first = true;
  while (PyDict_Next(dict, &position, &key, &item)) {
    if (!first) out.append(", ");
    first = false;
    if (PyUnicode_Check(key)) {
      append_str_object(out, key);
    } else if (PyLong_Check(key) && !PyBool_Check(key)) {
      out.push_back('"');  // json.dumps writes an int key as its digits
      append_int(out, key);
      out.push_back('"');
    } else {
      throw pb::type_error("a key that is neither str nor int");
    }
    out.append(": ");
    append_value(out, item);
  }
  out.push_back('}');
}

void append_sequence(std::string& out, PyObject* sequence) {
  out.push_back('[');
  const Py_ssize_t size = PySequence_Fast_GET_SIZE(sequence);
  PyObject** items = PySequence_Fast_ITEMS(sequence);
  for (Py_ssize_t i = 0; i < size; ++i) {
    if (i > 0) out.append(", ");
    append_value(out, items[i]);
  }
  out.push_back(']');
}

void append_value(std::string& out, PyObject* value) {
  if (value == Py_None) {
    out.append("null");
  } else if (value == Py_True) {
    out.append("true");
  } else if (value == Py_False) {
    out.append("false");
  } else if (PyFloat_Check(value)) {
    append_double(out, PyFloat_AS_DOUBLE(value));
  } else if (PyLong_Check(value)) {
    append_int(out, value);
  } else if (PyUnicode_Check(value)) {
    append_str_object(out, value);
  } else if (PyDict_Check(value)) {
    append_dict(out, value);
  } else if (PyList_Check(value) || PyTuple_Check(value)) {
    append_sequence(out, value);
  } else {
    throw pb::type_error("an object json_line does not write");
  }
}

}  // namespace

pb::str json_line(pb::handle line) {
  std::string out;
  out.reserve(16384);
  append_value(out, line.ptr());
  return pb::str(out);
}

}  // namespace ophook::py::monitor
