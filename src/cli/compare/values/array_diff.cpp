#include "compare/values/array_diff.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <thread>
#include <vector>

#include "ophook/error.hpp"
#include "read/arrays/element_type.hpp"

namespace ophook::cli {

namespace {

constexpr std::size_t kBlock = 2048;
constexpr std::uint64_t kParallelMinElements = std::uint64_t{1} << 20;
constexpr double kInf = std::numeric_limits<double>::infinity();

/// Partial result over a range of elements; ranges merge in any order. long double sums keep
/// the cosine meaningful for values whose squares overflow a double.
struct Accumulator {
  std::uint64_t not_close = 0, nonfinite = 0, finite = 0;
  double max_abs = 0, max_rel = 0;
  std::int64_t worst = -1;
  long double dot = 0, norm_a = 0, norm_b = 0;

  void merge(const Accumulator& o) {
    not_close += o.not_close;
    nonfinite += o.nonfinite;
    finite += o.finite;
    if (o.worst >= 0 && (worst < 0 || o.max_abs > max_abs)) {
      max_abs = o.max_abs;
      worst = o.worst;
    }
    max_rel = std::max(max_rel, o.max_rel);
    dot += o.dot;
    norm_a += o.norm_a;
    norm_b += o.norm_b;
  }

  void finite_pair(double d, double magnitude_base, std::size_t index, Tolerance tol) {
    ++finite;
    if (worst < 0 || d > max_abs) {
      max_abs = d;
      worst = static_cast<std::int64_t>(index);
    }
    if (d > 0) max_rel = std::max(max_rel, magnitude_base > 0 ? d / magnitude_base : kInf);
    if (!(d <= tol.atol + tol.rtol * magnitude_base)) ++not_close;
  }

  void nonfinite_pair(bool same) {
    if (!same) {
      ++nonfinite;
      ++not_close;
    }
  }
};

void accumulate_real(const double* a, const double* b, std::size_t n, std::size_t base,
                     Tolerance tol, Accumulator& acc) {
  for (std::size_t i = 0; i < n; ++i) {
    const double x = a[i], y = b[i];
    if (std::isfinite(x) && std::isfinite(y)) {
      acc.finite_pair(std::fabs(x - y), std::fabs(x), base + i, tol);
      acc.dot += static_cast<long double>(x) * y;
      acc.norm_a += static_cast<long double>(x) * x;
      acc.norm_b += static_cast<long double>(y) * y;
    } else {
      acc.nonfinite_pair((std::isnan(x) && std::isnan(y)) || x == y);
    }
  }
}

void accumulate_complex(const double* ar, const double* ai, const double* br, const double* bi,
                        std::size_t n, std::size_t base, Tolerance tol, Accumulator& acc) {
  for (std::size_t i = 0; i < n; ++i) {
    const bool finite_a = std::isfinite(ar[i]) && std::isfinite(ai[i]);
    const bool finite_b = std::isfinite(br[i]) && std::isfinite(bi[i]);
    if (finite_a && finite_b) {
      acc.finite_pair(std::hypot(ar[i] - br[i], ai[i] - bi[i]), std::hypot(ar[i], ai[i]), base + i,
                      tol);
      acc.dot += static_cast<long double>(ar[i]) * br[i] + static_cast<long double>(ai[i]) * bi[i];
      acc.norm_a +=
          static_cast<long double>(ar[i]) * ar[i] + static_cast<long double>(ai[i]) * ai[i];
      acc.norm_b +=
          static_cast<long double>(br[i]) * br[i] + static_cast<long double>(bi[i]) * bi[i];
    } else {
      const bool nan_a = std::isnan(ar[i]) || std::isnan(ai[i]);
      const bool nan_b = std::isnan(br[i]) || std::isnan(bi[i]);
      acc.nonfinite_pair((nan_a && nan_b) || (ar[i] == br[i] && ai[i] == bi[i]));
    }
  }
}

Accumulator compare_range(const ElementType& ta, const ElementType& tb, const BufferView& a,
                          const BufferView& b, std::size_t first, std::size_t last, Tolerance tol) {
  const bool complex = ta.kind == ElementKind::Complex || tb.kind == ElementKind::Complex;
  std::vector<double> buffer(4 * kBlock);
  double* x = buffer.data();
  double* y = x + kBlock;
  double* xi = y + kBlock;
  double* yi = xi + kBlock;
  Accumulator acc;
  for (std::size_t start = first; start < last; start += kBlock) {
    const std::size_t n = std::min(kBlock, last - start);
    if (complex) {
      load_complex(ta, a.data.data(), start, n, x, xi);
      load_complex(tb, b.data.data(), start, n, y, yi);
      accumulate_complex(x, xi, y, yi, n, start, tol, acc);
    } else {
      load_real(ta, a.data.data(), start, n, x);
      load_real(tb, b.data.data(), start, n, y);
      accumulate_real(x, y, n, start, tol, acc);
    }
  }
  return acc;
}

Accumulator compare_numeric(const ElementType& ta, const ElementType& tb, const BufferView& a,
                            const BufferView& b, Tolerance tol, unsigned threads) {
  const std::size_t n = a.elements;
  if (threads <= 1 || n < kParallelMinElements) {
    return compare_range(ta, tb, a, b, 0, n, tol);
  }
  std::vector<Accumulator> parts(threads);
  std::vector<std::thread> workers;
  const std::size_t step = (n + threads - 1) / threads;
  for (unsigned t = 0; t < threads; ++t) {
    const std::size_t first = std::min(n, t * step), last = std::min(n, first + step);
    workers.emplace_back(
        [&, t, first, last] { parts[t] = compare_range(ta, tb, a, b, first, last, tol); });
  }
  for (std::thread& worker : workers) worker.join();
  Accumulator total;
  for (const Accumulator& part : parts) total.merge(part);
  return total;
}

double cosine_of(const Accumulator& acc) {
  if (acc.finite == 0) return std::numeric_limits<double>::quiet_NaN();
  if (acc.norm_a == 0 && acc.norm_b == 0) return 1.0;
  if (acc.norm_a == 0 || acc.norm_b == 0) return 0.0;
  const long double c = acc.dot / (std::sqrt(acc.norm_a) * std::sqrt(acc.norm_b));
  return static_cast<double>(std::clamp<long double>(c, -1.0L, 1.0L));
}

void fill_from(ArrayDiff& diff, const Accumulator& acc) {
  diff.compared = true;
  diff.not_close = acc.not_close;
  diff.nonfinite_mismatch = acc.nonfinite;
  diff.max_abs = acc.max_abs;
  diff.max_rel = acc.max_rel;
  diff.worst_index = acc.worst;
  diff.cosine = cosine_of(acc);
}

}  // namespace

ArrayDiff compare_buffers(const BufferView& a, const BufferView& b, Tolerance tol,
                          unsigned threads) {
  ArrayDiff diff;
  diff.elements = a.elements;
  if (a.elements != b.elements) {
    diff.shape_mismatch = true;
    return diff;
  }
  const std::size_t bytes_a = a.elements * a.item_size, bytes_b = b.elements * b.item_size;
  if (a.data.size() < bytes_a || b.data.size() < bytes_b) {
    throw Error("array data is shorter than its shape says");
  }
  const ElementType ta = decode_descr(a.descr), tb = decode_descr(b.descr);
  const bool same_layout = a.descr == b.descr && a.item_size == b.item_size;
  // memcmp must not see the null pointer of an empty buffer, even for 0 bytes.
  if (same_layout && (bytes_a == 0 || std::memcmp(a.data.data(), b.data.data(), bytes_a) == 0)) {
    diff.compared = true;
    diff.bitwise_equal = true;
    if (ta.numeric() && a.elements > 0) diff.cosine = 1.0;
    return diff;
  }
  if (ta.numeric() && tb.numeric()) {
    fill_from(diff, compare_numeric(ta, tb, a, b, tol, threads));
    return diff;
  }
  if (same_layout) {
    // Strings, datetimes, records: equal or not, item by item.
    diff.compared = true;
    for (std::uint64_t i = 0; i < a.elements; ++i) {
      const std::size_t offset = i * a.item_size;
      if (std::memcmp(a.data.data() + offset, b.data.data() + offset, a.item_size) != 0) {
        if (diff.not_close++ == 0) diff.worst_index = static_cast<std::int64_t>(i);
      }
    }
  }
  return diff;
}

ArrayDiff compare_scalars(double a, double b, Tolerance tol) {
  ArrayDiff diff;
  diff.elements = 1;
  Accumulator acc;
  accumulate_real(&a, &b, 1, 0, tol, acc);
  fill_from(diff, acc);
  diff.bitwise_equal = std::bit_cast<std::uint64_t>(a) == std::bit_cast<std::uint64_t>(b);
  return diff;
}

}  // namespace ophook::cli
