// Recognising uninitialized memory (torch.empty & co.) so that `compare` does not report it.
#include <gtest/gtest.h>

#include "compare/values/uninitialized_memory.hpp"

namespace ophook::cli {
namespace {

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
