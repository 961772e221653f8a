#include "source_location.hpp"

#include <frameobject.h>

#include <unordered_map>
#include <vector>

namespace ophook::py {
namespace {

struct CodeVerdict {
  bool library = true;
  std::uint32_t file_id = 0;
  std::uint32_t func_id = 0;
};

std::vector<std::string>& library_directories() {
  static std::vector<std::string> dirs;
  return dirs;
}

const CodeVerdict& verdict(core::Recorder& recorder, PyCodeObject* code) {
  static std::unordered_map<PyCodeObject*, CodeVerdict> cache;
  if (auto it = cache.find(code); it != cache.end()) return it->second;
  auto* object = reinterpret_cast<PyObject*>(code);
  const auto file = attribute_str_or(object, "co_filename", "?");
  CodeVerdict v;
  v.library = false;
  for (const auto& dir : library_directories()) {
    if (file.compare(0, dir.size(), dir) == 0) v.library = true;
  }
  if (!v.library) {
    v.file_id = recorder.intern(file);
    v.func_id = recorder.intern(attribute_str_or(object, "co_name", "?"));
  }
  Py_INCREF(object);  // the key stays valid: a freed code object's address is never reused here
  return cache.emplace(code, v).first->second;
}

}  // namespace

void add_library_directory(const std::string& directory) {
  auto dir = directory;
  if (!dir.empty() && dir.back() != '/') dir += '/';
  auto& dirs = library_directories();
  for (const auto& d : dirs) {
    if (d == dir) return;
  }
  dirs.push_back(dir);
}

void locate_source(core::CallRecord& record, core::Recorder& recorder) {
  PyFrameObject* frame = PyEval_GetFrame();  // borrowed
  Py_XINCREF(frame);
  while (frame != nullptr) {
    PyCodeObject* code = PyFrame_GetCode(frame);  // new reference
    const auto& v = verdict(recorder, code);
    Py_DECREF(code);
    if (!v.library) {
      record.source_file_id = v.file_id;
      record.source_func_id = v.func_id;
      record.source_line = PyFrame_GetLineNumber(frame);
      Py_DECREF(frame);
      return;
    }
    PyFrameObject* back = PyFrame_GetBack(frame);  // new reference
    Py_DECREF(frame);
    frame = back;
  }
}

}  // namespace ophook::py
