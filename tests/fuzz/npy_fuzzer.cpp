// libFuzzer harness: hostile bytes as a .npy file given to `ophook compare`. Covers the header
// parser (core::parse_npy_header), the size checks of MappedNpy, the Fortran-order copy and the
// element decoding of compare_buffers. Rejection by ophook::Error is the expected outcome.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "compare/values/array_diff.hpp"
#include "memory_file.hpp"
#include "ophook/error.hpp"
#include "read/arrays/mapped_npy.hpp"

namespace {
// Keep each input's work bounded: a small file may still announce a large zero-size-item array.
constexpr std::uint64_t kMaxElements = std::uint64_t{1} << 20;
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static ophook::fuzz::MemoryFile file;
  const std::string path = file.hold(data, size);
  try {
    const ophook::cli::MappedNpy npy(path);
    const auto& h = npy.header();
    if (npy.elements() > kMaxElements) return 0;
    std::vector<std::byte> c_order;
    std::span<const std::byte> bytes = npy.data();
    if (h.fortran_order && h.shape.size() > 1 && h.item_size > 0) {
      c_order = ophook::cli::fortran_to_c_order(bytes, h.shape, h.item_size);
      bytes = c_order;
    }
    // A different second buffer defeats the identical-bytes fast path: every element is decoded.
    std::vector<std::byte> other(bytes.begin(), bytes.end());
    for (std::byte& b : other) b = ~b;
    const ophook::cli::BufferView a{h.descr, h.item_size, npy.elements(), bytes};
    const ophook::cli::BufferView b{h.descr, h.item_size, npy.elements(), other};
    ophook::cli::compare_buffers(a, b, {});
  } catch (const ophook::Error&) {
  }
  return 0;
}
