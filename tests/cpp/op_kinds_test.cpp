// What an op's name tells: which ops hand out uninitialized memory.
#include <gtest/gtest.h>

#include "ophook/op_kinds.hpp"

namespace ophook::core {
namespace {

TEST(OpKinds, KnowsTheOpsReturningUninitializedMemory) {
  for (const char* op :
       {"torch.empty", "torch.empty_like", "torch.empty_strided", "torch.Tensor.new_empty",
        "aten.empty.memory_format", "aten.empty_strided.default", "aten.new_empty.default",
        "torch.ops.aten.empty.memory_format", "torch.ops.aten.empty_like.default",
        "torch.ops.aten.empty", "torch.empty_permuted", "torch.Tensor.new_empty_strided",
        "numpy.empty_like"}) {
    EXPECT_TRUE(returns_uninitialized_memory(op)) << op;
  }
  for (const char* op : {"torch.zeros", "aten.zeros_like.default", "numpy.add",
                         "torch.Tensor.is_empty_like_thing", "aten.emptyish.default",
                         "torch.ops.aten.zeros.default", "torch.ops.aten.add.Tensor"}) {
    EXPECT_FALSE(returns_uninitialized_memory(op)) << op;
  }
}

}  // namespace
}  // namespace ophook::core
