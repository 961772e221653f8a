// What an op's name tells: which ops hand out uninitialized memory.
#include <gtest/gtest.h>

#include "ophook/model/op_kinds.hpp"

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

TEST(OpKinds, KnowsTheOpsThatMayWriteIntoTheirArguments) {
  for (const char* op :
       {"torch.Tensor.add_", "torch.nn.init.normal_", "torch._foreach_add_", "torch.Tensor.__iadd__",
        "torch.Tensor.__setitem__", "aten.add_.Tensor", "aten._foreach_mul_.List", "aten.add.out",
        "aten.max.dim_max", "aten.sum.IntList_out", "torch.ops.aten.copy_.default", "aten.copy_.default"}) {
    EXPECT_TRUE(writes_into_arguments(op, op[0] == 'a' ? Level::TorchDispatch : Level::TorchFunction)) << op;
  }
  EXPECT_TRUE(writes_into_arguments("numpy.copyto", Level::ArrayFunction));
  for (const char* op : {"torch.add", "torch.Tensor.__add__", "torch.Tensor.__getitem__", "aten.add.Tensor",
                         "aten.max.dim", "torch.nn.functional.relu", "aten.mm.default",
                         "torch.ops.aten.empty.memory_format"}) {
    EXPECT_FALSE(writes_into_arguments(op, op[0] == 'a' ? Level::TorchDispatch : Level::TorchFunction)) << op;
  }
  EXPECT_FALSE(writes_into_arguments("numpy.add", Level::Ufunc));        // out= is the call's to say
  EXPECT_FALSE(writes_into_arguments("numpy.add.reduce", Level::UfuncMethod));
}

}  // namespace
}  // namespace ophook::core
