#pragma once
#include "ophook/export.hpp"
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ophook::core {

/// Header of a .npy file (format 1.0, or 2.0/3.0 when read).
struct NpyHeader {
  std::string descr;          // numpy dtype.str, e.g. "<f4", "|b1", "<U3", ">i8", "<M8[ns]"
  bool fortran_order = false;
  std::vector<std::int64_t> shape;
  std::size_t header_bytes = 0;  // magic + version + length field + dict + padding
  std::size_t item_size = 0;     // bytes per element, from descr
  std::size_t data_bytes() const;  // product(shape) * item_size
};

/// Bytes per element for a simple descr ("<f4" → 4, "<U3" → 12, "<M8[ns]" → 8); 0 when the
/// descr is not a simple (non-structured, non-object) type.
OPHOOK_API std::size_t npy_item_size(std::string_view descr);

/// Encodes a complete header (magic through the newline) for a C-order array, padded so the data
/// starts at a multiple of 64 bytes, as numpy.save does: version 1.0, 2.0 when the dict exceeds
/// 64 KiB, 3.0 when it holds non-ASCII bytes (UTF-8 field names). `descr` is a dtype.str ("<f4"),
/// or, starting with '[', the Python literal of a structured dtype's descr list, written
/// unquoted. Thread-safe, no I/O.
OPHOOK_API std::string encode_npy_header(std::string_view descr, std::span<const std::int64_t> shape,
                              bool fortran_order = false);

/// Parses the header at the start of `bytes` (versions 1.0, 2.0, 3.0). Throws ophook::Error with a
/// message saying what is wrong (bad magic, truncated, malformed dict, unsupported descr) when the
/// header is not one numpy.load would accept without pickle (this includes numpy's 10000-byte
/// limit on the header dict). `descr` comes back spelled as dtype.str ("f4" → "<f4",
/// "<i1" → "|i1"). Reads only inside `bytes`; safe on hostile input.
OPHOOK_API NpyHeader parse_npy_header(std::span<const std::byte> bytes);

}  // namespace ophook::core
