#pragma once
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <vector>

#include "ophook/files/npy.hpp"
#include "read/arrays/mapped_file.hpp"

namespace ophook::cli {

/// A .npy file mapped read-only, its header parsed (ophook::core::parse_npy_header) and checked
/// against the file size. Move-only. Reading is thread-safe.
class MappedNpy {
 public:
  /// Throws ophook::Error "<path>: <what is wrong>" for a missing, empty, truncated or
  /// malformed file.
  explicit MappedNpy(const std::filesystem::path& path);

  const core::NpyHeader& header() const { return header_; }
  std::uint64_t elements() const { return elements_; }
  /// The array's bytes, in the file's order (C, or Fortran when header().fortran_order).
  std::span<const std::byte> data() const { return data_; }

 private:
  MappedFile file_;
  core::NpyHeader header_;
  std::uint64_t elements_ = 0;
  std::span<const std::byte> data_;
};

/// The elements of a Fortran-ordered array rearranged into C order. Pure.
std::vector<std::byte> fortran_to_c_order(std::span<const std::byte> data,
                                          std::span<const std::int64_t> shape,
                                          std::size_t item_size);

}  // namespace ophook::cli
