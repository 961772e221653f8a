#pragma once
#include "ophook/export.hpp"
#include <cstdint>
#include <string>
#include <string_view>

namespace ophook::core {

/// Replaces every character outside [A-Za-z0-9._-] with '_' ("aten.add.Tensor" stays,
/// "numpy.add.reduce" stays, "../x" becomes ".._x"); never yields "." or "..". A result longer
/// than 200 bytes (no file name could hold it) is cut to 183 bytes + '-' + the 16 hex digits of
/// the xxh64 of `op`. Pure.
OPHOOK_API std::string sanitize_op_name(std::string_view op);

/// "op_<op>_input<k>_<seq>.npy", seq zero-padded to at least 6 digits. `op` must be sanitized.
OPHOOK_API std::string input_file_name(std::string_view sanitized_op, unsigned k, std::uint64_t seq);

/// "op_<op>_output_<seq>.npy" when k == 0 (single output), else "op_<op>_output<k>_<seq>.npy".
OPHOOK_API std::string output_file_name(std::string_view sanitized_op, unsigned k, std::uint64_t seq);

}  // namespace ophook::core
