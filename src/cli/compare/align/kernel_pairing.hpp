#pragma once
#include "compare/result.hpp"

namespace ophook::cli {

/// When one run of a process pair recorded compiled kernels (level `compiled`,
/// OPHOOK_COMPILE=record) and the other ran the same code eagerly, pairs each kernel with the
/// eager call whose value it ends in, so that `compare` names the first kernel that differs.
/// Among the calls the alignment left one-sided, a kernel takes, in order, the calls made on its
/// lines (its `sources`, else its `source`) in its step and phase, up to the first call on
/// another line after a candidate: the candidate is a call with an output of the same shape and
/// dtype as one of the kernel's, the one whose statistics are closest (the last one without
/// statistics). The pair compares those two outputs only (a step on copies of both records
/// appended to the process's record lists); the calls before it on the kernel's lines were fused
/// into it. Eager calls left on kernels' lines count as fused, kernels left alone as without
/// counterpart (ProcessComparison), neither as unmatched. Runs between alignment and comparison;
/// does nothing unless exactly one side has kernels.
void pair_kernels(ProcessComparison& process);

/// After the pairs are compared: a kernel's pair compares one output, so its inputs are judged by
/// what came before it: they match while no earlier pair of the process differs (the first
/// differing kernel is then an origin), else they differ.
void judge_kernel_pair_inputs(ProcessComparison& process);

}  // namespace ophook::cli
