#include "read/arrays/mapped_npy.hpp"

#include <fmt/format.h>

#include <cstring>

#include "ophook/error.hpp"

namespace ophook::cli {

MappedNpy::MappedNpy(const std::filesystem::path& path) : file_(path) {
  const std::string name = path.string();
  const std::span<const std::byte> bytes = file_.bytes();
  if (bytes.empty()) {
    throw Error(fmt::format("{}: empty file, not a .npy array", name));
  }
  try {
    header_ = core::parse_npy_header(bytes);
  } catch (const std::exception& e) {
    throw Error(fmt::format("{}: not a valid .npy file: {}", name, e.what()));
  }
  elements_ = 1;
  for (std::int64_t dim : header_.shape) elements_ *= static_cast<std::uint64_t>(dim < 0 ? 0 : dim);
  const std::size_t available =
      header_.header_bytes <= bytes.size() ? bytes.size() - header_.header_bytes : 0;
  const std::size_t expected = header_.item_size > 0 ? header_.data_bytes() : available;
  if (header_.header_bytes > bytes.size() || available < expected) {
    throw Error(
        fmt::format("{}: truncated .npy file: the header announces {} data bytes, the file "
                    "holds {}",
                    name, expected, available));
  }
  data_ = bytes.subspan(header_.header_bytes, expected);
}

std::vector<std::byte> fortran_to_c_order(std::span<const std::byte> data,
                                          std::span<const std::int64_t> shape,
                                          std::size_t item_size) {
  const std::size_t ndim = shape.size();
  std::uint64_t count = 1;
  std::vector<std::uint64_t> f_stride(ndim, 1);
  for (std::size_t k = 0; k < ndim; ++k) {
    f_stride[k] = count;
    count *= static_cast<std::uint64_t>(shape[k] < 0 ? 0 : shape[k]);
  }
  std::vector<std::byte> out(count * item_size);
  std::vector<std::int64_t> index(ndim, 0);
  std::uint64_t offset = 0;
  for (std::uint64_t i = 0; i < count; ++i) {
    std::memcpy(out.data() + i * item_size, data.data() + offset * item_size, item_size);
    for (std::size_t k = ndim; k-- > 0;) {
      ++index[k];
      offset += f_stride[k];
      if (index[k] < shape[k]) break;
      offset -= f_stride[k] * static_cast<std::uint64_t>(index[k]);
      index[k] = 0;
    }
  }
  return out;
}

}  // namespace ophook::cli
