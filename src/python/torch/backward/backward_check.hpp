#pragma once
#include <utility>
#include <vector>

#include "python_common.hpp"

namespace ophook::py::backward_check {

/// OPHOOK_NAN with the torch_function level and not torch_dispatch: the backward pass is one
/// `torch.Tensor.backward` record, yet that is where exploding gradients are born. Around each
/// backward entry the function level sees (Tensor.backward, autograd.backward, autograd.grad), a
/// Scope hooks every node of the autograd graph below the entry's roots: a post hook (C++, one
/// per node type and module: node_modules names the module whose forward made the node, and
/// OPHOOK_MODULES leaves the others unhooked) checks what the node computed like a recorded call
/// (RecordUse::CheckOnly) — its inputs the gradients it received, its outputs those it returned —
/// and records it only when it made a NaN/Inf from finite inputs, as op `autograd.<node>`
/// (`autograd.SqrtBackward0`).
/// Per node rather than per aten op and with no dispatch mode: a dispatch mode's Python call per
/// op cost about as much as the whole `trace` level, and changed what some ops compute.
///
/// Not hooked: nodes that only move or copy their gradient's elements (views, transposes,
/// slices, cat, split…: no NaN/Inf from finite values), AccumulateGrad (it returns nothing), and
/// a torch.compile'd region's backward (CompiledFunctionBackward: under OPHOOK_COMPILE=ignore
/// nothing inside it is recorded, under record its kernels are).
void enable(bool on);
bool enabled() noexcept;

/// The hooks of one backward entry, removed when it returns (an exception pending then stays
/// so). Nodes already hooked by an entry still running on this thread (a backward inside a
/// backward: reentrant checkpointing) are not hooked twice. `args`/`kwargs` are the entry's
/// call: its first argument (or `tensors=` / `outputs=`) holds the roots, a tensor, a
/// GradientEdge or a sequence of them. GIL required.
class Scope {
 public:
  Scope(PyObject* args, PyObject* kwargs);
  ~Scope();
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;

 private:
  void hook_graph(std::vector<PyRef>& pending, bool name_modules);
  std::vector<std::pair<PyRef, PyRef>> hooked_;  // (node, its hook's handle)
};

}  // namespace ophook::py::backward_check
