// Numeric kernels of `ophook compare`: errors, cosine, allclose, NaN/Inf patterns, dtypes.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "compare/values/array_diff.hpp"
#include "compare/values/stats_diff.hpp"
#include "read/arrays/element_type.hpp"

namespace ophook::cli {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

/// Owns the bytes of a test buffer and hands out a view of them.
struct Buffer {
  std::string descr;
  std::size_t item_size = 0;
  std::vector<std::byte> bytes;
  BufferView view() const { return {descr, item_size, bytes.size() / item_size, bytes}; }
};

template <typename T>
Buffer make(const std::string& descr, const std::vector<T>& values, bool swap = false) {
  Buffer b{descr, sizeof(T), std::vector<std::byte>(values.size() * sizeof(T))};
  std::memcpy(b.bytes.data(), values.data(), b.bytes.size());
  if (swap) {
    for (std::size_t i = 0; i < values.size(); ++i) {
      std::reverse(b.bytes.begin() + i * sizeof(T), b.bytes.begin() + (i + 1) * sizeof(T));
    }
  }
  return b;
}

ArrayDiff diff(const Buffer& a, const Buffer& b, Tolerance tol = {}, unsigned threads = 1) {
  return compare_buffers(a.view(), b.view(), tol, threads);
}

TEST(CliArrayDiff, IdenticalBytesTakeTheFastPath) {
  const auto a = make<float>("<f4", {1.f, 2.f, -3.5f});
  const ArrayDiff d = diff(a, a);
  EXPECT_TRUE(d.bitwise_equal);
  EXPECT_TRUE(d.within_tolerance());
  EXPECT_EQ(d.max_abs, 0);
  EXPECT_EQ(d.cosine, 1.0);
}

TEST(CliArrayDiff, MaxAbsRelAndCosineMatchHandComputation) {
  const std::vector<double> base{1, 2, 3, 4}, other{1, 2.5, 3, 3};
  const ArrayDiff d = diff(make("<f8", base), make("<f8", other));
  EXPECT_FALSE(d.bitwise_equal);
  EXPECT_DOUBLE_EQ(d.max_abs, 1.0);
  EXPECT_EQ(d.worst_index, 3);
  EXPECT_DOUBLE_EQ(d.max_rel, 0.25);  // |3-4|/|4| beats |2.5-2|/|2|
  double dot = 0, na = 0, nb = 0;
  for (int i = 0; i < 4; ++i)
    dot += base[i] * other[i], na += base[i] * base[i], nb += other[i] * other[i];
  EXPECT_NEAR(d.cosine, dot / std::sqrt(na * nb), 1e-15);
  EXPECT_EQ(d.not_close, 2u);
  EXPECT_FALSE(d.within_tolerance());
}

TEST(CliArrayDiff, AllcloseUsesNumpyRuleRelativeToBase) {
  const Tolerance tol{1e-5, 1e-8};
  EXPECT_TRUE(
      diff(make<double>("<f8", {1.0}), make<double>("<f8", {1.0 + 1e-5}), tol).within_tolerance());
  EXPECT_FALSE(
      diff(make<double>("<f8", {1.0}), make<double>("<f8", {1.0 + 2e-5}), tol).within_tolerance());
  EXPECT_TRUE(
      diff(make<double>("<f8", {0.0}), make<double>("<f8", {5e-9}), tol).within_tolerance());
  EXPECT_FALSE(
      diff(make<double>("<f8", {0.0}), make<double>("<f8", {2e-8}), tol).within_tolerance());
  // Relative to the base: 100 vs 100.0009 is close, 0.0009 vs 0 (base 0) is not.
  EXPECT_TRUE(
      diff(make<double>("<f8", {100.0}), make<double>("<f8", {100.0009}), tol).within_tolerance());
  const ArrayDiff zero_base = diff(make<double>("<f8", {0.0}), make<double>("<f8", {1.0}), tol);
  EXPECT_TRUE(std::isinf(zero_base.max_rel));
}

TEST(CliArrayDiff, NanMatchesNanAndInfMatchesSameInf) {
  const auto a = make<double>("<f8", {kNaN, 1.0, kInf, -kInf});
  auto b = make<double>("<f8", {-kNaN, 1.0, kInf, -kInf});  // another NaN bit pattern
  const ArrayDiff same = diff(a, b);
  EXPECT_FALSE(same.bitwise_equal);
  EXPECT_TRUE(same.within_tolerance());
  EXPECT_EQ(same.nonfinite_mismatch, 0u);
  EXPECT_EQ(same.cosine, 1.0);  // over the finite positions only

  const ArrayDiff nan_vs_number = diff(a, make<double>("<f8", {0.0, 1.0, kInf, -kInf}));
  EXPECT_EQ(nan_vs_number.nonfinite_mismatch, 1u);
  EXPECT_FALSE(nan_vs_number.within_tolerance());
  const ArrayDiff inf_sign = diff(a, make<double>("<f8", {kNaN, 1.0, -kInf, -kInf}));
  EXPECT_EQ(inf_sign.nonfinite_mismatch, 1u);
  EXPECT_EQ(inf_sign.max_abs, 0.0);  // finite positions agree
}

TEST(CliArrayDiff, Float16IsReadAsHalfPrecision) {
  // binary16 bit patterns: 1.0, 0.5, -2.0, the smallest subnormal 2^-24, -0.0, +Inf, -Inf.
  const std::vector<std::uint16_t> half{0x3c00, 0x3800, 0xc000, 0x0001, 0x8000, 0x7c00, 0xfc00};
  const auto f2 = make("<f2", half);
  const auto f8 = make<double>("<f8", {1.0, 0.5, -2.0, std::ldexp(1.0, -24), -0.0, kInf, -kInf});
  const ArrayDiff d = diff(f2, f8);
  EXPECT_FALSE(d.bitwise_equal);
  EXPECT_TRUE(d.within_tolerance());
  EXPECT_EQ(d.max_abs, 0.0);
  EXPECT_EQ(d.nonfinite_mismatch, 0u);
  // A NaN half (0x7e00) pairs with a NaN.
  EXPECT_TRUE(diff(make("<f2", std::vector<std::uint16_t>{0x7e00}), make<double>("<f8", {kNaN}))
                  .within_tolerance());
  // 1/3 in half precision (0x3555) is off by about 1e-4 from the float32 value.
  const ArrayDiff third =
      diff(make("<f2", std::vector<std::uint16_t>{0x3555}), make<float>("<f4", {1.0f / 3}));
  EXPECT_GT(third.max_abs, 1e-5);
  EXPECT_LT(third.max_abs, 2e-4);
}

TEST(CliArrayDiff, BigEndianEqualsLittleEndianValues) {
  const std::vector<double> values{1.5, -2.25, 1e300};
  const auto little = make("<f8", values);
  const auto big = make(">f8", values, /*swap=*/true);
  const ArrayDiff d = diff(little, big);
  EXPECT_FALSE(d.bitwise_equal);
  EXPECT_EQ(d.max_abs, 0.0);
  EXPECT_TRUE(d.within_tolerance());
  const auto big_i4 = make(">i4", std::vector<std::int32_t>{7, -9}, true);
  EXPECT_TRUE(diff(make("<i4", std::vector<std::int32_t>{7, -9}), big_i4).within_tolerance());
  const auto big_f2 = make(">f2", std::vector<std::uint16_t>{0x4200}, true);  // 3.0
  EXPECT_TRUE(diff(make<float>("<f4", {3.0f}), big_f2).within_tolerance());
}

TEST(CliArrayDiff, IntegersBoolsAndComplex) {
  EXPECT_EQ(diff(make("|b1", std::vector<std::uint8_t>{1, 0}),
                 make("|b1", std::vector<std::uint8_t>{1, 1}))
                .max_abs,
            1.0);
  EXPECT_EQ(
      diff(make("<u8", std::vector<std::uint64_t>{10}), make("<i2", std::vector<std::int16_t>{7}))
          .max_abs,
      3.0);
  const auto c8 = make<float>("<c8", {3.0f, 4.0f});  // one complex64: 3+4j
  const auto c16 = make<double>("<c16", {3.0, 0.0});
  Buffer c8_view = c8;
  c8_view.item_size = 8;
  Buffer c16_view = c16;
  c16_view.item_size = 16;
  const ArrayDiff d = diff(c8_view, c16_view);
  EXPECT_DOUBLE_EQ(d.max_abs, 4.0);        // |(3+4j) - 3|
  EXPECT_DOUBLE_EQ(d.max_rel, 4.0 / 5.0);  // relative to |3+4j|
  EXPECT_NEAR(d.cosine, 9.0 / (5.0 * 3.0), 1e-12);
}

TEST(CliArrayDiff, OtherDtypesCompareBytewise) {
  Buffer a{"<U2", 8, std::vector<std::byte>(16, std::byte{'a'})};
  Buffer b = a;
  b.bytes[9] = std::byte{'b'};
  const ArrayDiff d = diff(a, b);
  EXPECT_TRUE(d.compared);
  EXPECT_EQ(d.not_close, 1u);
  EXPECT_EQ(d.worst_index, 1);
  EXPECT_TRUE(diff(a, a).bitwise_equal);
}

TEST(CliArrayDiff, ElementCountMismatchIsAShapeMismatch) {
  const ArrayDiff d = diff(make<float>("<f4", {1, 2}), make<float>("<f4", {1, 2, 3}));
  EXPECT_TRUE(d.shape_mismatch);
  EXPECT_FALSE(d.within_tolerance());
}

TEST(CliArrayDiff, ThreadedResultEqualsSingleThreaded) {
  std::vector<float> a(3'000'000), b(3'000'000);
  for (std::size_t i = 0; i < a.size(); ++i) {
    a[i] = static_cast<float>(std::sin(static_cast<double>(i)));
    b[i] = a[i] + (i % 1000 == 7 ? 1e-3f * static_cast<float>(i % 13) : 0.0f);
  }
  b[2'500'001] = std::numeric_limits<float>::quiet_NaN();
  const auto ba = make("<f4", a), bb = make("<f4", b);
  const ArrayDiff one = diff(ba, bb, {}, 1), two = diff(ba, bb, {}, 2);
  EXPECT_EQ(one.max_abs, two.max_abs);
  EXPECT_EQ(one.worst_index, two.worst_index);
  EXPECT_EQ(one.not_close, two.not_close);
  EXPECT_EQ(one.nonfinite_mismatch, 1u);
  EXPECT_EQ(two.nonfinite_mismatch, 1u);
  EXPECT_NEAR(one.cosine, two.cosine, 1e-12);
}

TEST(CliArrayDiff, DescrDecoding) {
  EXPECT_EQ(decode_descr("<f4").kind, ElementKind::Float);
  EXPECT_EQ(decode_descr("|b1").kind, ElementKind::Bool);
  EXPECT_EQ(decode_descr(">c16").size, 16u);
  EXPECT_EQ(decode_descr(">i8").swap, std::endian::native == std::endian::little);
  EXPECT_EQ(decode_descr("<U3").kind, ElementKind::Other);
  EXPECT_EQ(decode_descr("<M8[ns]").kind, ElementKind::Other);
  EXPECT_EQ(decode_descr("<f16").kind, ElementKind::Other);  // long double: bytewise only
}

TEST(CliArrayDiff, StatsComparison) {
  StatsSpec a{0.0, 5.0, 2.5, 1.7, 0, 0, 0x0123456789abcdef, true};
  StatsSpec b = a;
  EXPECT_TRUE(compare_stats(a, b, {}).bitwise_equal);
  b.xxh64 = 0xfedcba9876543210;
  b.mean = 2.5 + 1e-7;
  ArrayDiff d = compare_stats(a, b, {});
  EXPECT_TRUE(d.within_tolerance());
  EXPECT_NEAR(d.max_abs, 1e-7, 1e-12);
  b.max = 6.0;
  b.nan = 2;
  d = compare_stats(a, b, {});
  EXPECT_FALSE(d.within_tolerance());
  EXPECT_EQ(d.nonfinite_mismatch, 2u);
  EXPECT_DOUBLE_EQ(d.max_abs, 1.0);
}

TEST(CliArrayDiff, Scalars) {
  EXPECT_TRUE(compare_scalars(1.0, 1.0 + 1e-9, {}).within_tolerance());
  EXPECT_FALSE(compare_scalars(1.0, 1.1, {}).within_tolerance());
  EXPECT_TRUE(compare_scalars(kNaN, kNaN, {}).within_tolerance());
}

}  // namespace
}  // namespace ophook::cli
