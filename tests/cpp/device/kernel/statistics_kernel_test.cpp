// The device statistics kernel's arithmetic (ophook/statistics_kernel.hpp), run on the host,
// against the writer's (src/core/stats/stats.cpp) for every element kind it reads: the same statistics
// for the same bytes, and fingerprint sums equal to a plain loop over the bytes.
#include "device/kernel/statistics_kernel.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "ophook/stats/half.hpp"
#include "ophook/stats/stats.hpp"

namespace ophook::device::statistics_kernel {
namespace {

/// A kind, the descr of the bytes the writer summarises, and how an element becomes them.
struct KindCase {
  ElementKind kind;
  std::string descr;  // of the writer's bytes: the element's own, or float32 for bf16/fp8
  std::string name;
};

const std::vector<KindCase>& cases() {
  static const std::vector<KindCase> all = {
      {kBool, "|b1", "bool"},          {kInt8, "|i1", "int8"},          {kUInt8, "|u1", "uint8"},
      {kInt16, "<i2", "int16"},        {kUInt16, "<u2", "uint16"},      {kInt32, "<i4", "int32"},
      {kUInt32, "<u4", "uint32"},      {kInt64, "<i8", "int64"},        {kUInt64, "<u8", "uint64"},
      {kFloat16, "<f2", "float16"},    {kBFloat16, "<f4", "bfloat16"},  {kFloat32, "<f4", "float32"},
      {kFloat64, "<f8", "float64"},    {kComplex64, "<c8", "complex64"}, {kComplex128, "<c16", "complex128"},
      {kFloat8E4M3FN, "<f4", "float8_e4m3fn"}, {kFloat8E5M2, "<f4", "float8_e5m2"},
  };
  return all;
}

/// float8 e4m3fn → float, written out here from the format's definition (not the kernel's code).
float e4m3fn_reference(std::uint8_t b) {
  const int exponent = (b >> 3) & 0xF, mantissa = b & 7;
  if (exponent == 0xF && mantissa == 7) return std::nanf("");
  const float magnitude = exponent == 0 ? std::ldexp(static_cast<float>(mantissa), -9)
                                        : std::ldexp(1.0F + static_cast<float>(mantissa) / 8.0F, exponent - 7);
  return (b & 0x80) != 0 ? -magnitude : magnitude;
}

/// The bytes the writer would summarise for `raw` elements of `kind`: bf16 and fp8 widened to
/// float32 (as torch/tensors/float_formats.cpp does), the others as they are.
std::vector<std::byte> writer_bytes(ElementKind kind, const std::vector<std::byte>& raw) {
  if (kind != kBFloat16 && kind != kFloat8E4M3FN && kind != kFloat8E5M2) return raw;
  const std::size_t size = item_size(kind), count = raw.size() / size;
  std::vector<float> wide(count);
  for (std::size_t i = 0; i < count; ++i) {
    if (kind == kBFloat16) {
      std::uint16_t half = 0;
      std::memcpy(&half, &raw[i * 2], 2);
      const std::uint32_t bits = static_cast<std::uint32_t>(half) << 16;
      std::memcpy(&wide[i], &bits, 4);
    } else if (kind == kFloat8E5M2) {
      wide[i] = static_cast<float>(core::half_to_double(static_cast<std::uint16_t>(std::to_integer<unsigned>(raw[i]) << 8)));
    } else {
      wide[i] = e4m3fn_reference(std::to_integer<std::uint8_t>(raw[i]));
    }
  }
  std::vector<std::byte> out(count * 4);
  std::memcpy(out.data(), wide.data(), out.size());
  return out;
}

/// Random elements of `kind`: floats of mixed scale with a NaN and an Inf planted (where the kind
/// has them), integers over their whole range, bools 0/1.
std::vector<std::byte> random_elements(ElementKind kind, std::size_t count, std::mt19937_64& rng) {
  const std::size_t size = item_size(kind);
  std::vector<std::byte> out(count * size);
  std::normal_distribution<double> normal(0.5, 3.0);
  for (std::size_t i = 0; i < count; ++i) {
    std::byte* p = &out[i * size];
    const double v = normal(rng);
    switch (kind) {
      case kBool: *p = std::byte(rng() & 1); break;
      case kFloat16: {
        // float16 through float: round by truncating the float's bits (any valid half will do).
        const float f = static_cast<float>(v);
        std::uint32_t bits = 0;
        std::memcpy(&bits, &f, 4);
        const std::uint32_t exponent = ((bits >> 23) & 0xFF);
        const std::uint16_t half = static_cast<std::uint16_t>(
            ((bits >> 16) & 0x8000) | (exponent < 113 ? 0 : ((exponent - 112) << 10) | ((bits >> 13) & 0x3FF)));
        std::memcpy(p, &half, 2);
        break;
      }
      case kFloat32: {
        const float f = static_cast<float>(v);
        std::memcpy(p, &f, 4);
        break;
      }
      case kFloat64: std::memcpy(p, &v, 8); break;
      case kComplex64: {
        const float parts[2] = {static_cast<float>(v), static_cast<float>(normal(rng))};
        std::memcpy(p, parts, 8);
        break;
      }
      case kComplex128: {
        const double parts[2] = {v, normal(rng)};
        std::memcpy(p, parts, 16);
        break;
      }
      default: {  // integers, bf16 and fp8: any bits
        const std::uint64_t bits = rng();
        std::memcpy(p, &bits, size);
      }
    }
  }
  if (can_be_nonfinite(kind) && count >= 8 && kind != kFloat8E4M3FN) {
    // A NaN and an Inf at fixed places: all-ones exponents (a quiet NaN, then +Inf).
    const auto plant = [&](std::size_t at, std::uint64_t bits) { std::memcpy(&out[at * size], &bits, std::min<std::size_t>(size, 8)); };
    switch (kind) {
      case kFloat16: plant(3, 0x7E00), plant(5, 0x7C00); break;
      case kBFloat16: plant(3, 0x7FC0), plant(5, 0x7F80); break;
      case kFloat32: case kComplex64: plant(3, 0x7FC00000), plant(5, 0x7F800000); break;
      case kFloat64: case kComplex128: plant(3, 0x7FF8000000000000), plant(5, 0x7FF0000000000000); break;
      case kFloat8E5M2: plant(3, 0x7F), plant(5, 0x7C); break;
      default: break;
    }
  }
  return out;
}

TensorJob contiguous_job(ElementKind kind, const std::vector<std::byte>& bytes) {
  TensorJob job;
  job.kind = kind;
  job.data = reinterpret_cast<std::uintptr_t>(bytes.data());
  job.count = bytes.size() / item_size(kind);
  job.ndim = 1;
  job.sizes[0] = static_cast<i64>(job.count);
  job.strides[0] = 1;
  set_grouping(job, true);
  return job;
}

/// The fingerprint sums written out: int32 words of the C-order bytes (unsigned bytes when their
/// count is not a multiple of 4), sum of w_i * (2i + 1) and of w_i * w_i modulo 2^64.
std::pair<std::uint64_t, std::uint64_t> fingerprint_reference(const std::vector<std::byte>& bytes) {
  std::uint64_t position = 0, by_value = 0;
  const bool words = bytes.size() % 4 == 0;
  const std::size_t n = words ? bytes.size() / 4 : bytes.size();
  for (std::size_t i = 0; i < n; ++i) {
    std::int64_t w = 0;
    if (words) {
      std::int32_t word = 0;
      std::memcpy(&word, &bytes[4 * i], 4);
      w = word;
    } else {
      w = std::to_integer<std::uint8_t>(bytes[i]);
    }
    position += static_cast<std::uint64_t>(w) * (2 * i + 1);
    by_value += static_cast<std::uint64_t>(w) * static_cast<std::uint64_t>(w);
  }
  return {position, by_value};
}

void expect_same_statistics(const Result& kernel, const core::ArrayStats& writer, const std::string& where) {
  EXPECT_EQ(kernel.nan, writer.nan) << where;
  EXPECT_EQ(kernel.nonfinite - kernel.nan, writer.inf) << where;
  ASSERT_EQ(kernel.finite > 0, writer.has_finite) << where;
  if (!writer.has_finite) return;
  EXPECT_EQ(kernel.min, writer.min) << where;
  EXPECT_EQ(kernel.max, writer.max) << where;
  const double scale = std::max({std::fabs(writer.min), std::fabs(writer.max), 1e-300});
  EXPECT_NEAR(std::clamp(kernel.mean, kernel.min, kernel.max), writer.mean, 1e-12 * scale) << where;
  EXPECT_NEAR(std::sqrt(kernel.m2 / static_cast<double>(kernel.finite)), writer.std, 1e-12 * scale) << where;
}

TEST(StatisticsKernel, EveryKindGivesTheWritersStatisticsAndTheFingerprintOfItsBytes) {
  std::mt19937_64 rng(7);
  for (const auto& c : cases()) {
    for (const std::size_t count : {std::size_t{1}, std::size_t{3}, std::size_t{8}, std::size_t{1001}, std::size_t{4096}}) {
      const auto bytes = random_elements(c.kind, count, rng);
      const Result kernel = summarise_job(contiguous_job(c.kind, bytes));
      const auto wide = writer_bytes(c.kind, bytes);
      const std::string where = c.name + " x" + std::to_string(count);
      expect_same_statistics(kernel, core::compute_stats(c.descr, wide.data(), wide.size()), where);
      const auto [position, by_value] = fingerprint_reference(bytes);
      EXPECT_EQ(kernel.position, position) << where;
      EXPECT_EQ(kernel.by_value, by_value) << where;
    }
  }
}

/// The same elements, each at the same C-order place, in any order: every field but the moments
/// equal (those are summed in another order).
void expect_same_elements(const Result& a, const Result& b, const std::string& where) {
  EXPECT_EQ(a.finite, b.finite) << where;
  EXPECT_EQ(a.nan, b.nan) << where;
  EXPECT_EQ(a.nonfinite, b.nonfinite) << where;
  EXPECT_EQ(a.min, b.min) << where;
  EXPECT_EQ(a.max, b.max) << where;
  EXPECT_EQ(a.position, b.position) << where;
  EXPECT_EQ(a.by_value, b.by_value) << where;
}

/// The same arithmetic over the same elements in the same order: every field equal.
void expect_identical(const Result& a, const Result& b, const std::string& where) {
  expect_same_elements(a, b, where);
  EXPECT_EQ(a.mean, b.mean) << where;
  EXPECT_EQ(a.m2, b.m2) << where;
}

TEST(StatisticsKernel, ViewsGiveTheResultOfTheirContiguousCopyAndCopyTheirBytesInCOrder) {
  std::mt19937_64 rng(11);
  for (const auto& c : cases()) {
    const std::size_t size = item_size(c.kind);
    // A 2-D (rows x cols) block, read transposed (cols x rows, strides 1 and cols).
    constexpr std::size_t rows = 33, cols = 18;
    const auto block = random_elements(c.kind, rows * cols, rng);
    std::vector<std::byte> transposed(block.size());
    for (std::size_t i = 0; i < cols; ++i) {
      for (std::size_t j = 0; j < rows; ++j) std::memcpy(&transposed[(i * rows + j) * size], &block[(j * cols + i) * size], size);
    }
    TensorJob view;
    view.kind = c.kind;
    view.data = reinterpret_cast<std::uintptr_t>(block.data());
    view.count = rows * cols;
    view.ndim = 2;
    view.sizes[0] = cols, view.sizes[1] = rows;
    view.strides[0] = 1, view.strides[1] = cols;
    set_grouping(view, false);
    std::vector<std::byte> copied(block.size());  // `dump`: the kernel writes the view's bytes in C order
    view.copy_to = reinterpret_cast<std::uintptr_t>(copied.data());
    const Result from_view = summarise_job(view);
    const Result from_copy = summarise_job(contiguous_job(c.kind, transposed));
    expect_identical(from_view, from_copy, c.name + " transposed");
    EXPECT_EQ(copied, transposed) << c.name << " transposed, copied";
    TensorJob whole = contiguous_job(c.kind, block);
    std::vector<std::byte> copied_whole(block.size());
    whole.copy_to = reinterpret_cast<std::uintptr_t>(copied_whole.data());
    (void)summarise_job(whole);
    EXPECT_EQ(copied_whole, block) << c.name << " copied";

    // A contiguous run that starts one element in: groups not aligned to their size.
    std::vector<std::byte> tail(block.begin() + static_cast<std::ptrdiff_t>(size), block.begin() + static_cast<std::ptrdiff_t>(size * 9));
    TensorJob offset = contiguous_job(c.kind, tail);
    offset.data = reinterpret_cast<std::uintptr_t>(block.data() + size);
    set_grouping(offset, true);
    std::vector<std::byte> copied_tail(tail.size());
    offset.copy_to = reinterpret_cast<std::uintptr_t>(copied_tail.data());
    const Result from_offset = summarise_job(offset);
    const Result from_tail = summarise_job(contiguous_job(c.kind, tail));
    expect_identical(from_offset, from_tail, c.name + " offset");
    EXPECT_EQ(copied_tail, tail) << c.name << " offset, copied";
  }
}

/// A view of `count` elements of `kind` at `data`: `sizes` and `strides` (elements) in C order.
TensorJob strided_job(ElementKind kind, const std::byte* data, const std::vector<i64>& sizes, const std::vector<i64>& strides) {
  TensorJob job;
  job.kind = kind;
  job.data = reinterpret_cast<std::uintptr_t>(data);
  job.ndim = static_cast<u32>(sizes.size());
  job.count = 1;
  for (u32 d = 0; d < job.ndim; ++d) job.sizes[d] = sizes[d], job.strides[d] = strides[d], job.count *= sizes[d];
  set_grouping(job, false);
  return job;
}

TEST(StatisticsKernel, AViewWalkedInMemoryOrderGivesItsCOrderResultAndCopy) {
  std::mt19937_64 rng(17);
  for (const auto& c : cases()) {
    const std::size_t size = item_size(c.kind);
    constexpr i64 C = 3, H = 5, W = 7;  // a channels-last image: memory H, W, C; the view C, H, W
    constexpr i64 R = 70, L = 300;      // and a larger block, rows of L: several chunks of a row each
    const auto memory = random_elements(c.kind, R * L, rng);
    struct View {
      std::vector<i64> sizes, strides;
      bool reordered;
    };
    const std::vector<View> views = {
        {{C, H, W}, {1, W * C, C}, true},   // channels last
        {{W * C, H}, {1, W * C}, true},     // transposed
        {{H * W, 4}, {C, 0}, true},         // every C-th element, each broadcast four times
        {{4, H * W}, {0, C}, false},        // broadcast outermost: memory order already
        {{H, W}, {W * C, C}, false},        // a strided slice in memory order
        {{L, R}, {1, L}, true},             // a large transposed block
        {{R, L / 2}, {L, 2}, false},        // every other element of each row, in C order
    };
    for (const auto& [sizes, strides, reordered] : views) {
      TensorJob view = strided_job(c.kind, memory.data(), sizes, strides);
      const std::string where = c.name + " strides " + std::to_string(strides[0]) + ", " + std::to_string(strides[1]);
      if (view.group != 1) continue;  // 1- and 2-byte elements four bytes at a time stay in C order
      // the same view in C order: the reference (its result and its copy)
      std::vector<std::byte> c_order(view.count * size);
      view.copy_to = reinterpret_cast<std::uintptr_t>(c_order.data());
      const Result in_c_order = summarise_job(view);
      TensorJob walked = view;
      std::vector<std::byte> copied(c_order.size());
      walked.copy_to = reinterpret_cast<std::uintptr_t>(copied.data());
      order_by_memory(walked);
      // Kinds not walked by rows keep C order, element by element.
      EXPECT_EQ((walked.flags & kMemoryOrder) != 0, reordered && walks_rows(c.kind)) << where;
      const Result in_memory_order = summarise_job(walked);
      EXPECT_EQ(copied, c_order) << where;
      expect_same_elements(in_memory_order, in_c_order, where);
      const double scale = std::max({std::fabs(in_c_order.min), std::fabs(in_c_order.max), 1e-300});
      if (in_c_order.finite > 0) {
        EXPECT_NEAR(in_memory_order.mean, in_c_order.mean, 1e-12 * scale) << where;
        EXPECT_NEAR(in_memory_order.m2, in_c_order.m2, 1e-9 * scale * scale * static_cast<double>(view.count)) << where;
      }
      // threads interleaved as on a GPU (7: teams of one; 64 and 256: teams of 32 lanes, a
      // GPU's warps): the same elements as one thread, each copied to its C-order place
      for (const u64 threads : {u64{7}, u64{64}, u64{256}}) {
        std::vector<std::byte> copied_by_threads(c_order.size());
        walked.copy_to = reinterpret_cast<std::uintptr_t>(copied_by_threads.data());
        Partial merged = Accumulator().finish();
        for (u64 t = 0; t < threads; ++t) merge(merged, summarise(walked, t, threads));
        const std::string by = where + " by " + std::to_string(threads) + " threads";
        expect_same_elements(merged, in_c_order, by);
        EXPECT_EQ(copied_by_threads, c_order) << by;
        if (in_c_order.finite > 0) {
          EXPECT_NEAR(merged.mean, in_c_order.mean, 1e-12 * scale) << by;
        }
      }
    }
  }
}

TEST(StatisticsKernel, PartialsOfInterleavedThreadsMergeIntoTheWhole) {
  std::mt19937_64 rng(13);
  // 16-byte vectors and then single groups for the last ones (5003), every group width; a start
  // 8 bytes off 16 (groups one by one throughout).
  const std::pair<ElementKind, std::size_t> runs[] = {
      {kFloat32, 5000}, {kFloat16, 5000}, {kInt64, 5000}, {kComplex64, 5000}, {kFloat32, 5003},
      {kBFloat16, 5003}, {kUInt8, 5003}, {kFloat64, 5003}, {kComplex128, 5003}};
  for (const auto& [kind, count] : runs) {
    const auto bytes = random_elements(kind, count, rng);
    TensorJob job = contiguous_job(kind, bytes);
    if (count == 5003 && kind == kFloat32) {
      job.data += 8, job.count -= 2, job.sizes[0] -= 2;
      set_grouping(job, true);
    }
    const Result whole = summarise_job(job);
    // As the kernel's threads take the groups: thread t of 7 takes t, t + 7, t + 14, …
    constexpr std::uint64_t threads = 7;
    Result merged = summarise(job, 0, threads);
    for (std::uint64_t t = 1; t < threads; ++t) merge(merged, summarise(job, t, threads));
    EXPECT_EQ(merged.nan, whole.nan);
    EXPECT_EQ(merged.nonfinite, whole.nonfinite);
    EXPECT_EQ(merged.finite, whole.finite);
    EXPECT_EQ(merged.min, whole.min);
    EXPECT_EQ(merged.max, whole.max);
    EXPECT_EQ(merged.position, whole.position);
    EXPECT_EQ(merged.by_value, whole.by_value);
    const double scale = std::max(std::fabs(whole.min), std::fabs(whole.max));
    EXPECT_NEAR(merged.mean, whole.mean, 1e-12 * scale);
    EXPECT_NEAR(merged.m2 / static_cast<double>(merged.finite), whole.m2 / static_cast<double>(whole.finite),
                1e-12 * scale * scale);
  }
}

TEST(StatisticsKernel, ACopyIfChangedIsMadeOnlyOfBytesWhoseFingerprintChanged) {
  std::mt19937_64 rng(17);
  // Float32 from an address aligned to 16, 4 and 1 (a uint8 run one byte in), sizes with and
  // without a tail past the last 16-byte vector; the copy's share taken by 5 interleaved threads.
  const std::pair<ElementKind, std::size_t> runs[] = {{kFloat32, 4096}, {kFloat32, 1001}, {kUInt8, 4099}};
  for (const auto& [kind, count] : runs) {
    std::vector<std::byte> storage = random_elements(kind, count + 16, rng);
    const std::size_t skip = kind == kUInt8 ? 1 : (count == 1001 ? 4 : 0);
    const std::vector<std::byte> bytes(storage.begin() + static_cast<std::ptrdiff_t>(skip),
                                       storage.begin() + static_cast<std::ptrdiff_t>(skip + count * item_size(kind)));
    TensorJob job = contiguous_job(kind, bytes);
    job.data = reinterpret_cast<std::uintptr_t>(storage.data() + skip);
    set_grouping(job, true);
    const Result held = summarise_job(job);  // the fingerprint of the copy the host holds
    alignas(16) static std::byte staged[1 << 16];
    std::memset(staged, 0, sizeof staged);
    job.copy_to = reinterpret_cast<std::uintptr_t>(staged);
    job.flags |= kCopyIfChanged;
    job.slot = 0;
    job.held_position = held.position, job.held_by_value = held.by_value;
    const std::string where = std::to_string(count) + " elements, " + std::to_string(skip) + " bytes in";

    // Unchanged: summarised (nothing copied while it is), found unchanged, so nothing is copied;
    // so too against an earlier read's result in another slot (kHeldInSlot).
    Result results[2] = {summarise_job(job), held};  // the job's slot 0, an earlier read's slot 1
    EXPECT_TRUE(unchanged(job, results)) << where;
    EXPECT_TRUE(std::all_of(staged, staged + bytes.size(), [](std::byte b) { return b == std::byte{0}; })) << where;
    TensorJob following = job;
    following.flags |= kHeldInSlot;
    following.held_slot = 1;
    following.held_position = following.held_by_value = 0;  // not what it is compared with
    EXPECT_TRUE(unchanged(following, results)) << where;

    // One element changed: found changed, and the copy launch's threads copy every byte.
    storage[skip + bytes.size() / 2] ^= std::byte{0x40};
    results[0] = summarise_job(job);
    EXPECT_FALSE(unchanged(job, results)) << where;
    EXPECT_FALSE(unchanged(following, results)) << where;
    EXPECT_TRUE(std::all_of(staged, staged + bytes.size(), [](std::byte b) { return b == std::byte{0}; })) << where;
    for (std::uint64_t t = 0; t < 5; ++t) copy_part(job, t, 5);
    EXPECT_EQ(std::memcmp(staged, storage.data() + skip, bytes.size()), 0) << where;
  }
}

/// The groups thread `first` of `stride` takes of a kWholeGroups job of `groups` groups, `per_vector`
/// to 16 bytes, in the order it takes them: the 16-byte vectors first, first + stride, … then the
/// groups past them where `aligned`, else the groups first, first + stride, …
std::vector<std::size_t> share_of(std::size_t groups, std::size_t per_vector, bool aligned, std::size_t first,
                                  std::size_t stride) {
  std::vector<std::size_t> order;
  std::size_t g = first;
  if (aligned) {
    const std::size_t vectors = groups / per_vector;
    for (std::size_t v = first; v < vectors; v += stride) {
      for (std::size_t k = 0; k < per_vector; ++k) order.push_back(v * per_vector + k);
    }
    g = vectors * per_vector + first;
  }
  for (; g < groups; g += stride) order.push_back(g);
  return order;
}

/// Whether the element of `kind` at `p` is NaN or Inf (the kernel's own answer for it alone).
bool nonfinite_element(ElementKind kind, const std::byte* p) {
  TensorJob one;
  one.kind = kind, one.data = reinterpret_cast<std::uintptr_t>(p), one.count = 1, one.ndim = 1;
  one.sizes[0] = 1, one.strides[0] = 1;
  set_grouping(one, true);
  return summarise_job(one).nonfinite > 0;
}

TEST(StatisticsKernel, EveryThreadsShareGivesTheCountingAccumulatorsPartialBitForBit) {
  // Values lying together are taken by FiniteMoments (no test per value) and read again by the
  // Accumulator only where one is not finite: either way, each thread's Partial must be the one the
  // Accumulator gives for the same groups in the same order (accumulate_any: the element-by-element
  // path's arithmetic), fingerprint included.
  std::mt19937_64 rng(17);
  for (const auto& c : cases()) {
    const std::size_t size = item_size(c.kind), group = group_bytes(c.kind), per_group = group / size;
    for (const std::size_t drawn : {std::size_t{4}, std::size_t{12}, std::size_t{64}, std::size_t{1004}, std::size_t{4098}}) {
      const std::size_t count = drawn / per_group * per_group;  // whole groups only
      const auto raw = random_elements(c.kind, count, rng);  // NaN and Inf at 3 and 5 where the kind has them
      std::vector<std::byte> finite = raw;  // the same with every NaN/Inf made zero bytes (finite in every kind)
      for (std::size_t i = 0; i < count; ++i) {
        if (nonfinite_element(c.kind, &finite[i * size])) std::fill_n(&finite[i * size], size, std::byte{0});
      }
      const std::vector<std::byte>* const variants[] = {&raw, &finite};
      for (const auto* elements : variants) {
        for (const bool aligned : {true, false}) {
          // 16-aligned storage (std::vector's allocation), or one group past it.
          std::vector<std::byte> storage(elements->size() + 32);
          std::byte* data = storage.data() + (aligned ? 0 : group);
          std::copy(elements->begin(), elements->end(), data);
          TensorJob job = contiguous_job(c.kind, *elements);
          job.data = reinterpret_cast<std::uintptr_t>(data);
          set_grouping(job, true);
          ASSERT_TRUE(job.flags & kWholeGroups) << c.name;
          for (const std::size_t stride : {std::size_t{1}, std::size_t{3}, std::size_t{7}}) {
            for (std::size_t first = 0; first < stride; ++first) {
              Accumulator reference;
              for (const std::size_t g : share_of(count / per_group, 16 / group, job.data % 16 == 0, first, stride)) {
                accumulate_any(job, g, load_bits(reinterpret_cast<const u8*>(data) + g * group, static_cast<u32>(group)), reference);
              }
              const std::string where = c.name + " x" + std::to_string(count) + (elements == &raw ? " drawn" : " finite") +
                                        (aligned ? " aligned" : " unaligned") + " thread " + std::to_string(first) +
                                        " of " + std::to_string(stride);
              expect_identical(summarise(job, first, stride), reference.finish(), where);
            }
          }
        }
      }
    }
  }
}

TEST(StatisticsKernel, AnEmptyTensorHasNoFiniteValue) {
  const std::vector<std::byte> none;
  const Result result = summarise_job(contiguous_job(kFloat32, none));
  EXPECT_EQ(result.finite, 0U);
  EXPECT_EQ(result.nan + result.nonfinite + result.position + result.by_value, 0U);
}

TEST(StatisticsKernel, TheRingsGateStopsTheLaunchesAfterOneItClosedUntilThatOneIsJudged) {
  LaunchParams params;
  params.stamp = 10, params.open_through = 4;
  EXPECT_TRUE(gate_open(0, params));   // never closed
  EXPECT_TRUE(gate_open(4, params));   // closed by a launch judged no culprit since
  EXPECT_FALSE(gate_open(5, params));  // by one not judged when this launch was sent
  EXPECT_FALSE(gate_open(9, params));
  EXPECT_TRUE(gate_open(10, params));  // by this launch (its other blocks copy alike)
  EXPECT_TRUE(gate_open(11, params));  // by a later one on another stream
  EXPECT_EQ(ring_copy(0, 8), kCopiedAll);
  EXPECT_EQ(ring_copy(8, 8), kCopiedNone);
  EXPECT_EQ(ring_copy(3, 8), kCopiedPart);
}

TEST(StatisticsKernel, ALaunchClosesTheGateOnNaNInAJudgedOutputOfInputsItFoundFinite) {
  const std::vector<float> finite = {1.0F, 2.0F}, nan = {1.0F, std::nanf("")};
  std::vector<std::byte> finite_bytes(sizeof(float) * 2), nan_bytes(sizeof(float) * 2);
  std::memcpy(finite_bytes.data(), finite.data(), finite_bytes.size());
  std::memcpy(nan_bytes.data(), nan.data(), nan_bytes.size());
  const auto part = [](const std::vector<std::byte>& bytes, std::uint32_t role) {
    TensorJob job = contiguous_job(kFloat32, bytes);
    job.flags |= role;
    return verdict_part(job, summarise_job(job));
  };
  const u32 input = part(finite_bytes, kJudgedInput), output = part(nan_bytes, kJudgedOutput);
  EXPECT_TRUE(closes_gate(input + output));
  EXPECT_TRUE(closes_gate(input + output + output));  // two NaN outputs count, not carry
  EXPECT_FALSE(closes_gate(input + part(finite_bytes, kJudgedOutput)));
  EXPECT_FALSE(closes_gate(part(nan_bytes, kJudgedInput) + output));  // NaN in: no culprit
  EXPECT_EQ((input + output) & kVerdictArrivals, 2U);
}

}  // namespace
}  // namespace ophook::device::statistics_kernel
