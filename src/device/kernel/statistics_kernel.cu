// The device statistics kernel (docs/devices.md, "Statistics on a CUDA device"): one launch reads
// all of a call's CUDA tensors once. Block b works on the job whose blocks it falls in; its
// threads stride over the job's fingerprint groups (ophook/statistics_kernel.hpp holds the
// arithmetic, shared with the host); the block's merged Partial goes to the partials arena, and
// the last block of a job to arrive merges them all and writes the job's Result into host memory,
// then the launch's stamp beside it. A job whose bytes go to the device's ring copies them only
// while the ring's gate is open, and a launch whose judged outputs hold NaN/Inf (its inputs none)
// closes it: OPHOOK_NAN's culprit keeps its bytes however far behind the host learns of it.
// In `dump`, a tensor whose bytes the host may already hold is copied by a second launch right
// after, ophook_copy_changed, only where its fingerprint says they changed.
// ophook compiles this file with NVRTC at run time; CI compiles it with nvcc.
#include "device/kernel/statistics_kernel.hpp"

using namespace ophook::device::statistics_kernel;

namespace {

__device__ void merge_in_block(Partial* shared) {
  for (u32 s = kThreads / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) merge(shared[threadIdx.x], shared[threadIdx.x + s]);
    __syncthreads();
  }
}

/// Another block's Partial, read past this block's L1 (it was written by another SM).
__device__ Partial load_other(const Partial* p) {
  constexpr u32 kWords = sizeof(Partial) / sizeof(u64);
  const volatile u64* words = reinterpret_cast<const volatile u64*>(p);
  union {
    u64 w[kWords];
    Partial partial;
  } out;
  for (u32 i = 0; i < kWords; ++i) out.w[i] = words[i];
  return out.partial;
}

/// The block's job, into shared memory `job`. Only constant indices into the parameter: a computed
/// one makes the compiler copy the whole parameter into every thread's local memory.
__device__ void load_job(const LaunchParams& params, TensorJob& job) {
  u32 j = 0;
#pragma unroll
  for (u32 i = 1; i < kJobsPerLaunch; ++i) {
    if (i < params.jobs && blockIdx.x >= params.job[i].first_block) j = i;
  }
  if (threadIdx.x == 0) {
#pragma unroll
    for (u32 i = 0; i < kJobsPerLaunch; ++i) {
      if (i == j) job = params.job[i];
    }
  }
  __syncthreads();
}

/// Closes the ring's gate for the launches after this one (gate_open says which it stops), unless
/// an earlier launch holds it closed.
__device__ void close_gate(const LaunchParams& params) {
  auto* gate = reinterpret_cast<unsigned long long*>(params.gate);
  unsigned long long seen = *reinterpret_cast<volatile unsigned long long*>(gate);
  while (gate_open(seen, params)) {
    const unsigned long long was = atomicCAS(gate, seen, params.stamp);
    if (was == seen) break;
    seen = was;
  }
}

}  // namespace

// Three blocks per SM at least: the loops' 16-byte loads in flight (24 warps' worth) hide the
// memory's latency; left to itself ptxas gave every kind the registers of the rarest (complex)
// ones' loops, which left room for two.
extern "C" __global__ void __launch_bounds__(kThreads, 3) ophook_statistics(const LaunchParams params) {
  __shared__ Partial shared[kThreads];
  __shared__ TensorJob job;
  __shared__ bool last, skipped;
  __shared__ u32 arrived;
  load_job(params, job);
  const u32 local = blockIdx.x - job.first_block;
  if (job.flags & kRingCopy) {  // the same for the whole block: `job` is shared
    if (threadIdx.x == 0) {
      skipped = !gate_open(*reinterpret_cast<const volatile u64*>(params.gate), params);
      if (skipped) job.copy_to = 0;
    }
    __syncthreads();
  }

  shared[threadIdx.x] = summarise(job, static_cast<u64>(local) * kThreads + threadIdx.x,
                                  static_cast<u64>(job.blocks) * kThreads);
  // Each thread's copies reach memory before its block arrives: once the last block has written
  // the stamps, the host takes the ring's bytes for done without waiting for the launch's end.
  if (job.copy_to != 0) __threadfence();
  __syncthreads();
  merge_in_block(shared);

  Partial* partials = reinterpret_cast<Partial*>(params.partials) + job.partials;
  u32* arrivals = reinterpret_cast<u32*>(params.arrivals);
  if (threadIdx.x == 0) {
    partials[local] = shared[0];
    __threadfence();  // the partial before the arrival
    const u32 add = 1u + ((job.flags & kRingCopy) && skipped ? kSkippedArrival : 0u);
    arrived = atomicAdd(&arrivals[job.slot], add) + add;
    last = (arrived & (kSkippedArrival - 1)) == job.blocks;
  }
  __syncthreads();
  if (!last) return;

  shared[threadIdx.x] = Accumulator().finish();
  for (u32 b = threadIdx.x; b < job.blocks; b += kThreads) merge(shared[threadIdx.x], load_other(partials + b));
  __syncthreads();
  merge_in_block(shared);
  if (threadIdx.x == 0) {
    reinterpret_cast<Result*>(params.results)[job.slot] = shared[0];
    arrivals[job.slot] = 0;  // ready for the slot's next job
    if (job.flags & kRingCopy) {
      reinterpret_cast<u32*>(params.copies)[job.slot] = ring_copy(arrived / kSkippedArrival, job.blocks);
    }
    if (job.flags & (kJudgedInput | kJudgedOutput)) {  // the launch's last judged job decides
      u32* verdict = reinterpret_cast<u32*>(params.verdicts) + params.stamp % kVerdictSlots;
      const u32 part = verdict_part(job, shared[0]);
      const u32 all = atomicAdd(verdict, part) + part;
      if ((all & kVerdictArrivals) == params.judged_jobs) {
        *verdict = 0;  // ready for the launch kVerdictSlots later
        if (decide_verdict(all, params)) close_gate(params);
      }
    }
    __threadfence_system();  // the result reaches the host before its stamp does
    reinterpret_cast<volatile u64*>(params.stamps)[job.slot] = params.stamp;
  }
}

// After ophook_statistics on the same stream, over its kCopyIfChanged jobs: each block reads its
// job's Result (written by that launch) and copies its share of the bytes only when they are not
// those of the copy the host holds.
extern "C" __global__ void __launch_bounds__(kThreads) ophook_copy_changed(const LaunchParams params) {
  __shared__ TensorJob job;
  __shared__ bool changed;
  load_job(params, job);
  if (threadIdx.x == 0) changed = !unchanged(job, reinterpret_cast<const Result*>(params.results));
  __syncthreads();
  if (!changed) return;
  const u32 local = blockIdx.x - job.first_block;
  copy_part(job, static_cast<u64>(local) * kThreads + threadIdx.x, static_cast<u64>(job.blocks) * kThreads);
}
