#pragma once
#include <string>
#include <vector>

#include "ophook/model/record.hpp"
#include "python_common.hpp"

namespace ophook::py {

/// The Python half of the device path (python_shim/ophook/_torch/device.py): its functions run
/// with every torch mode, autograd and autocast suspended, and read tensors through torch itself.
/// Loaded once, when torch's device path is enabled, and held for the life of the process. GIL
/// required throughout.
struct TorchDeviceModule {
  PyObject* copy_into = nullptr;
  PyObject* snapshot = nullptr;
  PyObject* statistics = nullptr;
  PyObject* resolve = nullptr;
  PyObject* local_shard = nullptr;
  PyObject* unread_type = nullptr;
  bool loaded() const { return unread_type != nullptr; }
};

/// The module's functions (none before load_torch_device_module() succeeds).
const TorchDeviceModule& torch_device_module();

/// Imports ophook._torch.device. False, said once on stderr, when it cannot be loaded (torch too
/// old): such tensors are then described with a reason. Idempotent.
bool load_torch_device_module();

/// _torch.device.resolve, or null before the module is loaded.
PyObject* resolve_function();

/// Paths of the NVRTC libraries that may go with this torch (_torch.device.nvrtc_libraries), for
/// the statistics kernel's compilation. GIL required.
std::vector<std::string> nvrtc_libraries();

/// For a DTensor: its local shard and the note its record carries; null when `tensor` has none.
PyRef local_shard(PyObject* tensor, std::string& note);

/// The result of `_torch.device.resolve` for one item: true, with the fields, for an Unread.
struct Unread {
  std::string reason, detail;
  bool out_of_memory = false;
};
bool as_unread(PyObject* result, Unread& out);

/// A tensor of `record` not read through torch: the reason goes into array `out`, the first such
/// failure of a run onto stderr, all of them into summary.json (notes.tensors_not_read).
void report_unread(const core::CallRecord& record, core::ArrayCapture& out, const Unread& unread);

/// Clears the Python error left by a failed call and describes it ("Type: message"), keeping a
/// KeyboardInterrupt for the program: it is raised again at the program's next bytecode.
std::string take_python_error();

}  // namespace ophook::py
