#include "process/op_filters.hpp"

#include <gtest/gtest.h>

namespace ophook::core {
namespace {

Config with(std::string include, std::string exclude, std::string dump_include = {}) {
  Config config;
  config.include = std::move(include);
  config.exclude = std::move(exclude);
  config.dump_include = std::move(dump_include);
  return config;
}

TEST(OpFilters, EveryOpWithoutPatternsButMetadataQueriesUnlessAccessorsAreAsked) {
  const OpFilters all(Config{});
  EXPECT_TRUE(all.records("numpy.add", ""));
  EXPECT_TRUE(all.records("aten.mm.default", ""));
  EXPECT_FALSE(all.records("torch.Tensor.dim", ""));
  Config accessors;
  accessors.accessors = true;
  EXPECT_TRUE(OpFilters(accessors).records("torch.Tensor.dim", ""));
}

TEST(OpFilters, IncludeIsSearchedAndExcludeWins) {
  const OpFilters filters(with("matmul|linear", "aten"));
  EXPECT_TRUE(filters.records("torch.matmul", ""));
  EXPECT_TRUE(filters.records("torch.nn.functional.linear", ""));
  EXPECT_FALSE(filters.records("torch.add", ""));
  EXPECT_FALSE(filters.records("aten.matmul.default", ""));  // included, then excluded
}

TEST(OpFilters, ACompiledKernelMatchesOnTheAtenOpsItComputes) {
  const std::string annotation = R"("computes":["aten.addmm","aten.relu"])";
  EXPECT_TRUE(OpFilters(with("addmm", "")).records("triton_poi_fused_0", annotation));
  EXPECT_FALSE(OpFilters(with("softmax", "")).records("triton_poi_fused_0", annotation));
  EXPECT_FALSE(OpFilters(with("", "relu")).records("triton_poi_fused_0", annotation));
}

TEST(OpFilters, DumpIncludeOnlyInDumpMode) {
  Config dump = with("", "", "mm");
  EXPECT_TRUE(OpFilters(dump).dumps("aten.mm.default", ""));
  EXPECT_FALSE(OpFilters(dump).dumps("aten.add.Tensor", ""));
  EXPECT_TRUE(OpFilters(Config{}).dumps("aten.add.Tensor", ""));
  Config stats = dump;
  stats.mode = Mode::Stats;
  EXPECT_FALSE(OpFilters(stats).dumps("aten.mm.default", ""));
}

}  // namespace
}  // namespace ophook::core
