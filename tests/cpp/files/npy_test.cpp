#include "ophook/files/npy.hpp"

#include <gtest/gtest.h>

#include <random>

#include "ophook/error.hpp"

namespace ophook::core {
namespace {

using Shape = std::vector<std::int64_t>;

std::span<const std::byte> as_bytes(const std::string& s) {
  return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}

// "\x93NUMPY" + version 1.0 + uint16 length (little-endian).
std::string prefix_v1(std::size_t length) {
  std::string p("\x93NUMPY\x01\x00", 8);
  p += static_cast<char>(length & 0xFF);
  p += static_cast<char>(length >> 8);
  return p;
}

// A version 1.0 header around an arbitrary dict text (no padding rules applied).
std::string raw_v1(const std::string& dict) { return prefix_v1(dict.size()) + dict; }

// Parses and returns the error message ("" when it parsed).
std::string parse_error(const std::string& bytes) {
  try {
    parse_npy_header(as_bytes(bytes));
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// Expected headers below are what numpy.save writes (numpy.lib.format._write_array_header):
// dict + (21 - digits of the growth axis) spaces, then spaces and '\n' so that
// 10 + len(dict) + padding + 1 is a multiple of 64, with 1..64 padding spaces.
TEST(NpyHeader, StructuredDescrsGiveTheirItemSize) {
  auto parse = [](const std::string& descr) {
    const auto header = encode_npy_header(descr, std::vector<std::int64_t>{3});
    return parse_npy_header(std::as_bytes(std::span(header.data(), header.size())));
  };
  const std::string plain = "[('x', '<i4'), ('y', '<f8', (2,)), ('name', '|S3')]";
  EXPECT_EQ(parse(plain).descr, plain);
  EXPECT_EQ(parse(plain).item_size, 4u + 16u + 3u);
  EXPECT_EQ(parse("[('pos', [('lat', '>f4'), ('lon', '>f4')]), (('T', 't'), '<U2'), ('', '|V3')]").item_size,
            8u + 8u + 3u);
  EXPECT_EQ(parse("[('m', '<f8', (2, 3))]").item_size, 48u);
  EXPECT_EQ(parse("[]").item_size, 0u);
}

TEST(NpyEncode, MatrixFloat32) {
  const Shape shape{2, 3};
  const std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
  ASSERT_EQ(dict.size(), 59u);
  // 59 + 20 growth spaces = 79; 10 + 79 + 1 = 90; pad to 128 → 38 spaces; length 118 = 0x76.
  const std::string expected = prefix_v1(118) + dict + std::string(20 + 38, ' ') + "\n";
  const std::string got = encode_npy_header("<f4", shape);
  EXPECT_EQ(got, expected);
  EXPECT_EQ(got.size(), 128u);
  EXPECT_EQ(got.substr(0, 10), std::string("\x93NUMPY\x01\x00\x76\x00", 10));
}

TEST(NpyEncode, ScalarHasNoGrowthSpaces) {
  const std::string dict = "{'descr': '<f8', 'fortran_order': False, 'shape': (), }";
  const std::string expected = prefix_v1(118) + dict + std::string(128 - 11 - dict.size(), ' ') + "\n";
  EXPECT_EQ(encode_npy_header("<f8", {}), expected);
}

TEST(NpyEncode, VectorIsOneTuple) {
  const Shape shape{5};
  const std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (5,), }";
  const std::string expected = prefix_v1(118) + dict + std::string(128 - 11 - dict.size(), ' ') + "\n";
  EXPECT_EQ(encode_npy_header("<f4", shape), expected);
}

TEST(NpyEncode, FortranOrderGrowsTheLastAxis) {
  const Shape shape{3, 7};
  const std::string dict = "{'descr': '>f8', 'fortran_order': True, 'shape': (3, 7), }";
  const std::string expected = prefix_v1(118) + dict + std::string(128 - 11 - dict.size(), ' ') + "\n";
  EXPECT_EQ(encode_npy_header(">f8", shape, true), expected);
}

TEST(NpyEncode, WideFirstDimensionShortensGrowthSpaces) {
  const Shape shape{12345678901, 0};
  const std::string dict = "{'descr': '|b1', 'fortran_order': False, 'shape': (12345678901, 0), }";
  // 21 - 11 digits = 10 growth spaces.
  const std::string expected = prefix_v1(118) + dict + std::string(128 - 11 - dict.size(), ' ') + "\n";
  EXPECT_EQ(encode_npy_header("|b1", shape), expected);
  EXPECT_NE(encode_npy_header("|b1", shape).find("0), }" + std::string(10, ' ')), std::string::npos);
}

TEST(NpyEncode, AlreadyAlignedGetsAFullBlockOfPadding) {
  // dict 97 chars + 20 growth = 117, so 10 + 117 + 1 = 128 is aligned: numpy still adds 64.
  const Shape shape(14, 1);
  const std::string got = encode_npy_header("<U100", shape);
  EXPECT_EQ(got.size(), 192u);
  EXPECT_EQ(got.substr(8, 2), std::string("\xb6\x00", 2));
  EXPECT_EQ(got.substr(got.size() - 66), " " + std::string(64, ' ') + "\n");
}

TEST(NpyEncode, AlwaysAlignedAndNewlineTerminated) {
  for (std::size_t ndim = 0; ndim <= 64; ++ndim) {
    Shape shape;
    // Vary the growth axis' digit count; keep the element count addressable.
    std::int64_t first = 1;
    for (std::size_t d = 0; d < ndim % 12; ++d) first *= 10;
    for (std::size_t i = 0; i < ndim; ++i) shape.push_back(i == 0 ? first : i == 1 ? 977 : 1);
    for (const char* descr : {"<f4", "|b1", "<M8[ns]", "<c16", "|S123"}) {
      const std::string h = encode_npy_header(descr, shape, ndim % 2 == 1);
      ASSERT_EQ(h.size() % 64, 0u) << ndim << descr;
      ASSERT_EQ(h.back(), '\n');
      const NpyHeader parsed = parse_npy_header(as_bytes(h));
      EXPECT_EQ(parsed.shape, shape);
      EXPECT_EQ(parsed.descr, descr);
      EXPECT_EQ(parsed.fortran_order, ndim % 2 == 1);
      EXPECT_EQ(parsed.header_bytes, h.size());
    }
  }
}

TEST(NpyEncode, HugeHeaderUsesVersion2) {
  const Shape shape(6000, 1234567890);
  const std::string h = encode_npy_header("<f4", shape);
  EXPECT_EQ(h[6], '\x02');
  EXPECT_EQ(h[7], '\x00');
  EXPECT_EQ(h.size() % 64, 0u);
  const std::uint32_t length = static_cast<std::uint8_t>(h[8]) |
                               static_cast<std::uint8_t>(h[9]) << 8 |
                               static_cast<std::uint8_t>(h[10]) << 16 |
                               static_cast<std::uint32_t>(static_cast<std::uint8_t>(h[11])) << 24;
  EXPECT_EQ(length + 12, h.size());
  // numpy.load would refuse a dict that long without allow_pickle; so do we.
  EXPECT_NE(parse_error(h).find("exceeds"), std::string::npos);
}

TEST(NpyParse, RoundTripFields) {
  const Shape shape{4, 0, 2};
  const NpyHeader h = parse_npy_header(as_bytes(encode_npy_header("<U3", shape)));
  EXPECT_EQ(h.descr, "<U3");
  EXPECT_EQ(h.item_size, 12u);
  EXPECT_EQ(h.header_bytes, 128u);
  EXPECT_EQ(h.data_bytes(), 0u);
  const Shape shape2{3, 5};
  EXPECT_EQ(parse_npy_header(as_bytes(encode_npy_header("<c8", shape2))).data_bytes(), 120u);
  EXPECT_EQ(parse_npy_header(as_bytes(encode_npy_header("<f8", {}))).data_bytes(), 8u);
}

TEST(NpyParse, Versions2And3AndLooseSpelling) {
  const std::string dict = "{\"shape\": (7,) ,\"descr\":\"f4\",'fortran_order':True}\n";
  for (const char version : {'\x02', '\x03'}) {
    std::string bytes("\x93NUMPY", 6);
    bytes += version;
    bytes += '\0';
    const std::uint32_t n = static_cast<std::uint32_t>(dict.size());
    for (int i = 0; i < 4; ++i) bytes += static_cast<char>((n >> (8 * i)) & 0xFF);
    bytes += dict;
    bytes += "DATA";  // the data that follows is not part of the header
    const NpyHeader h = parse_npy_header(as_bytes(bytes));
    EXPECT_EQ(h.descr, "<f4");  // canonicalised like dtype.str
    EXPECT_TRUE(h.fortran_order);
    EXPECT_EQ(h.shape, Shape{7});
    EXPECT_EQ(h.header_bytes, 12 + dict.size());
  }
}

TEST(NpyParse, DescrCanonicalisedLikeDtypeStr) {
  const std::pair<const char*, const char*> cases[] = {
      {"=f4", "<f4"}, {"|f8", "<f8"}, {"<i1", "|i1"}, {">u1", "|u1"}, {">b1", "|b1"},
      {"|U3", "<U3"}, {">S3", "|S3"}, {"M8", "<M8"}, {">m8[10ms]", ">m8[10ms]"},
      {"<V16", "|V16"}, {">c16", ">c16"}, {"<f16", "<f16"}};
  for (const auto& [in, out] : cases) {
    const std::string dict = std::string("{'descr': '") + in +
                             "', 'fortran_order': False, 'shape': (1,), }\n";
    EXPECT_EQ(parse_npy_header(as_bytes(raw_v1(dict))).descr, out) << in;
  }
}

TEST(NpyParse, RejectionsSayWhatIsWrong) {
  const std::string good_tail = "'fortran_order': False, 'shape': (2,), }\n";
  auto with_descr = [&](const std::string& descr) {
    return raw_v1("{'descr': " + descr + ", " + good_tail);
  };
  const std::pair<std::string, const char*> cases[] = {
      {"", "truncated"},
      {std::string("\x93NUM", 4), "truncated"},
      {std::string("\x93NUMPX\x01\x00\x10\x00", 10), "bad magic"},
      {std::string("\x93NUMPY\x04\x00\x10\x00", 10), "version 4.0"},
      {std::string("\x93NUMPY\x01\x01\x10\x00", 10), "version 1.1"},
      {std::string("\x93NUMPY\x01\x00\x10", 9), "length field"},
      {prefix_v1(100) + "{'descr': '<f4'", "only 15 follow"},
      {prefix_v1(0x3000) + std::string(0x3000, ' '), "exceeds"},
      {raw_v1("[1, 2]\n"), "expected '{'"},
      {raw_v1("{'descr': '<f4', 'shape': (2,), }"), "lacks 'fortran_order'"},
      {raw_v1("{'descr': '<f4', 'fortran_order': False}"), "lacks 'shape'"},
      {raw_v1("{'fortran_order': False, 'shape': (2,)}"), "lacks 'descr'"},
      {raw_v1("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}"), "'x'"},
      {with_descr("[('a', '<f4'"), "integer"},
      {with_descr("[('a', '<f4', (2,), 3)]"), "expected ')'"},
      {with_descr("[(1, '<f4')]"), "a field name"},
      {with_descr("[('a', '<f4', (4611686018427387904, 8))]"), "item size overflows"},
      {with_descr([] {
         std::string deep;
         for (int i = 0; i < 40; ++i) deep += "[('a', ";
         return deep;
       }()),
       "nested more than 32"},
      {with_descr("('<f4', (2,))"), "sub-array"},
      {with_descr("'|O'"), "pickle"},
      {with_descr("'<f3'"), "item size"},
      {with_descr("'<i16'"), "item size"},
      {with_descr("'|S0'"), "item size"},
      {with_descr("'<f'"), "item size"},
      {with_descr("'<x4'"), "unsupported dtype"},
      {with_descr("'<M8[lightyears]'"), "datetime unit"},
      {with_descr("'<f4 '"), "trailing"},
      {with_descr("''"), "no type code"},
      {with_descr("4"), "expected a string"},
      {with_descr("'<f4"), "expected '}'"},
      {with_descr("'<f4\\n'"), "unsupported character"},
      {raw_v1("{'descr': '<f4', 'fortran_order': 0, 'shape': (2,), }"), "True or False"},
      {raw_v1("{'descr': '<f4', 'fortran_order': False, 'shape': [2], }"), "list"},
      {raw_v1("{'descr': '<f4', 'fortran_order': False, 'shape': (2), }"), "not a tuple"},
      {raw_v1("{'descr': '<f4', 'fortran_order': False, 'shape': (-2,), }"), "negative"},
      {raw_v1("{'descr': '<f4', 'fortran_order': False, 'shape': (2.5,), }"), "expected ','"},
      {raw_v1("{'descr': '<f4', 'fortran_order': False, 'shape': ('a',), }"), "integer"},
      {raw_v1("{'descr': '<f4', 'fortran_order': False, 'shape': (2 3), }"), "expected ','"},
      {raw_v1("{'descr': '<f4', 'fortran_order': False, 'shape': (2,,), }"), "integer"},
      {raw_v1("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }"),
       "too large"},
      {raw_v1("{'descr': '<f8', 'fortran_order': False, 'shape': (4611686018427387904, 8), }"),
       "overflows"},
      {raw_v1("{'descr': '<f8', 'fortran_order': False, 'shape': (2305843009213693952,), }"),
       "more bytes"},
      {raw_v1("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), } x"), "trailing"},
      {raw_v1("{'descr': '<f4', 'fortran_order': False, 'shape': (2,) 'a': 1}"), "expected '}'"},
      {raw_v1("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), "), "header ends"},
      {raw_v1("{'descr"), "unterminated"},
  };
  for (const auto& [bytes, needle] : cases) {
    const std::string message = parse_error(bytes);
    EXPECT_NE(message.find(needle), std::string::npos)
        << "expected '" << needle << "' in: " << message;
    EXPECT_EQ(message.rfind("invalid .npy header: ", 0), 0u) << message;
  }
  // 65 dimensions: more than NumPy allows.
  std::string many = "{'descr': '<f4', 'fortran_order': False, 'shape': (";
  for (int i = 0; i < 65; ++i) many += "1, ";
  many += "), }";
  EXPECT_NE(parse_error(raw_v1(many)).find("64 dimensions"), std::string::npos);
}

TEST(NpyParse, ZeroSizedAxisDoesNotHideOverflow) {
  // numpy checks the product of the non-zero axes (times the item size) even when one axis is 0.
  EXPECT_NE(parse_error(raw_v1(
                "{'descr': '<f8', 'fortran_order': False, 'shape': (0, 4611686018427387904), }")),
            "");
  const NpyHeader h = parse_npy_header(
      as_bytes(raw_v1("{'descr': '<f8', 'fortran_order': False, 'shape': (0, 1000), }")));
  EXPECT_EQ(h.data_bytes(), 0u);
}

TEST(NpyParse, EveryTruncationIsRejectedCleanly) {
  const Shape shape{2, 3};
  const std::string full = encode_npy_header("<f4", shape);
  for (std::size_t n = 0; n < full.size(); ++n) {
    // An exact-size copy so that a read past the end is caught by sanitizers.
    const std::vector<char> copy(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(n));
    const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(copy.data()), n);
    EXPECT_THROW(parse_npy_header(bytes), Error) << n;
  }
}

TEST(NpyParse, RandomGarbleNeverCrashes) {
  const Shape shape{3, 1, 4};
  const std::string base = encode_npy_header("<i8", shape);
  std::mt19937 rng(12345);
  static constexpr char kAlphabet[] = "{}()[],:'\" \n0123456789-TrueFalsdcps<>|=fiuUSMm8\x93\x00\xff";
  const std::string alphabet(kAlphabet, sizeof kAlphabet - 1);  // keeps the NUL
  int parsed = 0;
  for (int round = 0; round < 20000; ++round) {
    std::string bytes = base;
    const int edits = 1 + static_cast<int>(rng() % 6);
    for (int e = 0; e < edits; ++e) {
      const std::size_t at = rng() % bytes.size();
      switch (rng() % 4) {
        case 0: bytes[at] = alphabet[rng() % alphabet.size()]; break;
        case 1: bytes[at] = static_cast<char>(rng()); break;
        case 2: bytes.erase(at, 1 + rng() % 8); break;
        default: bytes.resize(at + 1); break;
      }
      if (bytes.empty()) bytes = "x";
    }
    const std::vector<char> copy(bytes.begin(), bytes.end());
    try {
      const NpyHeader h = parse_npy_header(
          {reinterpret_cast<const std::byte*>(copy.data()), copy.size()});
      EXPECT_LE(h.header_bytes, copy.size());
      EXPECT_GT(h.item_size, 0u);
      ++parsed;
    } catch (const Error&) {
    }
  }
  EXPECT_GT(parsed, 0);  // some edits (spaces, digits) keep the header valid
}

TEST(Npy, ItemSizes) {
  EXPECT_EQ(npy_item_size("<U3"), 12u);
  EXPECT_EQ(npy_item_size("|S5"), 5u);
  EXPECT_EQ(npy_item_size("<M8[ns]"), 8u);
  EXPECT_EQ(npy_item_size("<m8"), 8u);
  EXPECT_EQ(npy_item_size("|b1"), 1u);
  EXPECT_EQ(npy_item_size("<c16"), 16u);
  EXPECT_EQ(npy_item_size("<f2"), 2u);
  EXPECT_EQ(npy_item_size(">i8"), 8u);
  EXPECT_EQ(npy_item_size("|V7"), 7u);
  EXPECT_EQ(npy_item_size("f4"), 4u);
  for (const char* unknown : {"", "|O", "<f3", "<x4", "<U", "[('a','<f4')]", "<M8[zz]", "<f4x"}) {
    EXPECT_EQ(npy_item_size(unknown), 0u) << unknown;
  }
}

TEST(Npy, DataBytesSaturatesInsteadOfWrapping) {
  NpyHeader h;
  h.item_size = 8;
  h.shape = {std::int64_t{1} << 62, 4};
  EXPECT_EQ(h.data_bytes(), std::numeric_limits<std::size_t>::max());
  h.shape = {};
  EXPECT_EQ(h.data_bytes(), 8u);
  h.shape = {3, -1};
  EXPECT_EQ(h.data_bytes(), 0u);
}

}  // namespace
}  // namespace ophook::core
