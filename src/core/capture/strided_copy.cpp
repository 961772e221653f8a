#include "ophook/capture/strided_copy.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <type_traits>
#include <vector>

namespace ophook::core {
namespace {

// Copies this large or larger go to transparent huge pages, as NumPy does for its own arrays.
constexpr std::size_t kHugePageCopyBytes = std::size_t{4} << 20;
constexpr std::uintptr_t kHugePage = std::uintptr_t{2} << 20;

/// A fresh destination faults in one 4 KiB page at a time as the copy first touches it; advised
/// onto 2 MiB pages it takes 512 times fewer faults, which halves the cost of a large copy into a
/// fresh buffer (docs/performance.md, "Figures behind the code"). Only the aligned interior of the
/// buffer is advised, so no memory beyond it is claimed.
void advise_huge_pages(std::byte* dst, std::size_t bytes) noexcept {
  const auto lead = (kHugePage - reinterpret_cast<std::uintptr_t>(dst) % kHugePage) % kHugePage;
  if (bytes <= lead) return;
  const auto interior = (bytes - lead) & ~(kHugePage - 1);
  if (interior > 0) (void)::madvise(dst + lead, interior, MADV_HUGEPAGE);
}

/// Collapses C-contiguous trailing dimensions into one run: the inner loop then copies one memcpy
/// per outer index instead of one per element.
std::size_t contiguous_tail_bytes(std::span<const std::int64_t> shape, std::span<const std::int64_t> strides,
                                  std::size_t item_size, std::size_t& outer_dims) {
  std::size_t run = item_size;
  std::size_t d = shape.size();
  while (d > 0 && (shape[d - 1] == 1 || strides[d - 1] == static_cast<std::int64_t>(run))) {
    run *= static_cast<std::size_t>(shape[d - 1]);
    --d;
  }
  outer_dims = d;
  return run;
}

/// Copies `n` runs of `run` bytes, `stride` bytes apart, to `dst`. A run of one element (a
/// transposed view) is copied with a fixed-size memcpy the compiler inlines: a library call per
/// element cost four times the copy.
template <std::size_t Size>
void copy_elements(std::byte*& dst, const std::byte* p, std::int64_t n, std::int64_t stride) noexcept {
  for (std::int64_t i = 0; i < n; ++i, p += stride, dst += Size) std::memcpy(dst, p, Size);
}

void copy_runs(std::byte*& dst, const std::byte* p, std::int64_t n, std::int64_t stride, std::size_t run) noexcept {
  switch (run) {
    case 1: return copy_elements<1>(dst, p, n, stride);
    case 2: return copy_elements<2>(dst, p, n, stride);
    case 4: return copy_elements<4>(dst, p, n, stride);
    case 8: return copy_elements<8>(dst, p, n, stride);
    case 16: return copy_elements<16>(dst, p, n, stride);
    default:
      for (std::int64_t i = 0; i < n; ++i, p += stride, dst += run) std::memcpy(dst, p, run);
  }
}

/// Four elements of 4 or 8 bytes as one vector: a row of a 4×4 square transposed in registers.
using FourWords = std::uint32_t __attribute__((vector_size(16)));
using FourDoubleWords = std::uint64_t __attribute__((vector_size(32)));
template <std::size_t Size> struct SquareRow { using type = void; };  // no such square for the size
template <> struct SquareRow<4> { using type = FourWords; };
template <> struct SquareRow<8> { using type = FourDoubleWords; };

/// Reads four source rows of four elements (`src`, `src_stride` bytes apart) and writes them as
/// four destination columns (rows `dst_stride` bytes apart).
template <typename Row>
void transpose_square(std::byte* dst, std::int64_t dst_stride, const std::byte* src, std::int64_t src_stride) noexcept {
  Row a, b, c, d;
  std::memcpy(&a, src, sizeof a);
  std::memcpy(&b, src + src_stride, sizeof b);
  std::memcpy(&c, src + 2 * src_stride, sizeof c);
  std::memcpy(&d, src + 3 * src_stride, sizeof d);
  const Row ab_low = __builtin_shufflevector(a, b, 0, 4, 1, 5), ab_high = __builtin_shufflevector(a, b, 2, 6, 3, 7);
  const Row cd_low = __builtin_shufflevector(c, d, 0, 4, 1, 5), cd_high = __builtin_shufflevector(c, d, 2, 6, 3, 7);
  const Row rows[4] = {__builtin_shufflevector(ab_low, cd_low, 0, 1, 4, 5), __builtin_shufflevector(ab_low, cd_low, 2, 3, 6, 7),
                       __builtin_shufflevector(ab_high, cd_high, 0, 1, 4, 5),
                       __builtin_shufflevector(ab_high, cd_high, 2, 3, 6, 7)};
  for (const Row& row : rows) {
    std::memcpy(dst, &row, sizeof row);
    dst += dst_stride;
  }
}

/// The last two dimensions of an element-wise copy (a transposed view) in tiles of 32 rows by 16
/// columns: read down a column, every element lies on a cache line of its own, which the next
/// rows read again only while the tile's lines stay in L1. A source stride of a power of two maps
/// a tile's lines onto few cache sets, so the tile is narrow (16 lines). docs/performance.md
/// ("Figures behind the code") has what a transposed copy costs with and without the tiles.
template <std::size_t Size>
void copy_tiles(std::byte* dst, const std::byte* src, std::int64_t rows, std::int64_t cols, std::int64_t row_stride,
                std::int64_t col_stride) noexcept {
  constexpr std::int64_t kRows = 32, kCols = 16;
  using Row = typename SquareRow<Size>::type;
  // A transposed matrix's source rows lie side by side: four of them are read at once and turned
  // into four destination rows in registers.
  const bool squares = !std::is_void_v<Row> && row_stride == static_cast<std::int64_t>(Size);
  for (std::int64_t r0 = 0; r0 < rows; r0 += kRows) {
    const std::int64_t r1 = std::min(rows, r0 + kRows);
    for (std::int64_t c0 = 0; c0 < cols; c0 += kCols) {
      const std::int64_t c1 = std::min(cols, c0 + kCols);
      std::int64_t r = r0;
      if constexpr (!std::is_void_v<Row>) {
        for (; squares && c1 - c0 == kCols && r + 4 <= r1; r += 4) {
          for (std::int64_t c = c0; c < c1; c += 4) {
            transpose_square<Row>(dst + static_cast<std::size_t>(r * cols + c) * Size, cols * static_cast<std::int64_t>(Size),
                                  src + r * row_stride + c * col_stride, col_stride);
          }
        }
      }
      for (; r < r1; ++r) {
        std::byte* q = dst + static_cast<std::size_t>(r * cols + c0) * Size;
        copy_elements<Size>(q, src + r * row_stride + c0 * col_stride, c1 - c0, col_stride);
      }
    }
  }
}

/// Calls visit(p) with the address of each index of the first `lead` dimensions, in C order (an
/// odometer; once, with `src`, when `lead` is 0).
template <typename Visit>
void for_each_leading(const std::byte* src, std::span<const std::int64_t> shape, std::span<const std::int64_t> strides,
                      std::size_t lead, Visit&& visit) noexcept {
  std::vector<std::int64_t> index(lead, 0);
  const std::byte* base = src;
  while (true) {
    visit(base);
    std::size_t d = lead;
    while (d > 0) {
      --d;
      base += strides[d];
      if (++index[d] < shape[d]) break;
      base -= strides[d] * shape[d];
      index[d] = 0;
      if (d == 0) return;
    }
    if (lead == 0) return;
  }
}

/// strided_copy's element-wise case with two or more dimensions: the leading dimensions by
/// odometer, the last two by tiles. False when the element size has no tiled copy.
bool copy_tiled(std::byte* dst, const std::byte* src, std::span<const std::int64_t> shape,
                std::span<const std::int64_t> strides, std::size_t item_size) noexcept {
  using Tiles = void (*)(std::byte*, const std::byte*, std::int64_t, std::int64_t, std::int64_t, std::int64_t) noexcept;
  Tiles tiles = item_size == 1 ? &copy_tiles<1> : item_size == 2 ? &copy_tiles<2> : item_size == 4 ? &copy_tiles<4>
              : item_size == 8 ? &copy_tiles<8> : nullptr;
  if (tiles == nullptr) return false;
  const std::size_t lead = shape.size() - 2;
  const std::int64_t rows = shape[lead], cols = shape[lead + 1];
  const auto block = static_cast<std::size_t>(rows * cols) * item_size;
  for_each_leading(src, shape, strides, lead, [&](const std::byte* base) {
    tiles(dst, base, rows, cols, strides[lead], strides[lead + 1]);
    dst += block;
  });
  return true;
}

}  // namespace

void strided_copy(std::byte* dst, const std::byte* src, std::span<const std::int64_t> shape,
                  std::span<const std::int64_t> strides, std::size_t item_size) noexcept {
  std::size_t total = item_size;
  for (auto n : shape) {
    if (n == 0) return;
    total *= static_cast<std::size_t>(n);
  }
  if (total >= kHugePageCopyBytes) advise_huge_pages(dst, total);
  std::size_t outer = 0;
  const std::size_t run = contiguous_tail_bytes(shape, strides, item_size, outer);
  if (outer == 0) {
    std::memcpy(dst, src, run);
    return;
  }
  if (outer >= 2 && run == item_size && copy_tiled(dst, src, shape.first(outer), strides.first(outer), item_size)) {
    return;
  }
  // The last outer dimension is the hot loop.
  for_each_leading(src, shape, strides, outer - 1, [&](const std::byte* base) {
    copy_runs(dst, base, shape[outer - 1], strides[outer - 1], run);
  });
}

bool is_c_order(std::span<const std::int64_t> shape, std::span<const std::int64_t> strides) noexcept {
  if (strides.size() != shape.size()) return false;
  std::int64_t expected = 1;  // C order's stride of the dimension at hand
  for (std::size_t i = shape.size(); i-- > 0;) {
    if (shape[i] == 0) return true;
    if (shape[i] != 1 && strides[i] != expected) return false;
    expected *= shape[i];
  }
  return true;
}

std::optional<std::size_t> one_block_elements(std::span<const std::int64_t> shape,
                                              std::span<const std::int64_t> strides) noexcept {
  // The dimensions that are stepped, smallest stride first: each stride must be the span of the
  // dimensions below it. Up to 16 dimensions without allocating; more are left to the copy.
  std::array<std::pair<std::int64_t, std::int64_t>, 16> steps{};  // (stride, size)
  std::size_t n = 0;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 0) return 0;                       // no element at all
    if (shape[i] == 1 || strides[i] == 0) continue;    // never stepped, or the same elements again
    if (n == steps.size() || strides[i] < 0) return std::nullopt;
    steps[n++] = {strides[i], shape[i]};
  }
  std::sort(steps.begin(), steps.begin() + static_cast<std::ptrdiff_t>(n));
  std::int64_t expected = 1;
  for (std::size_t i = 0; i < n; ++i) {
    if (steps[i].first != expected) return std::nullopt;
    expected *= steps[i].second;
  }
  return static_cast<std::size_t>(expected);
}

}  // namespace ophook::core
