#pragma once
// What the device statistics kernel reads (docs/devices.md, "Statistics on a CUDA device"): a
// tensor's job — its address, shape, strides and grouping into fingerprint words — and where its
// elements lie: C order, or the order they lie in memory for strided views. The host fills jobs
// in (set_grouping, order_by_memory), the kernel walks them; like statistics_kernel.hpp it
// compiles as host C++, under nvcc and under NVRTC, with builtin types only.
#include "device/kernel/statistics_elements.hpp"

namespace ophook::device::statistics_kernel {

constexpr u32 kMaxDims = 8;

/// One tensor's part of a launch. Plain integers only: the same bytes are the kernel's parameter.
struct TensorJob {
  u64 data = 0;     // address of the element at index 0 (storage offset applied)
  u64 count = 0;    // elements
  u64 groups = 0;   // count / group
  i64 sizes[kMaxDims] = {};
  i64 strides[kMaxDims] = {};  // in elements
  i64 c_strides[kMaxDims] = {};  // kMemoryOrder: each dimension's step in C order
  u32 ndim = 0;
  u32 kind = kNone;
  u32 group = 1;    // elements per fingerprint word: 4 / item size for 1- and 2-byte words, else 1
  u32 flags = 0;    // kContiguous | kWords | kWholeGroups | kSmallIndex | …
  u32 first_block = 0;  // of the launch's grid
  u32 blocks = 0;
  u32 slot = 0;     // where its result goes (and its arrival counter)
  u32 partials = 0; // its blocks' partials: entries [partials, partials + blocks) of the launch's arena
  u32 held_slot = 0;  // kHeldInSlot: the slot of the earlier read of the same bytes it is compared with
  u32 reserved = 0;   // copy_to at the same offset on the host and the device
  u64 copy_to = 0;  // where its bytes go in C order (host memory the device writes, or the
                    // device's part of the ring), 0: not copied
  u64 held_position = 0, held_by_value = 0;  // kCopyIfChanged: the fingerprint of the copy the
                                             // host holds of the bytes at `data`
};
constexpr u32 kContiguous = 1;   // C order: element i at data + i * item size
constexpr u32 kWords = 2;        // the fingerprint reads int32 words (the byte count is a multiple of 4)
constexpr u32 kWholeGroups = 4;  // contiguous, groups of group_bytes() aligned to their size: one load each
constexpr u32 kSmallIndex = 8;   // fewer than 2^32 elements: 32-bit index arithmetic
// C order, copied to `copy_to` not while summarised but by the launch after (ophook_copy_changed),
// and only when its fingerprint differs from held_*: bytes the host already has a copy of do not
// cross the bus again.
constexpr u32 kCopyIfChanged = 16;
// kCopyIfChanged against the fingerprint in the result of slot held_slot, not held_*: an earlier
// read of the tensor, launched before it on the same stream, whose bytes the host will have.
constexpr u32 kHeldInSlot = 32;
// A strided tensor of one element per group whose dimensions sizes/strides list in the order
// they lie in memory (order_by_memory), not C order: consecutive threads read neighbouring
// elements (a transposed or channels-last tensor's rows), and c_strides give each element's C
// index, which its fingerprint weight and its copy's place are taken from.
constexpr u32 kMemoryOrder = 64;
// `copy_to` is in the device's part of OPHOOK_RING_BYTES' ring: copied only while the ring's gate
// lets this launch (LaunchParams::gate), so that the bytes of a call that may be OPHOOK_NAN's
// culprit stay there until the host has judged it.
constexpr u32 kRingCopy = 128;
// An input, or an output, of a call OPHOOK_NAN judges (its outputs' NaN/Inf from finite inputs
// make it the culprit): a launch whose judged outputs hold NaN/Inf and whose judged inputs hold
// none closes the gate.
constexpr u32 kJudgedInput = 256;
constexpr u32 kJudgedOutput = 512;

/// The job's first element. An address travels as an integer in the kernel's parameter, which
/// must be the same plain bytes on the host and the device.
OPHOOK_KERNEL_FN const u8* first_element(const TensorJob& job) {
  return reinterpret_cast<const u8*>(job.data);  // NOLINT(performance-no-int-to-ptr): see above
}

/// Where the job's bytes are copied to while they are summarised, or null (none, or copied after
/// only if changed: kCopyIfChanged).
OPHOOK_KERNEL_FN u8* copy_destination(const TensorJob& job) {
  if (job.flags & kCopyIfChanged) return nullptr;
  return reinterpret_cast<u8*>(job.copy_to);  // NOLINT(performance-no-int-to-ptr): as first_element
}

/// Address of element `index` (C order) of `job`: 32-bit index arithmetic where the tensor allows
/// it (a 64-bit division costs several times a 32-bit one on a GPU).
OPHOOK_KERNEL_FN const u8* element_address(const TensorJob& job, u64 index, u32 size) {
  if (job.flags & kContiguous) return first_element(job) + index * size;
  i64 offset = 0;
  if (job.flags & kSmallIndex) {
    u32 rest = static_cast<u32>(index);
    for (u32 d = job.ndim; d-- > 0;) {
      const u32 extent = static_cast<u32>(job.sizes[d]);
      offset += static_cast<i64>(rest % extent) * job.strides[d];
      rest /= extent;
    }
  } else {
    for (u32 d = job.ndim; d-- > 0;) {
      const u64 extent = static_cast<u64>(job.sizes[d]);
      offset += static_cast<i64>(index % extent) * job.strides[d];
      index /= extent;
    }
  }
  return first_element(job) + offset * static_cast<i64>(size);
}

/// Where row `row` of `job`'s walk starts: the offset (in elements) and the C index of its first
/// element, a row being one position of every dimension but the walk's innermost (the last; in
/// memory order for kMemoryOrder jobs, whose c_strides give each dimension's C-order step, else
/// in C order). 32-bit division where the tensor allows it.
OPHOOK_KERNEL_FN void row_start(const TensorJob& job, u64 row, i64& offset, u64& c_index) {
  const u32 last = job.ndim - 1;
  const bool memory_order = (job.flags & kMemoryOrder) != 0;
  offset = 0;
  c_index = memory_order ? 0 : row * static_cast<u64>(job.sizes[last]);
  if (last == 1) {  // one outer dimension (a transpose, a strided matrix): the row is its position
    offset = static_cast<i64>(row) * job.strides[0];
    if (memory_order) c_index = row * static_cast<u64>(job.c_strides[0]);
  } else if (job.flags & kSmallIndex) {
    u32 rest = static_cast<u32>(row);
    for (u32 d = last; d-- > 0;) {
      const u32 extent = static_cast<u32>(job.sizes[d]), at = rest % extent;
      offset += static_cast<i64>(at) * job.strides[d];
      if (memory_order) c_index += static_cast<u64>(at) * static_cast<u64>(job.c_strides[d]);
      rest /= extent;
    }
  } else {
    for (u32 d = last; d-- > 0;) {
      const u64 extent = static_cast<u64>(job.sizes[d]), at = row % extent;
      offset += static_cast<i64>(at) * job.strides[d];
      if (memory_order) c_index += at * static_cast<u64>(job.c_strides[d]);
      row /= extent;
    }
  }
}

/// Bytes per group on the whole-group path: one element, or four bytes of smaller ones.
OPHOOK_KERNEL_FN constexpr u32 group_bytes(u32 kind) { return item_size(kind) < 4 ? 4 : item_size(kind); }

/// The bytes of group `g` of `job` (elements [g * group, (g + 1) * group)), element by element:
/// any strides, any alignment.
OPHOOK_KERNEL_FN Bits load_group(const TensorJob& job, u64 g) {
  const u32 size = item_size(job.kind);
  if (job.group == 1) return load_bits(element_address(job, g, size), size);
  Bits b;
  for (u32 k = 0; k < job.group; ++k) {
    b.lo |= load_bits(element_address(job, g * job.group + k, size), size).lo << (8 * size * k);
  }
  return b;
}

/// Fills in a job's grouping (group, groups, flags) for a job whose data, kind, ndim, count,
/// sizes and strides are set; `contiguous`: its elements lie in C order.
OPHOOK_KERNEL_FN void set_grouping(TensorJob& job, bool contiguous) {
  const u32 size = item_size(job.kind);
  const u64 bytes = job.count * size;
  job.flags = contiguous ? kContiguous : 0;
  job.group = 1;
  if (bytes % 4 == 0) {
    job.flags |= kWords;
    if (size < 4) job.group = 4 / size;
  }
  job.groups = job.count / job.group;
  if (contiguous && job.group * size == group_bytes(job.kind) && job.data % group_bytes(job.kind) == 0) {
    job.flags |= kWholeGroups;
  }
  if (job.count < (u64{1} << 32)) job.flags |= kSmallIndex;
}

/// The kinds whose strided views are walked row by row (summarise_rows; in memory order where it
/// differs from C order): the 4- and 8-byte dtypes of a model's transposed weights and activations
/// and of its index tensors. Other kinds' strided views are read element by element in C order,
/// each element's place divided out of its index: compiling the row walk for all seventeen kinds
/// took about 13 of nvcc's 36 s over the kernel (sm_90), paid on each machine's first CUDA
/// tensor, and a view of 1- or 2-byte elements is read four bytes at a time in C order anyway
/// unless its byte count is odd.
OPHOOK_KERNEL_FN constexpr bool walks_rows(u32 kind) {
  return kind == kFloat32 || kind == kFloat64 || kind == kInt64 || kind == kInt32;
}

/// Lists a strided `job`'s dimensions in the order they lie in memory (largest stride first; a
/// broadcast dimension, stride 0, outermost; ties in C order) with their C-order steps, and sets
/// kMemoryOrder, where that order is not C order and each group is one element (a group of
/// smaller elements is C-order neighbours, which memory order would split) and the kind's views
/// are walked by rows. After set_grouping.
OPHOOK_KERNEL_FN void order_by_memory(TensorJob& job) {
  if ((job.flags & kContiguous) || job.group != 1 || job.ndim < 2 || !walks_rows(job.kind)) return;
  u32 order[kMaxDims];
  i64 c_step[kMaxDims];
  i64 step = 1;
  for (u32 d = job.ndim; d-- > 0;) {
    order[d] = d;
    c_step[d] = step;
    step *= job.sizes[d];
  }
  const auto outer = [&](u32 a, u32 b) {  // whether dimension a lies outside dimension b
    const i64 sa = job.strides[a] == 0 ? ~(u64{1} << 63) : job.strides[a];
    const i64 sb = job.strides[b] == 0 ? ~(u64{1} << 63) : job.strides[b];
    return sa > sb;
  };
  bool moved = false;
  for (u32 i = 1; i < job.ndim; ++i) {  // insertion sort: stable, at most 8 dimensions
    const u32 d = order[i];
    u32 j = i;
    for (; j > 0 && outer(d, order[j - 1]); --j) order[j] = order[j - 1];
    order[j] = d;
    moved = moved || j != i;
  }
  if (!moved) return;
  i64 sizes[kMaxDims], strides[kMaxDims];
  for (u32 i = 0; i < job.ndim; ++i) sizes[i] = job.sizes[order[i]], strides[i] = job.strides[order[i]];
  for (u32 i = 0; i < job.ndim; ++i) {
    job.c_strides[i] = c_step[order[i]];
    job.sizes[i] = sizes[i], job.strides[i] = strides[i];
  }
  job.flags |= kMemoryOrder;
}

}  // namespace ophook::device::statistics_kernel
