#pragma once
#include <string>
#include <utility>
#include <vector>

#include "python_common.hpp"

namespace ophook::py {

/// Patches NumPy at the C level, keeping every object's identity: each ufunc's vectorcall slot
/// (np.add(a, b), a + b, a += b all reach it), the ufunc type's method table entries (reduce,
/// accumulate, reduceat, outer, at — bound methods read ml_meth at every call) and each
/// __array_function__ dispatcher's vectorcall slot (NumPy >= 1.25). Every patch is recorded with
/// its original so that unpatch_numpy() restores exactly what was there. GIL required.
class NumpyHooks {
 public:
  /// (ufunc, qualified name) pairs; already patched objects are skipped. Returns how many were patched.
  static int patch_ufuncs(const std::vector<std::pair<PyObject*, std::string>>& objects);
  /// Patches the method table of the ufunc type. Returns the method names patched.
  static std::vector<std::string> patch_ufunc_methods(PyObject* ufunc_type);
  /// (dispatcher, qualified name) pairs, as for patch_ufuncs.
  static int patch_dispatchers(const std::vector<std::pair<PyObject*, std::string>>& objects);
  /// Restores every patched pointer. Returns how many were restored.
  static int unpatch_all();
  /// How many objects are currently patched (ufuncs + dispatchers + methods).
  static int patched_count();
};

}  // namespace ophook::py
