#pragma once
#include <string>
#include <vector>

#include "python_common.hpp"

namespace ophook::py::compiled_kernels {

/// One place in the generated code's call() that launches a kernel: what the launch there reads
/// and writes, and where it comes from. Inductor launches one kernel from several places (the
/// same fused code for every layer; every matrix product through extern_kernels.mm), each with
/// its own aten ops, lines and modules, and its own buffers.
struct KernelSite {
  int line = 0;            // the line of call() that launches it, in the generated module
  std::string annotation;  // trace-line fields: "computes":[…],"sources":[…],"modules":[…] (JSON text)
  /// Positional arguments read (inputs) and written (outputs): a fused kernel's in_ptr/in_out_ptr
  /// and in_out_ptr/out_ptr pointers (an extern kernel's are all inputs, its output its `out=`
  /// argument, else its result).
  std::vector<int> reads, writes;
  /// A pointer both read and written (in_out_ptr): OPHOOK_NAN judges the inputs before the launch.
  /// Derived from `reads` and `writes` by new_launcher.
  bool writes_inputs = false;
  /// The user's line the site's FX nodes come from (empty file: none known).
  std::string source_file, source_function;
  int source_line = 0;
};

/// A kernel of Inductor's generated code and the places that launch it (at least one).
struct KernelSpec {
  std::string name;  // the op: "inductor.0_forward.cpp_fused_gelu_native_layer_norm_0"
  bool extern_call = false;  // an extern kernel (extern_kernels.mm…)
  std::vector<KernelSite> sites;
};

/// OPHOOK_COMPILE=record: a callable that runs `kernel` with the arguments it is given and, when
/// recorder_for() says so, records the launch at level `compiled` as the site it is launched from
/// says (inputs before the launch, outputs after, OPHOOK_NAN judged as for any call, the site's
/// line as its source); each site is an op entry of its own under the kernel's name. Returns
/// what the kernel returns. New reference, or nullptr with an exception set.
PyObject* new_launcher(PyObject* kernel, KernelSpec spec);

/// The launchers' type (borrowed), nullptr with an exception set when it cannot be made ready.
PyObject* launcher_type_object();

}  // namespace ophook::py::compiled_kernels
