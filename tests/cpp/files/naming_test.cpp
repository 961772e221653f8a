#include "ophook/files/naming.hpp"

#include <gtest/gtest.h>

namespace ophook::core {
namespace {

TEST(Naming, SanitizeKeepsContractCharacters) {
  EXPECT_EQ(sanitize_op_name("aten.add.Tensor"), "aten.add.Tensor");
  EXPECT_EQ(sanitize_op_name("numpy.add.reduce"), "numpy.add.reduce");
  EXPECT_EQ(sanitize_op_name("torch.nn.functional.linear"), "torch.nn.functional.linear");
  EXPECT_EQ(sanitize_op_name("a-b_c.D9"), "a-b_c.D9");
}

TEST(Naming, SanitizeReplacesEverythingElse) {
  EXPECT_EQ(sanitize_op_name("../x"), ".._x");
  EXPECT_EQ(sanitize_op_name("torch.Tensor.__getitem__"), "torch.Tensor.__getitem__");
  EXPECT_EQ(sanitize_op_name("a b/c\\d:e*f?g<h>i|j\"k"), "a_b_c_d_e_f_g_h_i_j_k");
  EXPECT_EQ(sanitize_op_name(std::string("a\0b\n", 4)), "a_b_");
  EXPECT_EQ(sanitize_op_name("<lambda>"), "_lambda_");
}

TEST(Naming, SanitizeCountsUtf8CharactersNotBytes) {
  // "é" is two bytes, "€" three, "𝛼" four: each is one character, so one '_'.
  EXPECT_EQ(sanitize_op_name("caf\xC3\xA9"), "caf_");
  EXPECT_EQ(sanitize_op_name("\xE2\x82\xAC.x"), "_.x");
  EXPECT_EQ(sanitize_op_name("\xF0\x9D\x9B\xBC\xF0\x9D\x9B\xBC"), "__");
}

TEST(Naming, SanitizeNeverYieldsDotNames) {
  EXPECT_EQ(sanitize_op_name("."), "_");
  EXPECT_EQ(sanitize_op_name(".."), "__");
  EXPECT_EQ(sanitize_op_name("..."), "...");  // a plain name, not a directory reference
  EXPECT_EQ(sanitize_op_name(""), "");
}

TEST(Naming, LongNamesAreCutWithAHashSoFileNamesFit) {
  const std::string long_a = "torch.ops." + std::string(300, 'a');
  const std::string long_b = "torch.ops." + std::string(299, 'a') + "b";
  const auto a = sanitize_op_name(long_a), b = sanitize_op_name(long_b);
  EXPECT_EQ(a.size(), 200u);
  EXPECT_EQ(a.substr(0, 183), long_a.substr(0, 183));
  EXPECT_EQ(a[183], '-');
  EXPECT_NE(a, b);
  EXPECT_EQ(sanitize_op_name(long_a), a);  // stable
  EXPECT_LE(output_file_name(a, 99999, ~0ull).size(), 255u);
  EXPECT_EQ(sanitize_op_name(std::string(200, 'x')), std::string(200, 'x'));  // at the limit: kept
}

TEST(Naming, FileNames) {
  EXPECT_EQ(input_file_name("numpy.add", 1, 0), "op_numpy.add_input1_000000.npy");
  EXPECT_EQ(input_file_name("numpy.add", 12, 42), "op_numpy.add_input12_000042.npy");
  EXPECT_EQ(output_file_name("aten.mm.default", 0, 7), "op_aten.mm.default_output_000007.npy");
  EXPECT_EQ(output_file_name("torch.split", 2, 999999), "op_torch.split_output2_999999.npy");
  EXPECT_EQ(output_file_name("x", 1, 1234567), "op_x_output1_1234567.npy");
  EXPECT_EQ(input_file_name("x", 1, ~0ull), "op_x_input1_18446744073709551615.npy");
}

}  // namespace
}  // namespace ophook::core
