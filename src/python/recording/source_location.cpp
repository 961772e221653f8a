#include "recording/source_location.hpp"

#include <frameobject.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

#include "ophook/log.hpp"

namespace ophook::py {
namespace {

struct CodeVerdict {
  bool library = true;
  // torch/multiprocessing/reductions.py: unpickling a tensor sent by another process (a
  // DataLoader worker's batch); the torch calls that rebuild it are not the program's.
  bool tensor_rebuild = false;
  std::uint32_t file_id = 0;
  std::uint32_t func_id = 0;
};

std::vector<PyObject*> compile_wrappers;  // strong; emptied once the notice is given

void give_compile_notice() {
  if (compile_wrappers.empty() || !running_below(compile_wrappers)) return;
  core::log_warn(
      "torch.compile runs eagerly under ophook: results are eager PyTorch's; OPHOOK_COMPILE=ignore keeps it "
      "compiled and unrecorded");
  notice_compiled_calls({});
}

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
    v.library = file.rfind("<frozen importlib._bootstrap", 0) == 0;
    v.tensor_rebuild = file.ends_with("/torch/multiprocessing/reductions.py");
    for (const auto& dir : library_directories()) {
      if (file.compare(0, dir.size(), dir) == 0) v.library = true;
    }
    if (!v.library) {
      v.file_id = recorder.intern(file);
      v.func_id = recorder.intern(attribute_str_or(object, "co_name", "?"));
      give_compile_notice();
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

bool running_below(const std::vector<PyObject*>& codes) {
  if (codes.empty()) return false;
  PyFrameObject* frame = PyEval_GetFrame();  // borrowed
  Py_XINCREF(frame);
  bool found = false;
  while (frame != nullptr && !found) {
    PyCodeObject* code = PyFrame_GetCode(frame);  // new reference
    found = std::find(codes.begin(), codes.end(), reinterpret_cast<PyObject*>(code)) != codes.end();
    Py_DECREF(code);
    PyFrameObject* back = PyFrame_GetBack(frame);  // new reference
    Py_DECREF(frame);
    frame = back;
  }
  Py_XDECREF(frame);
  return found;
}

void notice_compiled_calls(const std::vector<PyObject*>& codes) {
  for (auto* code : compile_wrappers) Py_DECREF(code);
  compile_wrappers = codes;
  for (auto* code : compile_wrappers) Py_INCREF(code);
}

void add_library_directory(const std::string& directory) {
  auto dir = directory;
  if (!dir.empty() && dir.back() != '/') dir += '/';
  auto& dirs = library_directories();
  for (const auto& d : dirs) {
    if (d == dir) return;
  }
  dirs.push_back(dir);
}

CallOrigin locate_source(SourceSite& site, core::Recorder& recorder) {
  return walk_frames(recorder, CallOrigin::Program, [&](PyFrameObject* frame, PyCodeObject* code, const CodeVerdict& v) {
    if (v.tensor_rebuild) return std::optional(CallOrigin::TensorRebuild);
    if (v.library) {
      // A compiled module's ops come from library frames below Dynamo's wrapper.
      if (!compile_wrappers.empty() && std::find(compile_wrappers.begin(), compile_wrappers.end(),
                                                 reinterpret_cast<PyObject*>(code)) != compile_wrappers.end()) {
        give_compile_notice();
      }
      return std::optional<CallOrigin>();
    }
    site = {v.file_id, v.func_id, line_of(frame, code)};
    return std::optional(CallOrigin::Program);
  });
}

}  // namespace ophook::py
