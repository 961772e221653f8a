#pragma once
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace ophook::cli {

enum class ElementKind : std::uint8_t { Bool, Int, UInt, Float, Complex, Other };

/// A numpy dtype descr ("<f4", ">i8", "|b1", "<c16") reduced to what the comparison kernels
/// need. Kinds the kernels cannot read as numbers (strings, datetimes, structured, long double)
/// are Other and compared bytewise.
struct ElementType {
  ElementKind kind = ElementKind::Other;
  unsigned size = 0;  // bytes per element (for Other: 0, the caller uses the header's item size)
  bool swap = false;  // stored in the non-native byte order

  bool numeric() const { return kind != ElementKind::Other; }
};

/// Decodes a descr. Pure, never throws.
ElementType decode_descr(std::string_view descr);

/// Reads `count` elements starting at element `first` of a C-contiguous buffer as doubles
/// (bool → 0/1; complex → real part, see load_complex). Pure, thread-safe.
void load_real(const ElementType& type, const std::byte* data, std::size_t first, std::size_t count,
               double* out);

/// Reads `count` elements as complex numbers, real and imaginary parts into `re` and `im`
/// (real kinds get im = 0). Pure, thread-safe.
void load_complex(const ElementType& type, const std::byte* data, std::size_t first,
                  std::size_t count, double* re, double* im);

}  // namespace ophook::cli
