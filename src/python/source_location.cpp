#include "source_location.hpp"

#include <frameobject.h>

#include <array>
#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

namespace ophook::py {
namespace {

struct CodeVerdict {
  bool library = true;
  bool import_machinery = false;  // importlib's frozen bootstrap: a module is being imported
  std::uint32_t file_id = 0;
  std::uint32_t func_id = 0;
};

std::vector<std::string>& library_directories() {
  static std::vector<std::string> dirs;
  return dirs;
}

const CodeVerdict& verdict(core::Recorder& recorder, PyCodeObject* code) {
  static std::unordered_map<PyCodeObject*, CodeVerdict> cache;
  static PyCodeObject* last_code = nullptr;  // a loop calls from one code object over and over
  static const CodeVerdict* last_verdict = nullptr;
  if (code == last_code) return *last_verdict;
  auto it = cache.find(code);
  if (it == cache.end()) {
    auto* object = reinterpret_cast<PyObject*>(code);
    const auto file = attribute_str_or(object, "co_filename", "?");
    CodeVerdict v;
    v.import_machinery = file.rfind("<frozen importlib._bootstrap", 0) == 0;
    v.library = v.import_machinery;
    for (const auto& dir : library_directories()) {
      if (file.compare(0, dir.size(), dir) == 0) v.library = true;
    }
    if (!v.library) {
      v.file_id = recorder.intern(file);
      v.func_id = recorder.intern(attribute_str_or(object, "co_name", "?"));
    }
    Py_INCREF(object);  // the key stays valid: a freed code object's address is never reused here
    it = cache.emplace(code, v).first;
  }
  last_code = code, last_verdict = &it->second;
  return it->second;
}

/// The line a frame is at. PyFrame_GetLineNumber decodes the code's line table from its start on
/// every call; the result only depends on (code, instruction offset), so it is cached in a small
/// direct-mapped table. Code objects in it are kept alive by verdict()'s cache.
int line_of(PyFrameObject* frame, PyCodeObject* code) {
#if PY_VERSION_HEX >= 0x030B0000
  struct Entry {
    PyCodeObject* code = nullptr;
    int lasti = -1;
    int line = 0;
  };
  static std::array<Entry, 512> cache;
  const int lasti = PyFrame_GetLasti(frame);
  auto& entry = cache[((reinterpret_cast<std::uintptr_t>(code) >> 4) ^ static_cast<std::uintptr_t>(lasti) * 0x9E37u) %
                      cache.size()];
  if (entry.code != code || entry.lasti != lasti) entry = {code, lasti, PyFrame_GetLineNumber(frame)};
  return entry.line;
#else
  (void)code;
  return PyFrame_GetLineNumber(frame);
#endif
}

/// Walks the calling thread's frames from the innermost while `visit(frame, code, verdict)`
/// returns nullopt; returns the first value it gives, or `otherwise` past the outermost frame.
template <typename Result, typename Visit>
Result walk_frames(core::Recorder& recorder, Result otherwise, Visit&& visit) {
  PyFrameObject* frame = PyEval_GetFrame();  // borrowed
  PyFrameObject* owned = nullptr;             // outer frames come as new references
  std::optional<Result> found;
  while (frame != nullptr && !found) {
    PyCodeObject* code = PyFrame_GetCode(frame);  // new reference; the frame keeps one too
    Py_DECREF(code);
    found = visit(frame, code, verdict(recorder, code));
    PyFrameObject* back = found ? nullptr : PyFrame_GetBack(frame);
    Py_XDECREF(owned);
    frame = owned = back;
  }
  Py_XDECREF(owned);
  return found.value_or(otherwise);
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
  walk_frames(recorder, false, [&](PyFrameObject* frame, PyCodeObject* code, const CodeVerdict& v) {
    if (v.library) return std::optional<bool>();
    record.source_file_id = v.file_id;
    record.source_func_id = v.func_id;
    record.source_line = line_of(frame, code);
    return std::optional<bool>(true);
  });
}

bool called_by_library_import(core::Recorder& recorder) {
  return walk_frames(recorder, false, [](PyFrameObject*, PyCodeObject*, const CodeVerdict& v) {
    if (v.import_machinery) return std::optional<bool>(true);
    return v.library ? std::optional<bool>() : std::optional<bool>(false);
  });
}

}  // namespace ophook::py
