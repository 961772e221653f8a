#pragma once
#include <string>
#include <vector>

#include "python_common.hpp"

namespace ophook::py::compiled_kernels {

/// What a kernel of Inductor's generated code reads and writes, and where it comes from.
struct KernelSpec {
  std::string name;        // the op: "inductor.0_forward.cpp_fused_gelu_native_layer_norm_0"
  std::string annotation;  // trace-line fields: "computes":[…],"sources":[…] (JSON text)
  /// Positional arguments read (inputs) and written (outputs): a fused kernel's in_ptr/in_out_ptr
  /// and in_out_ptr/out_ptr pointers. `extern_call`: an extern kernel (extern_kernels.mm…), whose
  /// arguments are all inputs and whose output is its `out=` argument, else its result.
  std::vector<int> reads, writes;
  bool extern_call = false;
  /// A pointer both read and written (in_out_ptr): OPHOOK_NAN judges the inputs before the launch.
  /// Derived from `reads` and `writes` by new_launcher.
  bool writes_inputs = false;
  /// The user's line the kernel's FX nodes come from (empty file: none known).
  std::string source_file, source_function;
  int source_line = 0;
};

/// OPHOOK_COMPILE=record: a callable that runs `kernel` with the arguments it is given and, when
/// recorder_for() says so, records the launch at level `compiled` (inputs before the launch,
/// outputs after, OPHOOK_NAN judged as for any call, the kernel's line as its source). Returns
/// what the kernel returns. New reference, or nullptr with an exception set.
PyObject* new_launcher(PyObject* kernel, KernelSpec spec);

/// The launchers' type (borrowed), nullptr with an exception set when it cannot be made ready.
PyObject* launcher_type_object();

}  // namespace ophook::py::compiled_kernels
