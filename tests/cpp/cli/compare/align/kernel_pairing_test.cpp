// Pairing an OPHOOK_COMPILE=record run's kernels with an eager run's calls (`ophook compare`).
#include <gtest/gtest.h>

#include <string>
#include <utility>

#include "compare/align/kernel_pairing.hpp"
#include "compare/align/record_alignment.hpp"

namespace ophook::cli {
namespace {

ArraySpec output(std::string path, std::vector<std::int64_t> shape, double mean, double std) {
  ArraySpec a;
  a.path = std::move(path);
  a.shape = std::move(shape);
  a.dtype = "float32";
  a.stats = StatsSpec{};
  a.stats->mean = mean;
  a.stats->std = std;
  return a;
}

TraceRecord call(std::string op, std::string level, std::string source, std::vector<ArraySpec> outputs) {
  TraceRecord r;
  r.op = std::move(op);
  r.level = std::move(level);
  r.source = std::move(source);
  r.phase = "forward";
  r.arrays = std::move(outputs);
  return r;
}

void number(std::vector<TraceRecord>& records) {
  for (std::size_t i = 0; i < records.size(); ++i) records[i].seq = static_cast<std::int64_t>(i);
}

/// The eager run of `h = linear(x)` (line 9), `y = gelu(layer_norm(h))` (line 10), then `sum`
/// (line 12, outside the compiled code), and the compiled run of the same: an addmm kernel, one
/// kernel fusing layer_norm and gelu (its outputs: the mean and the result), one backward kernel,
/// then the same `sum`.
ProcessComparison eager_and_compiled() {
  ProcessComparison p;
  p.base = {call("torch.nn.functional.linear", "torch_function", "m.py:9:forward", {output("outputs[0]", {8, 16}, 0.1, 1)}),
            call("torch.nn.functional.layer_norm", "torch_function", "m.py:10:forward",
                 {output("outputs[0]", {8, 16}, 0.0, 1.0)}),
            call("torch.nn.functional.gelu", "torch_function", "m.py:10:forward", {output("outputs[0]", {8, 16}, 0.3, 0.6)}),
            call("torch.Tensor.sum", "torch_function", "m.py:12:<module>", {output("outputs[0]", {}, 38, 0)})};
  TraceRecord addmm = call("inductor.0_forward.extern_kernels.addmm", "compiled", "m.py:9:forward",
                           {output("outputs[0]", {8, 16}, 0.1, 1)});
  TraceRecord fused = call("inductor.0_forward.cpp_fused_gelu_native_layer_norm_0", "compiled", "m.py:10:forward",
                           {output("outputs[0]", {8, 1}, 0.1, 0.2), output("outputs[1]", {8, 16}, 0.3001, 0.6)});
  fused.sources = {"m.py:10:forward"};
  TraceRecord backward = call("inductor.0_backward.extern_kernels.mm", "compiled", "m.py:9:forward",
                              {output("outputs[0]", {16, 16}, 0, 1)});
  backward.phase = "backward";
  p.other = {addmm, fused, call("torch.Tensor.sum", "torch_function", "m.py:12:<module>", {output("outputs[0]", {}, 38, 0)}),
             backward};
  number(p.base);
  number(p.other);
  p.steps = align_records(p.base, p.other).steps;
  return p;
}

TEST(CliKernelPairing, EachKernelPairsWithTheCallItsValueEndsIn) {
  ProcessComparison p = eager_and_compiled();
  pair_kernels(p);
  ASSERT_EQ(p.kernel_pairs.size(), 2u);
  EXPECT_FALSE(p.kernels_in_base);
  // linear ↔ addmm; gelu (not layer_norm: its statistics are further) ↔ the fused kernel's result
  EXPECT_EQ(p.base[p.kernel_pairs[0].eager_copy].op, "torch.nn.functional.linear");
  EXPECT_EQ(p.other[p.kernel_pairs[0].kernel_copy].op, "inductor.0_forward.extern_kernels.addmm");
  EXPECT_EQ(p.base[p.kernel_pairs[1].eager_copy].op, "torch.nn.functional.gelu");
  EXPECT_EQ(p.kernel_pairs[1].kernel_record, 1u);
  EXPECT_EQ(p.kernel_pairs[1].eager_output, "outputs[0]");
  // each copy holds the one output the pair compares
  const TraceRecord& kernel_copy = p.other[p.kernel_pairs[1].kernel_copy];
  ASSERT_EQ(kernel_copy.arrays.size(), 1u);
  EXPECT_EQ(kernel_copy.arrays[0].shape, (std::vector<std::int64_t>{8, 16}));
  EXPECT_EQ(kernel_copy.arrays[0].path, "outputs[0]");
  EXPECT_EQ(p.fused_calls, 1u);                  // layer_norm, computed inside the fused kernel
  EXPECT_EQ(p.kernels_without_counterpart, 1u);  // the backward kernel: no backward calls in BASE
  EXPECT_EQ(p.base_calls(), 4u);
  EXPECT_EQ(p.new_calls(), 4u);
  // steps: the two kernel pairs, then sum ↔ sum; nothing one-sided
  ASSERT_EQ(p.steps.size(), 3u);
  for (const AlignStep& s : p.steps) EXPECT_TRUE(s.paired());
  EXPECT_EQ(p.base[p.steps[2].base].op, "torch.Tensor.sum");
}

TEST(CliKernelPairing, AKernelEndsInTheLatestCallItsOutputsAgreeWith) {
  // A transformer block's epilogue: a view (its own line, other values), a dropout of p=0 (a line
  // no kernel names), the residual add and the next layer norm, fused into one kernel that outputs
  // the sum and the norm; then the next layer's norm, equal in statistics.
  ProcessComparison p;
  p.base = {call("torch.Tensor.view", "torch_function", "u.py:123:forward", {output("outputs[0]", {2, 8}, 0.2, 0.004)}),
            call("torch.nn.functional.dropout", "torch_function", "m.py:359:forward",
                 {output("outputs[0]", {2, 8}, 0.2, 0.004)}),
            call("torch.Tensor.add", "torch_function", "m.py:424:forward", {output("outputs[0]", {2, 8}, -0.4, 0.028)}),
            call("torch.nn.functional.layer_norm", "torch_function", "m.py:448:forward",
                 {output("outputs[0]", {2, 8}, 0.0, 0.9935)}),
            call("torch.nn.functional.layer_norm", "torch_function", "m.py:448:forward",
                 {output("outputs[0]", {2, 8}, 0.0, 0.9935)})};
  TraceRecord fused = call("inductor.0_forward.cpp_fused_add_native_layer_norm_2", "compiled", "m.py:424:forward",
                           {output("outputs[0]", {2, 8}, -0.4, 0.028), output("outputs[1]", {2, 8}, 0.0, 0.9935)});
  fused.sources = {"m.py:424:forward", "u.py:123:forward", "m.py:448:forward"};
  TraceRecord next = call("inductor.0_forward.cpp_fused_native_layer_norm_3", "compiled", "m.py:448:forward",
                          {output("outputs[0]", {2, 8}, 0.0, 0.9935)});
  p.other = {fused, next};
  number(p.base);
  number(p.other);
  p.steps = align_records(p.base, p.other).steps;
  pair_kernels(p);
  ASSERT_EQ(p.kernel_pairs.size(), 2u);
  EXPECT_EQ(p.kernel_pairs[0].eager_record, 3u);  // the first layer norm, not the view, not the second norm
  EXPECT_EQ(p.kernel_pairs[1].eager_record, 4u);
  EXPECT_EQ(p.fused_calls, 3u);  // view, add, and the dropout between them
  EXPECT_EQ(p.steps.size(), 2u);
}

TEST(CliKernelPairing, KernelsOnBothSidesOrNeitherAreLeftToTheAlignment) {
  ProcessComparison p = eager_and_compiled();
  p.base = p.other;
  p.steps = align_records(p.base, p.other).steps;
  const auto steps = p.steps.size();
  pair_kernels(p);
  EXPECT_TRUE(p.kernel_pairs.empty());
  EXPECT_EQ(p.steps.size(), steps);
}

TEST(CliKernelPairing, AKernelPairDiffersFromTheFirstDifferenceOn) {
  ProcessComparison p = eager_and_compiled();
  pair_kernels(p);
  p.pairs.clear();
  for (const AlignStep& s : p.steps) {
    PairResult r;
    r.base = static_cast<std::size_t>(s.base);
    r.other = static_cast<std::size_t>(s.other);
    p.pairs.push_back(r);
  }
  p.pairs[0].differs = true;  // the addmm kernel differs: then the fused kernel's inputs did too
  p.pairs[1].differs = true;
  judge_kernel_pair_inputs(p);
  EXPECT_TRUE(p.pairs[0].origin());
  EXPECT_FALSE(p.pairs[1].origin());
  EXPECT_EQ(p.pairs[1].inputs, InputState::Differ);
}

}  // namespace
}  // namespace ophook::cli
