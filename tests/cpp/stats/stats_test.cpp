#include "ophook/stats/stats.hpp"

#include "stats/float_blocks.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstring>
#include <limits>
#include <vector>

namespace ophook::core {
namespace {

constexpr double kNan = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

template <typename T>
std::vector<std::byte> bytes_of(const std::vector<T>& values) {
  std::vector<std::byte> out(values.size() * sizeof(T));
  if (!out.empty()) std::memcpy(out.data(), values.data(), out.size());
  return out;
}

// The same values stored big-endian: every element's bytes reversed.
template <typename T>
std::vector<std::byte> big_endian_bytes_of(const std::vector<T>& values, std::size_t part) {
  std::vector<std::byte> out = bytes_of(values);
  for (std::size_t i = 0; i < out.size(); i += part) std::reverse(&out[i], &out[i] + part);
  return out;
}

template <typename T>
ArrayStats stats_of(std::string_view descr, const std::vector<T>& values) {
  const auto b = bytes_of(values);
  return compute_stats(descr, b.data(), b.size());
}

void expect_summary(const ArrayStats& s, double min, double max, double mean, double std) {
  EXPECT_TRUE(s.numeric);
  ASSERT_TRUE(s.has_finite);
  EXPECT_DOUBLE_EQ(s.min, min);
  EXPECT_DOUBLE_EQ(s.max, max);
  EXPECT_DOUBLE_EQ(s.mean, mean);
  EXPECT_NEAR(s.std, std, 1e-12 * std::max(1.0, std));
}

TEST(Stats, Float32ByHand) {
  // mean 2.5; deviations ±0.5, ±1.5 → variance (0.25+0.25+2.25+2.25)/4 = 1.25.
  const ArrayStats s = stats_of<float>("<f4", {1, 2, 3, 4});
  expect_summary(s, 1, 4, 2.5, std::sqrt(1.25));
  EXPECT_EQ(s.nan, 0u);
  EXPECT_EQ(s.inf, 0u);
}

TEST(Stats, NanAndInfAreCountedAndExcluded) {
  const ArrayStats s = stats_of<double>("<f8", {1, kNan, 3, kInf, -kInf, kNan});
  EXPECT_EQ(s.nan, 2u);
  EXPECT_EQ(s.inf, 2u);
  expect_summary(s, 1, 3, 2, 1);
}

TEST(Stats, AllNonFiniteHasNoSummary) {
  const ArrayStats s = stats_of<float>("<f4", {NAN, INFINITY});
  EXPECT_TRUE(s.numeric);
  EXPECT_FALSE(s.has_finite);
  EXPECT_EQ(s.nan, 1u);
  EXPECT_EQ(s.inf, 1u);
  const nlohmann::json j = stats_to_json(s);
  EXPECT_TRUE(j["min"].is_null());
  EXPECT_TRUE(j["std"].is_null());
  EXPECT_EQ(j["nan"], 1);
}

TEST(Stats, EmptyArray) {
  const ArrayStats s = compute_stats("<f4", nullptr, 0);
  EXPECT_TRUE(s.numeric);
  EXPECT_FALSE(s.has_finite);
  EXPECT_EQ(s.xxh64, 0xef46db3751d8e999ull);
  const std::byte dummy{};
  EXPECT_EQ(compute_stats("<i8", &dummy, 0).xxh64, 0xef46db3751d8e999ull);
  EXPECT_EQ(stats_to_json(s)["xxh64"], "ef46db3751d8e999");
}

TEST(Stats, Xxh64KnownAnswers) {
  // Values from the XXH64 reference algorithm (seed 0).
  const std::string abc = "abc";
  EXPECT_EQ(compute_stats("|S3", reinterpret_cast<const std::byte*>(abc.data()), 3).xxh64,
            0x44bc2cf5ad770999ull);
  std::vector<std::uint8_t> hundred(100);
  for (std::size_t i = 0; i < hundred.size(); ++i) hundred[i] = static_cast<std::uint8_t>(i);
  const ArrayStats s = stats_of<std::uint8_t>("|u1", hundred);
  EXPECT_EQ(s.xxh64, 0x6ac1e58032166597ull);
  EXPECT_EQ(stats_to_json(s)["xxh64"], "6ac1e58032166597");
}

TEST(Stats, DeviceFingerprintDigestHashesTheThreeWordsLittleEndian) {
  // Values from the XXH64 reference algorithm (seed 0) over struct.pack("<QQQ", ...).
  EXPECT_EQ(device_fingerprint_digest(0, 0, 0), 0xbb3302e8a9608868ull);
  EXPECT_EQ(device_fingerprint_digest(0x0123456789abcdefull, 0xfedcba9876543210ull, 24), 0xbe5f9580ed787d49ull);
  // Each word counts: swapping the sums or changing the size changes the digest.
  EXPECT_NE(device_fingerprint_digest(1, 2, 8), device_fingerprint_digest(2, 1, 8));
  EXPECT_NE(device_fingerprint_digest(1, 2, 8), device_fingerprint_digest(1, 2, 16));
}

TEST(Stats, HashIsOverRawBytesIncludingPartialElement) {
  const std::vector<std::byte> five(5, std::byte{7});
  const ArrayStats s = compute_stats("<f4", five.data(), five.size());
  const ArrayStats s4 = compute_stats("<f4", five.data(), 4);
  EXPECT_NE(s.xxh64, s4.xxh64);
  EXPECT_EQ(s.min, s4.min);  // the trailing byte is not an element
}

TEST(Stats, Integers) {
  // mean 0, variance (128^2 + 127^2 + 1^2) / 3.
  expect_summary(stats_of<std::int8_t>("|i1", {-128, 127, 1}), -128, 127, 0,
                 std::sqrt((16384.0 + 16129.0 + 1.0) / 3));
  expect_summary(stats_of<std::int16_t>("<i2", {-5, 5}), -5, 5, 0, 5);
  expect_summary(stats_of<std::int32_t>("<i4", {10, 20, 30}), 10, 30, 20, std::sqrt(200.0 / 3));
  expect_summary(stats_of<std::int64_t>("<i8", {-7, -7}), -7, -7, -7, 0);
  expect_summary(stats_of<std::uint16_t>("<u2", {65535, 1}), 1, 65535, 32768, 32767);
  expect_summary(stats_of<std::uint32_t>("=u4", {4000000000u, 0}), 0, 4e9, 2e9, 2e9);
  const ArrayStats big = stats_of<std::uint64_t>("<u8", {~0ull});
  EXPECT_DOUBLE_EQ(big.max, 18446744073709551615.0);
  EXPECT_EQ(big.nan + big.inf, 0u);
}

TEST(Stats, BoolCountsAsZeroOne) {
  // mean 0.75, variance 0.75 * 0.25.
  const std::vector<std::uint8_t> values{1, 0, 1, 2};  // any non-zero byte is True
  expect_summary(stats_of<std::uint8_t>("|b1", values), 0, 1, 0.75, std::sqrt(0.1875));
}

TEST(Stats, BigEndianMatchesLittleEndian) {
  const std::vector<std::int32_t> ints{1, -2, 300000, 7};
  const auto be_ints = big_endian_bytes_of(ints, 4);
  const ArrayStats a = compute_stats(">i4", be_ints.data(), be_ints.size());
  const ArrayStats b = stats_of("<i4", ints);
  expect_summary(a, b.min, b.max, b.mean, b.std);
  EXPECT_EQ(a.min, -2);

  const std::vector<double> doubles{1.5, -2.25, kNan, 1e300, kInf};
  const auto be_doubles = big_endian_bytes_of(doubles, 8);
  const ArrayStats c = compute_stats(">f8", be_doubles.data(), be_doubles.size());
  EXPECT_EQ(c.nan, 1u);
  EXPECT_EQ(c.inf, 1u);
  EXPECT_DOUBLE_EQ(c.max, 1e300);
  EXPECT_DOUBLE_EQ(c.min, -2.25);
  EXPECT_NE(c.xxh64, stats_of("<f8", doubles).xxh64);  // the hash is of the bytes as given

  const std::vector<std::uint16_t> u16{0x0102, 0x0304};
  const auto be_u16 = big_endian_bytes_of(u16, 2);
  expect_summary(compute_stats(">u2", be_u16.data(), be_u16.size()), 0x0102, 0x0304, 0x0203, 0x0101);
}

TEST(Stats, Float16) {
  // IEEE half bits: 1.0 = 0x3C00, 2.0 = 0x4000, -0.5 = 0xB800, inf = 0x7C00, NaN = 0x7E00.
  const std::vector<std::uint16_t> bits{0x3C00, 0x4000, 0xB800, 0x7C00, 0x7E00, 0xFC00};
  const ArrayStats s = stats_of("<f2", bits);
  EXPECT_EQ(s.nan, 1u);
  EXPECT_EQ(s.inf, 2u);
  // values 1, 2, -0.5: mean 2.5/3; variance = mean of squares - mean^2 = 5.25/3 - (2.5/3)^2
  expect_summary(s, -0.5, 2, 2.5 / 3, std::sqrt(5.25 / 3 - (2.5 / 3) * (2.5 / 3)));
  const auto be = big_endian_bytes_of(bits, 2);
  const ArrayStats b = compute_stats(">f2", be.data(), be.size());
  EXPECT_EQ(b.nan, 1u);
  EXPECT_EQ(b.inf, 2u);
  EXPECT_DOUBLE_EQ(b.mean, s.mean);
  // The largest half, 65504 = 0x7BFF; the smallest subnormal 2^-24 = 0x0001; the largest
  // subnormal 1023 * 2^-24 = 0x03FF; -0.0 = 0x8000; -2^-24 = 0x8001; 0.099975586 = 0x2E66.
  const ArrayStats e = stats_of<std::uint16_t>("<f2", {0x7BFF, 0x0001, 0x03FF, 0x8000, 0x8001});
  EXPECT_DOUBLE_EQ(e.max, 65504.0);
  EXPECT_DOUBLE_EQ(e.min, -std::ldexp(1.0, -24));
  EXPECT_DOUBLE_EQ(e.mean, (65504.0 + 1023 * std::ldexp(1.0, -24)) / 5);
  EXPECT_DOUBLE_EQ(stats_of<std::uint16_t>("<f2", {0x03FF}).max, 1023 * std::ldexp(1.0, -24));
  EXPECT_DOUBLE_EQ(stats_of<std::uint16_t>("<f2", {0x2E66}).max, 0.0999755859375);
  EXPECT_EQ(stats_of<std::uint16_t>("<f2", {0x7C01, 0xFE00}).nan, 2u);  // signalling, negative
}

TEST(Stats, ComplexUsesMagnitudes) {
  using C = std::complex<float>;
  const std::vector<C> values{{3, 4}, {0, 0}, {NAN, 1}, {INFINITY, 0}, {-6, 8}, {1, NAN}};
  const ArrayStats s = stats_of("<c8", values);
  EXPECT_EQ(s.nan, 2u);
  EXPECT_EQ(s.inf, 1u);
  // magnitudes 5, 0, 10 → mean 5, variance (0 + 25 + 25)/3
  expect_summary(s, 0, 10, 5, std::sqrt(50.0 / 3));

  using Z = std::complex<double>;
  const std::vector<Z> zs{{1e200, 1e200}, {0, -1e200}};
  const auto be = big_endian_bytes_of(zs, 8);
  const ArrayStats z = compute_stats(">c16", be.data(), be.size());
  EXPECT_DOUBLE_EQ(z.max, std::sqrt(2.0) * 1e200);  // hypot, no overflow
  EXPECT_DOUBLE_EQ(z.min, 1e200);
}

TEST(Stats, NonNumericTypesOnlyHash) {
  const std::vector<char32_t> text{U'a', U'b', U'c'};
  for (const char* descr : {"<U3", "<M8[ns]", "|V12", "|O", "<f16", "nonsense", ""}) {
    const ArrayStats s = stats_of(descr, text);
    EXPECT_FALSE(s.numeric) << descr;
    EXPECT_FALSE(s.has_finite) << descr;
    EXPECT_NE(s.xxh64, 0u);
    EXPECT_TRUE(stats_to_json(s)["mean"].is_null());
  }
}

TEST(Stats, AccurateWithLargeOffset) {
  // 1e9 + k for k in 0..n-1: mean 1e9 + (n-1)/2, std sqrt((n^2 - 1) / 12).
  const std::size_t n = 100001;
  std::vector<double> values(n);
  for (std::size_t k = 0; k < n; ++k) values[k] = 1e9 + static_cast<double>(k);
  const ArrayStats s = stats_of("<f8", values);
  EXPECT_DOUBLE_EQ(s.mean, 1e9 + (n - 1) / 2.0);
  EXPECT_NEAR(s.std, std::sqrt((static_cast<double>(n) * n - 1) / 12), 1e-6);
}

TEST(Stats, ManyFloat32MatchesLongDoubleReference) {
  std::vector<float> values(300007);
  std::uint32_t state = 1;
  for (float& v : values) {
    state = state * 1664525u + 1013904223u;
    v = static_cast<float>(state >> 8) / 65536.0f - 128.0f;
  }
  long double sum = 0;
  for (const float v : values) sum += v;
  const long double mean = sum / values.size();
  long double squares = 0;
  for (const float v : values) squares += (v - mean) * (v - mean);
  const ArrayStats s = stats_of("<f4", values);
  EXPECT_NEAR(s.mean, static_cast<double>(mean), 1e-12);
  EXPECT_NEAR(s.std, std::sqrt(static_cast<double>(squares / values.size())), 1e-10);
}

// Float32/float64 go through block kernels that assume finite values and fall back element by
// element when a block's sum is not finite: NaN, Inf and overflow in some blocks, none in others,
// and a tail shorter than a kernel step, must give what a long double reference over the finite
// values gives. Big-endian copies (element by element throughout) must agree.
template <typename T>
void expect_matches_reference(const std::vector<T>& values, const char* little, const char* big) {
  long double sum = 0;
  double lo = kInf, hi = -kInf;
  std::uint64_t nan = 0, inf = 0, finite = 0;
  for (const T v : values) {
    if (std::isnan(v)) {
      ++nan;
    } else if (std::isinf(v)) {
      ++inf;
    } else {
      sum += v, ++finite, lo = std::min<double>(lo, v), hi = std::max<double>(hi, v);
    }
  }
  const long double mean = sum / finite;
  long double squares = 0;
  for (const T v : values) {
    if (std::isfinite(v)) squares += (v - mean) * (v - mean);
  }
  const ArrayStats s = stats_of(little, values);
  EXPECT_EQ(s.nan, nan);
  EXPECT_EQ(s.inf, inf);
  EXPECT_EQ(s.min, lo);
  EXPECT_EQ(s.max, hi);
  EXPECT_NEAR(s.mean, static_cast<double>(mean), 1e-12 * std::fabs(static_cast<double>(mean)));
  EXPECT_NEAR(s.std, std::sqrt(static_cast<double>(squares / finite)), 1e-9 * s.std);
  const auto swapped = big_endian_bytes_of(values, sizeof(T));
  const ArrayStats b = compute_stats(big, swapped.data(), swapped.size());
  EXPECT_EQ(b.min, s.min);
  EXPECT_EQ(b.max, s.max);
  EXPECT_NEAR(b.mean, s.mean, 1e-12 * std::fabs(s.mean));
  EXPECT_NEAR(b.std, s.std, 1e-9 * s.std);
}

TEST(Stats, BlockKernelsFallBackOnNanInfAndOverflow) {
  std::vector<double> doubles(2000 + 5);
  std::uint32_t state = 7;
  for (double& v : doubles) {
    state = state * 1664525u + 1013904223u;
    v = static_cast<double>(state) / 4096.0 - 5e5;
  }
  doubles[300] = kNan;                 // second block
  doubles[700] = kInf;                 // third block: +Inf and -Inf, whose sum is NaN
  doubles[701] = -kInf;
  doubles[2004] = -kInf;               // the tail after the last whole kernel step
  expect_matches_reference(doubles, "<f8", ">f8");

  // A block whose finite values overflow the sum: counted as finite, min/max exact.
  std::vector<double> huge(doubles.begin(), doubles.begin() + 256);
  huge[8] = huge[16] = 1e308;
  const ArrayStats h = stats_of("<f8", huge);
  EXPECT_EQ(h.nan + h.inf, 0u);
  EXPECT_EQ(h.max, 1e308);
  EXPECT_EQ(h.min, *std::min_element(huge.begin(), huge.end()));
  EXPECT_FALSE(std::isfinite(h.std));  // the sums overflow: no finite spread is made up

  std::vector<float> floats(1000 + 3);
  for (float& v : floats) {
    state = state * 1664525u + 1013904223u;
    v = static_cast<float>(state >> 8) / 256.0f - 3e4f;
  }
  floats[0] = -std::numeric_limits<float>::infinity();  // first element of the first block
  floats[511] = std::numeric_limits<float>::quiet_NaN();
  expect_matches_reference(floats, "<f4", ">f4");
}

TEST(Stats, UnalignedBuffer) {
  std::vector<std::byte> storage(1 + 3 * sizeof(double));
  const double values[3] = {1, 2, 6};
  std::memcpy(storage.data() + 1, values, sizeof values);
  expect_summary(compute_stats("<f8", storage.data() + 1, sizeof values), 1, 6, 3,
                 std::sqrt(14.0 / 3));
}

TEST(Stats, JsonShape) {
  ArrayStats s;
  s.numeric = s.has_finite = true;
  s.min = -1;
  s.max = 2.5;
  s.mean = 0.5;
  s.std = 1;
  s.nan = 3;
  s.inf = 4;
  s.xxh64 = 0x1;
  const nlohmann::json expected = {{"min", -1.0}, {"max", 2.5}, {"mean", 0.5}, {"std", 1.0},
                                   {"nan", 3},    {"inf", 4},   {"xxh64", "0000000000000001"}};
  EXPECT_EQ(stats_to_json(s), expected);
  s.numeric = false;
  EXPECT_TRUE(stats_to_json(s)["max"].is_null());
}

TEST(NonFinite, FindsNanAndInfAnywhere) {
  std::vector<float> values(10000, 1.0f);
  EXPECT_FALSE(has_nonfinite("<f4", bytes_of(values).data(), values.size() * 4));
  values[9999] = INFINITY;
  EXPECT_TRUE(has_nonfinite("<f4", bytes_of(values).data(), values.size() * 4));
  values[9999] = 1;
  values[300] = NAN;
  EXPECT_TRUE(has_nonfinite("<f4", bytes_of(values).data(), values.size() * 4));
  // Max finite values have all but one exponent bit set: not flagged.
  EXPECT_FALSE(has_nonfinite("<f8", bytes_of<double>({1.7976931348623157e308, -0.0}).data(), 16));
  EXPECT_FALSE(has_nonfinite("<f4", bytes_of<float>({3.4028235e38f}).data(), 4));
}

// Float16 and float32 are scanned 16 bytes at a time in whole blocks, element by element in the
// tail: a single non-finite value must be found wherever it lies, in either byte order, and the
// largest finite values (all exponent bits but one) never.
TEST(NonFinite, EveryPositionOfLongHalfAndFloatArrays) {
  const std::size_t n = 1000;  // three whole blocks of 256 and a tail of 232
  for (const std::size_t at : {std::size_t{0}, std::size_t{7}, std::size_t{255}, std::size_t{256},
                               std::size_t{767}, std::size_t{768}, n - 1}) {
    std::vector<float> floats(n, -3.4028235e38f);
    floats[at] = (at % 2) ? -INFINITY : NAN;
    EXPECT_TRUE(has_nonfinite("<f4", bytes_of(floats).data(), n * 4)) << at;
    EXPECT_TRUE(has_nonfinite(">f4", big_endian_bytes_of(floats, 4).data(), n * 4)) << at;
    std::vector<std::uint16_t> halves(n, 0xFBFF);  // -65504, the lowest finite half
    halves[at] = (at % 2) ? 0xFC00 : 0x7E00;       // -inf, NaN
    EXPECT_TRUE(has_nonfinite("<f2", bytes_of(halves).data(), n * 2)) << at;
    EXPECT_TRUE(has_nonfinite(">f2", big_endian_bytes_of(halves, 2).data(), n * 2)) << at;
  }
  const std::vector<float> finite(n, 3.4028235e38f);
  EXPECT_FALSE(has_nonfinite("<f4", bytes_of(finite).data(), n * 4));
  EXPECT_FALSE(has_nonfinite(">f4", big_endian_bytes_of(finite, 4).data(), n * 4));
  const std::vector<std::uint16_t> finite_halves(n, 0x7BFF);
  EXPECT_FALSE(has_nonfinite("<f2", bytes_of(finite_halves).data(), n * 2));
  EXPECT_FALSE(has_nonfinite(">f2", big_endian_bytes_of(finite_halves, 2).data(), n * 2));
}

TEST(NonFinite, ByteOrdersAndKinds) {
  const auto be_nan = big_endian_bytes_of<double>({1.0, kNan}, 8);
  EXPECT_TRUE(has_nonfinite(">f8", be_nan.data(), be_nan.size()));
  const auto be_fine = big_endian_bytes_of<double>({1.0, 2.0}, 8);
  EXPECT_FALSE(has_nonfinite(">f8", be_fine.data(), be_fine.size()));
  // 0x807F as little-endian f4 bytes 7F 80 ... is finite, but read big-endian is not: check
  // that '>' really swaps rather than scanning the mask in place.
  const std::vector<std::uint8_t> be_inf{0x7F, 0x80, 0x00, 0x00};
  EXPECT_TRUE(has_nonfinite(">f4", reinterpret_cast<const std::byte*>(be_inf.data()), 4));
  EXPECT_FALSE(has_nonfinite("<f4", reinterpret_cast<const std::byte*>(be_inf.data()), 4));

  EXPECT_TRUE(has_nonfinite("<f2", bytes_of<std::uint16_t>({0x3C00, 0x7C00}).data(), 4));
  EXPECT_FALSE(has_nonfinite("<f2", bytes_of<std::uint16_t>({0x3C00, 0x7BFF}).data(), 4));
  EXPECT_TRUE(
      has_nonfinite("<c8", bytes_of<std::complex<float>>({{1, 2}, {3, NAN}}).data(), 16));
  EXPECT_FALSE(has_nonfinite("<c16", bytes_of<std::complex<double>>({{1, 2}}).data(), 16));
  // Integers, bools, strings and empty buffers never hold NaN/Inf, whatever the bits.
  const std::vector<std::uint32_t> all_ones(4, 0xFFFFFFFFu);
  for (const char* descr : {"<i4", "<u4", "|b1", "<U1", "<M8[ns]", "junk"}) {
    EXPECT_FALSE(has_nonfinite(descr, bytes_of(all_ones).data(), 16)) << descr;
  }
  EXPECT_FALSE(has_nonfinite("<f4", nullptr, 0));
}

}  // namespace
}  // namespace ophook::core

namespace ophook::core {
namespace {

// The AVX2 kernels give the baseline's bits, on finite blocks and on blocks they must refuse; both
// feed the digest every byte they were given, accepted or not.
template <typename T>
void expect_kernel_sets_agree(const float_blocks::Kernels& a, const float_blocks::Kernels& b, std::vector<T> values) {
  const auto* data = reinterpret_cast<const std::byte*>(values.data());
  const std::size_t n = values.size() / float_blocks::kStep * float_blocks::kStep;
  const auto whole_digest = XXH64(data, n * sizeof(T), 7);
  auto moments = [&](const float_blocks::Kernels& k, float_blocks::Extremes& e, float_blocks::ShiftedSums& sums) {
    XXH64_state_t digest;
    XXH64_reset(&digest, 7);
    const bool accepted = std::is_same_v<T, float> ? k.moments_and_digest_f32(data, n, 0.25, e, sums, digest)
                                                   : k.moments_and_digest_f64(data, n, 0.25, e, sums, digest);
    EXPECT_EQ(XXH64_digest(&digest), whole_digest);
    return accepted;
  };
  float_blocks::Extremes ea, eb;
  float_blocks::ShiftedSums sa, sb;
  const bool fa = moments(a, ea, sa);
  EXPECT_EQ(fa, moments(b, eb, sb));
  if (fa) {
    EXPECT_EQ(sa.sum, sb.sum);
    EXPECT_EQ(sa.squares, sb.squares);
    EXPECT_EQ(ea.min, eb.min);
    EXPECT_EQ(ea.max, eb.max);
  }
  // The monitor's update norm: the first half against the second, bit for bit too.
  const std::size_t half = n / 2 / float_blocks::kStep * float_blocks::kStep;
  double qa = -1, qb = -1;
  const std::byte* second = data + half * sizeof(T);
  const bool da = std::is_same_v<T, float> ? a.squared_distance_f32(data, second, half, qa)
                                           : a.squared_distance_f64(data, second, half, qa);
  const bool db = std::is_same_v<T, float> ? b.squared_distance_f32(data, second, half, qb)
                                           : b.squared_distance_f64(data, second, half, qb);
  EXPECT_EQ(da, db);
  EXPECT_EQ(qa, qb);
}

// Statistics and NaN/Inf scans of a kernel set (AVX2, AVX-512) against the baseline's, bit for bit.
void expect_the_baselines_bits(const float_blocks::Kernels* set) {
  std::vector<double> doubles(4096);
  std::vector<float> floats(4096);
  std::uint32_t state = 11;
  for (std::size_t i = 0; i < doubles.size(); ++i) {
    state = state * 1664525u + 1013904223u;
    doubles[i] = static_cast<double>(state) / 3.0e6 - 700.0;
    floats[i] = static_cast<float>(doubles[i]) * 1e-3f;
  }
  expect_kernel_sets_agree(*set, float_blocks::baseline_kernels(), doubles);
  expect_kernel_sets_agree(*set, float_blocks::baseline_kernels(), floats);
  doubles[100] = kNan;
  floats[200] = static_cast<float>(kInf);
  expect_kernel_sets_agree(*set, float_blocks::baseline_kernels(), doubles);
  expect_kernel_sets_agree(*set, float_blocks::baseline_kernels(), floats);

  // The NaN/Inf scan, with one non-finite value at each position of a block and its tail.
  const auto& base = float_blocks::baseline_kernels();
  for (std::size_t at = 0; at < 600; at += 7) {
    std::vector<double> d(600, 1.0);
    std::vector<float> f(600, 1.0f);
    d[at] = kInf;
    f[at] = static_cast<float>(kNan);
    const auto* db = reinterpret_cast<const std::byte*>(d.data());
    const auto* fb = reinterpret_cast<const std::byte*>(f.data());
    for (std::size_t count : {at, at + 1, std::size_t{600}}) {
      EXPECT_EQ(set->any_all_ones_exponent_u64(db, count, 0x7FF0000000000000ull),
                base.any_all_ones_exponent_u64(db, count, 0x7FF0000000000000ull)) << at << " " << count;
      EXPECT_EQ(set->any_all_ones_exponent_u32(fb, count, 0x7F800000u), base.any_all_ones_exponent_u32(fb, count, 0x7F800000u));
      EXPECT_EQ(set->any_all_ones_exponent_u32(fb, count, 0x7F800000u), count > at);
    }
  }
}

TEST(FloatBlocks, Avx2KernelsGiveTheBaselinesBits) {
  const float_blocks::Kernels* avx2 = float_blocks::avx2_kernels();
  if (avx2 == nullptr || !__builtin_cpu_supports("avx2")) GTEST_SKIP() << "no AVX2 build or CPU";
  expect_the_baselines_bits(avx2);
}

TEST(FloatBlocks, Avx512KernelsGiveTheBaselinesBits) {
  const float_blocks::Kernels* avx512 = float_blocks::avx512_kernels();
  if (avx512 == nullptr || !__builtin_cpu_supports("avx512f")) GTEST_SKIP() << "no AVX-512 build or CPU";
  expect_the_baselines_bits(avx512);
}

}  // namespace
}  // namespace ophook::core
