// Recognising uninitialized memory (torch.empty & co.) so that `compare` does not report it.
#include <gtest/gtest.h>

#include "uninitialized_memory.hpp"

namespace ophook::cli {
namespace {

TEST(CliUninitializedMemory, KnowsTheAllocatingOps) {
  for (const char* op :
       {"torch.empty", "torch.empty_like", "torch.empty_strided", "torch.Tensor.new_empty",
        "aten.empty.memory_format", "aten.empty_strided.default", "aten.new_empty.default",
        "numpy.empty_like"}) {
    EXPECT_TRUE(returns_uninitialized_memory(op)) << op;
  }
  for (const char* op : {"torch.zeros", "aten.zeros_like.default", "numpy.add",
                         "torch.Tensor.is_empty_like_thing", "aten.emptyish.default"}) {
    EXPECT_FALSE(returns_uninitialized_memory(op)) << op;
  }
}

ArraySpec array(const std::string& path, std::uint64_t digest) {
  ArraySpec a;
  a.path = path;
  a.stats = StatsSpec{};
  a.stats->xxh64 = digest;
  a.stats->has_xxh64 = true;
  return a;
}

TEST(CliUninitializedMemory, FollowsTheBytesByDigest) {
  TraceRecord empty;
  empty.op = "torch.empty";
  empty.arrays = {array("outputs[0]", 0x1111)};
  TraceRecord init;
  init.op = "torch.nn.init.uniform_";
  init.arrays = {array("args[0]", 0x1111), array("outputs[0]", 0x2222)};
  const UninitializedMemory memory({empty, init});
  EXPECT_TRUE(memory.holds(empty.arrays[0]));
  EXPECT_TRUE(memory.holds(init.arrays[0]));   // the garbage, passed to the initialiser
  EXPECT_FALSE(memory.holds(init.arrays[1]));  // what the initialiser wrote
  ArraySpec no_stats;
  EXPECT_FALSE(memory.holds(no_stats));
}

}  // namespace
}  // namespace ophook::cli
