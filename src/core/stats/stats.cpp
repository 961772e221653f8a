// Per-array statistics and the xxh64 digest, in one pass over the bytes.
#include "ophook/stats/stats.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <type_traits>

#include "ophook/stats/half.hpp"
#include "stats/float_blocks.hpp"  // xxhash.h, inlined

namespace ophook::core {
namespace {

// What compute_stats needs to know about a descr; parsed without allocating.
struct ElementType {
  char kind = 0;       // numpy kind: b i u f c (others are not numeric)
  unsigned size = 0;   // bytes per element
  bool swap = false;   // stored in the other byte order than this machine's
};

ElementType classify(std::string_view descr) noexcept {
  ElementType t;
  char order = '=';
  if (!descr.empty() && std::string_view("<>|=").find(descr.front()) != std::string_view::npos) {
    order = descr.front();
    descr.remove_prefix(1);
  }
  if (descr.size() < 2 || descr.size() > 3) return {};
  unsigned size = 0;
  for (const char c : descr.substr(1)) {
    if (c < '0' || c > '9') return {};
    size = size * 10 + static_cast<unsigned>(c - '0');
  }
  t.kind = descr.front();
  t.size = size;
  constexpr char kForeign = std::endian::native == std::endian::little ? '>' : '<';
  t.swap = order == kForeign && size > 1;
  return t;
}

template <typename U>
U byteswap(U v) noexcept {
  if constexpr (sizeof(U) == 2) return __builtin_bswap16(v);
  if constexpr (sizeof(U) == 4) return __builtin_bswap32(v);
  if constexpr (sizeof(U) == 8) return __builtin_bswap64(v);
  return v;
}

template <std::size_t N> struct UintOf;
template <> struct UintOf<1> { using type = std::uint8_t; };
template <> struct UintOf<2> { using type = std::uint16_t; };
template <> struct UintOf<4> { using type = std::uint32_t; };
template <> struct UintOf<8> { using type = std::uint64_t; };

// Reads one T at p (any alignment), byte-swapping when Swap.
template <typename T, bool Swap>
T load(const std::byte* p) noexcept {
  using U = typename UintOf<sizeof(T)>::type;
  U bits;
  std::memcpy(&bits, p, sizeof bits);
  if constexpr (Swap) bits = byteswap(bits);
  T value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

// A float16 element; decoded by half_to_double.
struct Half {
  std::uint16_t bits;
};

template <typename T>
double to_double(T v) noexcept {
  if constexpr (std::is_same_v<T, Half>) {
    return half_to_double(v.bits);
  } else {
    return static_cast<double>(v);
  }
}

// Element readers turn the bytes of one element into a double; for floating kinds a NaN or Inf
// result is counted as such and left out of min..std.
template <typename T, bool Swap>
struct RealReader {
  static constexpr std::size_t size = sizeof(T);
  static constexpr bool floating = !std::is_integral_v<T>;
  static double read(const std::byte* p) noexcept { return to_double(load<T, Swap>(p)); }
};

struct BoolReader {
  static constexpr std::size_t size = 1;
  static constexpr bool floating = false;
  static double read(const std::byte* p) noexcept { return *p != std::byte{0} ? 1.0 : 0.0; }
};

// Complex values are summarised by their magnitudes. An element is NaN when either part is (as
// numpy.isnan), else Inf when either part is infinite; a finite element whose magnitude exceeds
// the double range (parts near 1.8e308) also counts as Inf.
template <typename T, bool Swap>
struct ComplexReader {
  static constexpr std::size_t size = 2 * sizeof(T);
  static constexpr bool floating = true;
  static double read(const std::byte* p) noexcept {
    const double re = static_cast<double>(load<T, Swap>(p));
    const double im = static_cast<double>(load<T, Swap>(p + sizeof(T)));
    if (std::isnan(re) || std::isnan(im)) return std::numeric_limits<double>::quiet_NaN();
    // float parts cannot overflow when squared in double; double parts can, so use hypot.
    return sizeof(T) == 4 ? std::sqrt(re * re + im * im) : std::hypot(re, im);
  }
};

// Neumaier-compensated running total, fed with per-chunk sums so that the compensation costs
// little per element while long arrays keep their precision.
struct CompensatedSum {
  double sum = 0, carry = 0;
  void add(double x) noexcept {
    const double t = sum + x;
    carry += std::fabs(sum) >= std::fabs(x) ? (sum - t) + x : (x - t) + sum;
    sum = t;
  }
  double value() const noexcept { return sum + carry; }
};

constexpr std::size_t kLanes = 4;  // independent accumulators: the adds overlap instead of chaining

// Calls f(lane, value) for the elements [start, end), spread over kLanes lanes.
template <typename Reader, typename F>
inline void for_each_in_lanes(const std::byte* data, std::size_t start, std::size_t end,
                              F&& f) noexcept {
  // Written out so that every lane index is a constant and the accumulators live in registers.
  static_assert(kLanes == 4);
  std::size_t i = start;
  for (; i + kLanes <= end; i += kLanes) {
    const std::byte* p = data + i * Reader::size;
    f(0, Reader::read(p));
    f(1, Reader::read(p + Reader::size));
    f(2, Reader::read(p + 2 * Reader::size));
    f(3, Reader::read(p + 3 * Reader::size));
  }
  for (; i < end; ++i) f(0, Reader::read(data + i * Reader::size));
}

// The element type when `Reader` reads native-order float32/float64, which the block kernels
// (float_blocks.hpp) take; void otherwise (and for arrays too short to gain from them: see
// summarise_ordered).
template <typename Reader> struct NativeFloatOf { using type = void; };
template <> struct NativeFloatOf<RealReader<float, false>> { using type = float; };
template <> struct NativeFloatOf<RealReader<double, false>> { using type = double; };

// Elements in [start, end) the block kernels cover: a whole number of their steps.
inline std::size_t block_kernel_span(std::size_t start, std::size_t end) noexcept {
  return (end - start) / float_blocks::kStep * float_blocks::kStep;
}

// Arrays shorter than this are summarised without the block kernels, whose set-up costs more than
// they save on a few elements.
constexpr std::size_t kShortestForBlocks = 64;

// Sums of the finite elements' deviations from a chunk's centre, per lane.
struct LaneSums {
  double sum[kLanes] = {}, squares[kLanes] = {};
  float_blocks::ShiftedSums total() const noexcept {
    return {(sum[0] + sum[1]) + (sum[2] + sum[3]), (squares[0] + squares[1]) + (squares[2] + squares[3])};
  }
};

// The content hashes of an array's blocks (kContentBlockBytes each), each taken right after the
// statistics have read the block's last chunk, while it is in the L1 cache. Hashing costs the pass
// the prefetcher's run-ahead all the same (docs/performance.md, "Figures behind the code"), hence
// stats_memo.cpp's rule for when to hash. Does nothing without somewhere to put them.
class BlockHasher {
 public:
  BlockHasher(const std::byte* data, std::size_t nbytes, std::uint64_t* hashes) noexcept
      : data_(data), nbytes_(nbytes), hashes_(hashes) {}
  /// Hashes every block that ends by `byte_end`, and the short last one when `byte_end` is the end.
  void through(std::size_t byte_end) noexcept {
    if (hashes_ == nullptr) return;
    byte_end = std::min(byte_end, nbytes_);
    for (; hashed_ < byte_end && (hashed_ + kContentBlockBytes <= byte_end || byte_end == nbytes_);
         hashed_ += kContentBlockBytes) {
      *hashes_++ = float_blocks::content_hash(data_ + hashed_, std::min(kContentBlockBytes, nbytes_ - hashed_));
    }
  }

 private:
  const std::byte* data_;
  std::size_t nbytes_;
  std::uint64_t* hashes_;
  std::size_t hashed_ = 0;
};

// One pass over a chunk's elements [first, last), feeding `digest` every byte once and in order:
// the chunk's whole kernel steps go through `kernel(bytes, n, kernel_sums)` when the type has block
// kernels (Native not void), which digests them and reports whether every element was finite, in
// which case their sums are committed; the rest element by element, `element(lane_sums, lane,
// value)` over kLanes running sums. `commit(sums)` takes each part's sums. One kernel call per
// chunk: called per 256 elements, its reductions and dispatch were a tenth of its work.
template <typename Reader, typename Native, typename Kernel, typename Element, typename Commit>
void pass_over_chunk(const std::byte* data, std::size_t first, std::size_t last, XXH64_state_t& digest,
                     Kernel&& kernel, Element&& element, Commit&& commit) noexcept {
  std::size_t from = first;
  std::size_t digested = first;
  if constexpr (!std::is_void_v<Native>) {
    const std::size_t n = block_kernel_span(first, last);
    float_blocks::ShiftedSums kernel_sums;
    if (n > 0) {
      const bool accepted = kernel(data + first * sizeof(Native), n, kernel_sums);
      digested = first + n;
      if (accepted) {
        commit(kernel_sums);
        from = first + n;
      }
    }
  }
  XXH64_update(&digest, data + digested * Reader::size, (last - digested) * Reader::size);
  LaneSums sums;
  for_each_in_lanes<Reader>(data, from, last, [&](std::size_t lane, double v) { element(sums, lane, v); });
  commit(sums.total());
}

// Running moments of the finite values seen so far, merged chunk by chunk (Chan, Golub and
// LeVeque's pairwise update), so that the spread stays accurate when the mean is large against it
// without a second pass over the whole array.
struct Moments {
  std::uint64_t count = 0;
  double mean = 0, m2 = 0;  // m2: sum of squared deviations from `mean`
  void merge(std::uint64_t n, double chunk_mean, double chunk_m2) noexcept {
    if (n == 0) return;
    const std::uint64_t total = count + n;
    const double delta = chunk_mean - mean;
    mean += delta * (static_cast<double>(n) / static_cast<double>(total));
    m2 += chunk_m2 + delta * delta * (static_cast<double>(count) * static_cast<double>(n) / static_cast<double>(total));
    count = total;
  }
};

// Elements per chunk. A chunk's deviations are taken from a centre that is one of its own finite
// elements, in one pass with the digest, extremes and sums; its squared deviations from its mean
// are then Σ(x − c)² − (Σ(x − c))²/n. The cancellation in that difference is bounded by the chunk's
// length: with c an element, (mean − c)² ≤ n·variance, so at most log2(2048) = 11 of the 53 bits
// are lost, where a centre from outside the data (zero, or the mean so far on a trend) can lose all.
constexpr std::size_t kChunk = 2048;

// The first finite element of [first, last) as a centre for deviations; 0 when none is.
template <typename Reader>
double chunk_centre(const std::byte* data, std::size_t first, std::size_t last) noexcept {
  for (std::size_t i = first; i < last; ++i) {
    const double v = Reader::read(data + i * Reader::size);
    if (!Reader::floating || std::isfinite(v)) return v;
  }
  return 0;
}

// A chunk whose elements are all finite takes the block kernels when the type has them; the rest
// goes element by element.
template <typename Reader, bool kBlocks>
void summarise(const std::byte* data, std::size_t count, ArrayStats& s, XXH64_state_t& digest,
               BlockHasher& blocks) noexcept {
  using Native = std::conditional_t<kBlocks, typename NativeFloatOf<Reader>::type, void>;
  constexpr double kInf = std::numeric_limits<double>::infinity();
  double lo[kLanes] = {kInf, kInf, kInf, kInf};
  double hi[kLanes] = {-kInf, -kInf, -kInf, -kInf};
  float_blocks::Extremes block_extremes;
  std::uint64_t nonfinite = 0, nan = 0;
  CompensatedSum total;
  Moments moments;
  for (std::size_t chunk = 0; chunk < count; chunk += kChunk) {
    const std::size_t chunk_end = std::min(count, chunk + kChunk);
    const std::uint64_t nonfinite_before = nonfinite;
    const double centre = chunk_centre<Reader>(data, chunk, chunk_end);
    float_blocks::ShiftedSums chunk_sums;
    pass_over_chunk<Reader, Native>(
        data, chunk, chunk_end, digest,
        [&](const std::byte* block, auto n, float_blocks::ShiftedSums& block_sums) {  // generic: not compiled without kernels
          return float_blocks::moments_and_digest<Native>(block, n, centre, block_extremes, block_sums, digest);
        },
        [&](LaneSums& sums, std::size_t lane, double v) {
          if constexpr (Reader::floating) {
            if (!std::isfinite(v)) [[unlikely]] {
              ++nonfinite;
              nan += std::isnan(v);
              return;
            }
          }
          lo[lane] = std::min(lo[lane], v);
          hi[lane] = std::max(hi[lane], v);
          const double d = v - centre;
          sums.sum[lane] += d;
          sums.squares[lane] += d * d;
        },
        [&](const float_blocks::ShiftedSums& block_sums) {
          chunk_sums.sum += block_sums.sum;
          chunk_sums.squares += block_sums.squares;
        });
    blocks.through(chunk_end * Reader::size);
    const std::uint64_t chunk_finite = (chunk_end - chunk) - (nonfinite - nonfinite_before);
    if (chunk_finite == 0) continue;
    const auto n = static_cast<double>(chunk_finite);
    total.add(centre * n);
    total.add(chunk_sums.sum);
    const double chunk_mean = centre + chunk_sums.sum / n;
    // Sums that overflowed make chunk_mean infinite, and the merge then leaves no finite spread.
    const double chunk_m2 = std::max(0.0, chunk_sums.squares - chunk_sums.sum * (chunk_sums.sum / n));
    moments.merge(chunk_finite, chunk_mean, chunk_m2);
  }
  s.numeric = true;
  s.nan = nan;
  s.inf = nonfinite - nan;
  const std::uint64_t finite = count - nonfinite;
  if (finite == 0) return;
  s.has_finite = true;
  s.min = std::min(std::min(lo[0], lo[1]), std::min(lo[2], lo[3]));
  s.max = std::max(std::max(hi[0], hi[1]), std::max(hi[2], hi[3]));
  s.min = std::min(s.min, block_extremes.min), s.max = std::max(s.max, block_extremes.max);
  s.mean = std::clamp(total.value() / static_cast<double>(finite), s.min, s.max);
  s.std = std::sqrt(moments.m2 / static_cast<double>(finite));
}

/// Summarises the whole elements of `data` and feeds their bytes to `digest`; returns how many
/// bytes it hashed (the caller hashes the rest: a trailing partial element, or everything of
/// a type without statistics).
template <template <typename, bool> class Reader, typename T>
std::size_t summarise_ordered(const ElementType& t, const std::byte* data, std::size_t nbytes, ArrayStats& s,
                              XXH64_state_t& digest, BlockHasher& blocks) noexcept {
  const std::size_t count = nbytes / Reader<T, false>::size;
  if (t.swap) {
    summarise<Reader<T, true>, false>(data, count, s, digest, blocks);
  } else if (count < kShortestForBlocks || std::is_void_v<typename NativeFloatOf<Reader<T, false>>::type>) {
    summarise<Reader<T, false>, false>(data, count, s, digest, blocks);
  } else {
    summarise<Reader<T, false>, true>(data, count, s, digest, blocks);
  }
  return count * Reader<T, false>::size;
}

std::size_t dispatch(const ElementType& t, const std::byte* data, std::size_t nbytes, ArrayStats& s,
                     XXH64_state_t& digest, BlockHasher& blocks) noexcept {
  switch (t.kind) {
    case 'b':
      if (t.size != 1) return 0;
      summarise<BoolReader, false>(data, nbytes, s, digest, blocks);
      return nbytes;
    case 'i':
      if (t.size == 1) return summarise_ordered<RealReader, std::int8_t>(t, data, nbytes, s, digest, blocks);
      if (t.size == 2) return summarise_ordered<RealReader, std::int16_t>(t, data, nbytes, s, digest, blocks);
      if (t.size == 4) return summarise_ordered<RealReader, std::int32_t>(t, data, nbytes, s, digest, blocks);
      if (t.size == 8) return summarise_ordered<RealReader, std::int64_t>(t, data, nbytes, s, digest, blocks);
      return 0;
    case 'u':
      if (t.size == 1) return summarise_ordered<RealReader, std::uint8_t>(t, data, nbytes, s, digest, blocks);
      if (t.size == 2) return summarise_ordered<RealReader, std::uint16_t>(t, data, nbytes, s, digest, blocks);
      if (t.size == 4) return summarise_ordered<RealReader, std::uint32_t>(t, data, nbytes, s, digest, blocks);
      if (t.size == 8) return summarise_ordered<RealReader, std::uint64_t>(t, data, nbytes, s, digest, blocks);
      return 0;
    case 'f':
      if (t.size == 2) return summarise_ordered<RealReader, Half>(t, data, nbytes, s, digest, blocks);
      if (t.size == 4) return summarise_ordered<RealReader, float>(t, data, nbytes, s, digest, blocks);
      if (t.size == 8) return summarise_ordered<RealReader, double>(t, data, nbytes, s, digest, blocks);
      return 0;
    case 'c':
      if (t.size == 8) return summarise_ordered<ComplexReader, float>(t, data, nbytes, s, digest, blocks);
      if (t.size == 16) return summarise_ordered<ComplexReader, double>(t, data, nbytes, s, digest, blocks);
      return 0;
    default:
      return 0;
  }
}

template <typename U>
bool nonfinite_components(const ElementType& t, const std::byte* data, std::size_t nbytes,
                          U mask) noexcept {
  if (t.swap) mask = byteswap(mask);
  return float_blocks::any_all_ones_exponent<U>(data, nbytes / sizeof(U), mask);
}

}  // namespace

ArrayStats compute_stats(std::string_view descr, const std::byte* data, std::size_t nbytes,
                         std::uint64_t* block_hashes) {
  static constexpr std::byte kEmpty[1] = {};
  if (data == nullptr) {
    data = kEmpty;
    nbytes = 0;
  }
  ArrayStats s;
  XXH64_state_t digest;
  XXH64_reset(&digest, 0);
  BlockHasher blocks(data, nbytes, block_hashes);
  const std::size_t hashed = dispatch(classify(descr), data, nbytes, s, digest, blocks);
  blocks.through(nbytes);
  XXH64_update(&digest, data + hashed, nbytes - hashed);
  s.xxh64 = XXH64_digest(&digest);
  return s;
}

std::uint64_t device_fingerprint_digest(std::uint64_t position_sum, std::uint64_t value_sum,
                                        std::uint64_t nbytes) noexcept {
  std::byte words[24];
  std::size_t at = 0;
  for (const std::uint64_t word : {position_sum, value_sum, nbytes}) {
    for (int b = 0; b < 8; ++b) words[at++] = static_cast<std::byte>(word >> (8 * b));  // little-endian
  }
  return XXH64(words, sizeof words, 0);
}

bool has_nonfinite(std::string_view descr, const std::byte* data, std::size_t nbytes) {
  if (data == nullptr) return false;
  const ElementType t = classify(descr);
  // A complex number is two floats of half its size: the same exponent test applies to each.
  const unsigned component = t.kind == 'c' ? t.size / 2 : t.kind == 'f' ? t.size : 0;
  if (component != 0) nbytes -= nbytes % t.size;  // ignore a trailing partial element
  switch (component) {
    case 2: return nonfinite_components<std::uint16_t>(t, data, nbytes, 0x7C00);
    case 4: return nonfinite_components<std::uint32_t>(t, data, nbytes, 0x7F800000u);
    case 8: return nonfinite_components<std::uint64_t>(t, data, nbytes, 0x7FF0000000000000ull);
    default: return false;
  }
}

nlohmann::json stats_to_json(const ArrayStats& stats) {
  nlohmann::json j;
  if (stats.numeric && stats.has_finite) {
    j["min"] = stats.min;
    j["max"] = stats.max;
    j["mean"] = stats.mean;
    j["std"] = stats.std;
  } else {
    j["min"] = j["max"] = j["mean"] = j["std"] = nullptr;
  }
  j["nan"] = stats.nan;
  j["inf"] = stats.inf;
  j["xxh64"] = fmt::format("{:016x}", stats.xxh64);
  return j;
}

}  // namespace ophook::core
