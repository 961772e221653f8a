#pragma once
// The device statistics kernel's loops over a tensor's groups and its launch parameter
// (docs/devices.md, "Statistics on a CUDA device"); the moments and fingerprint sums a thread
// keeps are in statistics_moments.hpp, the jobs and where their elements lie in
// statistics_job.hpp, the element kinds in statistics_elements.hpp. It
// compiles three ways: as host C++ (the fake device and the tests, which check
// it against src/core/stats/stats.cpp), under nvcc (CI compiles the kernel for a GPU) and under NVRTC
// (ophook compiles the kernel at run time, src/device/kernel/statistics_kernel.cu). So the
// writer's statistics and the device's cannot drift apart: both are tested against each other for
// every dtype. NVRTC has no standard library: only builtin types and functions are used here.
#include "device/kernel/statistics_job.hpp"
#include "device/kernel/statistics_moments.hpp"

namespace ophook::device::statistics_kernel {

/// std::conditional, which NVRTC lacks: `Type` is A where `Condition`, else B.
template <bool Condition, typename A, typename B>
struct Select {
  using Type = A;
};
template <typename A, typename B>
struct Select<false, A, B> {
  using Type = B;
};

constexpr u32 kThreads = 256;          // per block
constexpr u32 kMaxBlocksPerJob = 1024;  // a larger tensor's blocks stride over it
constexpr u32 kJobsPerLaunch = 12;     // the launch parameter stays under CUDA's 4 KiB
constexpr u32 kVerdictSlots = 8192;    // LaunchParams::verdicts, by stamp: launches in flight at most

/// The kernel's one parameter: a call's tensors (up to kJobsPerLaunch), and the device addresses
/// of the partials arena, the arrival counters, the results and their stamps (host memory the
/// device writes). A job's last block writes its result, then `stamp` (the launch's, never 0) into
/// its slot's stamp: the host knows the result is there by reading it, without asking the driver.
/// The ring's gate (docs/design.md, "the ring's gate"): `gate` holds the stamp of the launch that
/// closed it (0: never closed); stamps up to `open_through` count as open (their calls were judged
/// no culprit when this launch was sent). `verdicts` holds kVerdictSlots words by stamp, each
/// launch's verdict as its judged jobs add it up, then kVerdictSlots more: whether each launch's
/// judged inputs held NaN/Inf, which `prior_inputs` names for the launch after it (a call that
/// may write into its inputs reads them in a launch before it runs, its outputs in one after).
/// `copies` is where a kRingCopy job's last block writes what became of its copy (RingCopy),
/// before its stamp.
struct LaunchParams {
  u64 partials = 0;
  u64 arrivals = 0;
  u64 results = 0;
  u64 stamps = 0;
  u64 stamp = 0;
  u64 gate = 0;
  u64 open_through = 0;
  u64 verdicts = 0;
  u64 prior_inputs = 0;  // the stamp of the launch that read this call's inputs, 0: none
  u64 copies = 0;
  u32 jobs = 0;
  u32 judged_jobs = 0;  // kJudgedInput or kJudgedOutput
  TensorJob job[kJobsPerLaunch];
};
static_assert(sizeof(LaunchParams) <= 4096, "a kernel's parameter must fit CUDA's 4 KiB");

/// What became of a kRingCopy job's copy: all its blocks copied, none (the gate was closed), or
/// some (the gate closed while it ran, from a launch on another stream).
enum RingCopy : u32 { kCopiedAll = 0, kCopiedNone = 1, kCopiedPart = 2 };

/// A block's arrival adds 1, and kSkippedArrival more when it skipped its copy: the last block
/// reads how many did.
constexpr u32 kSkippedArrival = 1u << 16;

OPHOOK_KERNEL_FN RingCopy ring_copy(u32 skipped_blocks, u32 blocks) {
  return skipped_blocks == 0 ? kCopiedAll : skipped_blocks == blocks ? kCopiedNone : kCopiedPart;
}

/// Whether the gate, closed by the launch stamped `closed_by` (0: never), lets launch `params`
/// copy into the ring: open, reopened since (judged no culprit), or closed by this launch or a
/// later one (on another stream), after this one's room was handed out. All the blocks of a
/// launch decide alike, whichever of its jobs closes it.
OPHOOK_KERNEL_FN bool gate_open(u64 closed_by, const LaunchParams& params) {
  return closed_by <= params.open_through || closed_by >= params.stamp;
}

/// A launch's verdict (LaunchParams::verdicts), added up by its judged jobs (one atomic add
/// each): three counts of up to kJobsPerLaunch in a byte each, of the jobs arrived, of the judged
/// outputs that held NaN/Inf and of the judged inputs that did.
constexpr u32 kVerdictArrivals = 0xFFu, kOutputNonfinite = 1u << 8, kInputNonfinite = 1u << 16;
static_assert(kJobsPerLaunch < 256, "a launch's verdict counts its jobs in a byte");

/// A judged job's part of its launch's verdict, from its result.
OPHOOK_KERNEL_FN u32 verdict_part(const TensorJob& job, const Result& result) {
  if (result.nonfinite == 0) return 1;
  return 1 + ((job.flags & kJudgedOutput) ? kOutputNonfinite : kInputNonfinite);
}

/// Whether a launch whose judged jobs gave `verdict` closes the gate: NaN/Inf in a judged
/// output, none in the judged inputs it read (`prior_inputs_nonfinite`: nor in the launch before
/// it that read the call's inputs). The host alone names a culprit (an input read elsewhere, a NaN
/// scalar); the device only keeps whatever may be one.
OPHOOK_KERNEL_FN bool closes_gate(u32 verdict, bool prior_inputs_nonfinite = false) {
  return (verdict / kOutputNonfinite & kVerdictArrivals) != 0 && verdict / kInputNonfinite == 0 &&
         !prior_inputs_nonfinite;
}

/// The launch's last judged job, its verdict `verdict` added up: notes whether its judged inputs
/// held NaN/Inf (for the launch after it: prior_inputs) and says whether it closes the gate.
OPHOOK_KERNEL_FN bool decide_verdict(u32 verdict, const LaunchParams& params) {
  volatile u32* inputs = reinterpret_cast<volatile u32*>(params.verdicts) + kVerdictSlots;  // NOLINT(performance-no-int-to-ptr)
  inputs[params.stamp % kVerdictSlots] = verdict / kInputNonfinite != 0 ? 1u : 0u;
  return closes_gate(verdict, params.prior_inputs != 0 && inputs[params.prior_inputs % kVerdictSlots] != 0);
}

/// Takes the values of the elements of a group, its bytes `b`, into `acc` (an Accumulator, or for
/// float values a FiniteMoments). `Whole`: a group of group_bytes(Kind) (kWholeGroups
/// jobs), known at compile time.
template <u32 Kind, bool Whole = false, typename Values>
OPHOOK_KERNEL_FN void accumulate_values(const TensorJob& job, Bits b, Values& acc) {
  constexpr u32 size = item_size(Kind);
  if constexpr (Kind == kFloat32) {
    acc.float_value(bits_to_float(static_cast<u32>(b.lo)));
  } else if constexpr (Kind == kBFloat16) {
    const u32 group = Whole ? 2 : job.group;
    for (u32 k = 0; k < group; ++k) acc.float_value(bits_to_float(static_cast<u32>((b.lo >> (16 * k)) & 0xFFFFu) << 16));
  } else if constexpr (Kind == kFloat16) {
    const u32 group = Whole ? 2 : job.group;
    for (u32 k = 0; k < group; ++k) acc.float_value(half_float(static_cast<u16>(b.lo >> (16 * k))));
  } else if constexpr (size >= 4) {
    acc.value(element_value<Kind>(b.lo, b.hi));
  } else {
    constexpr u64 mask = (u64{1} << (8 * size)) - 1;
    const u32 group = Whole ? 4 / size : job.group;
    for (u32 k = 0; k < group; ++k) acc.value(element_value<Kind>((b.lo >> (8 * size * k)) & mask, 0));
  }
}

/// Takes group `g` of `job`, its bytes `b`: its elements' values into `values`, and, with `Words`,
/// its fingerprint words into `acc` (an int32 word sign-extended, or in byte mode each unsigned
/// byte). `Whole` as for accumulate_values: the group is read as int32 words.
template <u32 Kind, bool Whole = false, bool Words = true, typename Values = Accumulator>
OPHOOK_KERNEL_FN void accumulate_group(const TensorJob& job, u64 g, Bits b, Values& values, Accumulator& acc) {
  constexpr u32 size = item_size(Kind);
  accumulate_values<Kind, Whole>(job, b, values);
  if constexpr (!Words) return;
  if (!Whole && !(job.flags & kWords)) {  // group == 1: a byte count that is not a multiple of 4
    for (u32 i = 0; i < size; ++i) {
      const u64 byte = (i < 8 ? b.lo >> (8 * i) : b.hi >> (8 * (i - 8))) & 0xFFu;
      acc.word(g * size + i, static_cast<i64>(byte));
    }
    return;
  }
  constexpr u32 words = size >= 4 ? size / 4 : 1;  // per group
  for (u32 w = 0; w < words; ++w) {
    const u64 half = w < 2 ? b.lo : b.hi;
    acc.word(g * words + w, static_cast<i64>(static_cast<int>(static_cast<u32>(half >> (32 * (w & 1))))));
  }
}

/// Group `k` of the 16 bytes `v`, whose groups are `Bytes` (4, 8 or 16) bytes each.
template <u32 Bytes>
OPHOOK_KERNEL_FN Bits group_of_vector(Bits v, u32 k) {
  Bits b;
  if constexpr (Bytes == 16) return v;
  if constexpr (Bytes == 8) {
    b.lo = k == 0 ? v.lo : v.hi;
  } else {
    b.lo = static_cast<u32>((k < 2 ? v.lo : v.hi) >> (32 * (k & 1)));
  }
  return b;
}

/// Takes the groups of vector `v` (16 bytes, the next of a thread's) into `values`, and with `Words`
/// its fingerprint words into `acc` (Accumulator::words_of_vector).
template <u32 Kind, bool Words, typename Values>
OPHOOK_KERNEL_FN void accumulate_vector(const TensorJob& job, Bits v, Values& values, Accumulator& acc) {
  constexpr u32 bytes = group_bytes(Kind), per = 16 / bytes;
  for (u32 k = 0; k < per; ++k) accumulate_values<Kind, true>(job, group_of_vector<bytes>(v, k), values);
  if constexpr (Words) acc.words_of_vector(v);
}

/// Walks the kWholeGroups `job`'s groups that thread `first` of `stride` takes: their values into
/// `values`, with `Words` their fingerprint words into `acc`, and their bytes to `copy` unless
/// null. Where the tensor and its copy's destination are 16-byte aligned, the groups are read 16
/// bytes at a time (vectors first, first + stride, …, four loads in flight: a GPU thread is bound
/// by memory latency, not arithmetic), then the groups past the last whole vector one by one;
/// otherwise groups first, first + stride, … one load each, four in flight.
template <u32 Kind, bool Words, typename Values>
OPHOOK_KERNEL_FN void walk_whole_groups(const TensorJob& job, u64 first, u64 stride, Values& values, Accumulator& acc,
                                        u8* copy) {
  constexpr u32 bytes = group_bytes(Kind), per = 16 / bytes;
  const u8* data = first_element(job);
  u64 g = first;
  if (((job.data | job.copy_to) & 15) == 0) {
    const u64 vectors = job.groups / per;
    u64 v = first;
    for (; v + 3 * stride < vectors; v += 4 * stride) {
      const Bits v0 = load_vector(data + v * 16), v1 = load_vector(data + (v + stride) * 16);
      const Bits v2 = load_vector(data + (v + 2 * stride) * 16), v3 = load_vector(data + (v + 3 * stride) * 16);
      if (copy != nullptr) {
        store_vector(copy + v * 16, v0), store_vector(copy + (v + stride) * 16, v1);
        store_vector(copy + (v + 2 * stride) * 16, v2), store_vector(copy + (v + 3 * stride) * 16, v3);
      }
      accumulate_vector<Kind, Words>(job, v0, values, acc);
      accumulate_vector<Kind, Words>(job, v1, values, acc);
      accumulate_vector<Kind, Words>(job, v2, values, acc);
      accumulate_vector<Kind, Words>(job, v3, values, acc);
    }
    for (; v < vectors; v += stride) {
      const Bits b = load_vector(data + v * 16);
      if (copy != nullptr) store_vector(copy + v * 16, b);
      accumulate_vector<Kind, Words>(job, b, values, acc);
    }
    if constexpr (Words) acc.fold_vectors(first, stride);
    g = vectors * per + first;  // the groups past the last whole vector
  } else {
    for (; g + 3 * stride < job.groups; g += 4 * stride) {
      const Bits b0 = load_bits(data + g * bytes, bytes), b1 = load_bits(data + (g + stride) * bytes, bytes);
      const Bits b2 = load_bits(data + (g + 2 * stride) * bytes, bytes);
      const Bits b3 = load_bits(data + (g + 3 * stride) * bytes, bytes);
      if (copy != nullptr) {
        store_bits(copy + g * bytes, b0, bytes), store_bits(copy + (g + stride) * bytes, b1, bytes);
        store_bits(copy + (g + 2 * stride) * bytes, b2, bytes), store_bits(copy + (g + 3 * stride) * bytes, b3, bytes);
      }
      accumulate_group<Kind, true, Words>(job, g, b0, values, acc);
      accumulate_group<Kind, true, Words>(job, g + stride, b1, values, acc);
      accumulate_group<Kind, true, Words>(job, g + 2 * stride, b2, values, acc);
      accumulate_group<Kind, true, Words>(job, g + 3 * stride, b3, values, acc);
    }
  }
  for (; g < job.groups; g += stride) {
    const Bits b = load_bits(data + g * bytes, bytes);
    if (copy != nullptr) store_bits(copy + g * bytes, b, bytes);
    accumulate_group<Kind, true, Words>(job, g, b, values, acc);
  }
}

/// The kinds whose values are floats (bfloat16 and float16 exactly so), taken by
/// Accumulator::float_value; the others' are doubles, taken by Accumulator::value.
OPHOOK_KERNEL_FN constexpr bool takes_float_values(u32 kind) {
  return kind == kFloat32 || kind == kBFloat16 || kind == kFloat16;
}

/// The first value walk_whole_groups gives thread `first` of `job` (0 when it takes none):
/// FiniteMoments' shift.
template <u32 Kind, typename Value>
OPHOOK_KERNEL_FN Value first_value(const TensorJob& job, u64 first) {
  constexpr u32 bytes = group_bytes(Kind), per = 16 / bytes;
  u64 g = first;  // groups one by one
  if (((job.data | job.copy_to) & 15) == 0) {  // vectors first, then the groups past them
    const u64 vectors = job.groups / per;
    g = first < vectors ? first * per : vectors * per + first;
  }
  if (g >= job.groups) return 0;
  const Bits b = load_bits(first_element(job) + g * bytes, bytes);
  if constexpr (Kind == kFloat32) return bits_to_float(static_cast<u32>(b.lo));
  if constexpr (Kind == kBFloat16) return bits_to_float(static_cast<u32>(b.lo & 0xFFFFu) << 16);
  if constexpr (Kind == kFloat16) return half_float(static_cast<u16>(b.lo));
  return element_value<Kind>(b.lo, b.hi);  // the group's first element: its lowest bytes
}

/// The Partial of a kWholeGroups `job`'s groups that thread `first` of `stride` takes, copied to
/// the job's copy destination on the way: its values taken by FiniteMoments, and read again by an
/// Accumulator only where one of them is not finite (never, for the kinds that hold no NaN/Inf).
/// The accumulators live and die here, so that they stay in registers.
template <u32 Kind>
OPHOOK_KERNEL_LOOP_FN Partial summarise_whole_groups(const TensorJob& job, u64 first, u64 stride) {
  using Value = typename Select<takes_float_values(Kind), float, double>::Type;
  Accumulator acc;
  FiniteMoments<Value> moments(first_value<Kind, Value>(job, first));
  walk_whole_groups<Kind, true>(job, first, stride, moments, acc, copy_destination(job));
  if constexpr (can_be_nonfinite(Kind)) {
    if (!moments.all_finite()) {
      walk_whole_groups<Kind, false>(job, first, stride, acc, acc, nullptr);  // the values again, counted
      return acc.finish();
    }
  }
  return moments.finish(acc.part);
}

/// An element kind as a type, for for_kind's callables.
template <u32 K>
struct KindTag {
  static constexpr u32 value = K;
};

/// `f(KindTag<kind>{})` for a kind the kernel reads, else `otherwise()`: a run-time kind made a
/// compile-time one, once, outside the loops that are compiled per kind.
template <typename F, typename Otherwise>
OPHOOK_KERNEL_FN auto for_kind(u32 kind, F&& f, Otherwise&& otherwise) {
  switch (kind) {
    case kBool: return f(KindTag<kBool>{});
    case kInt8: return f(KindTag<kInt8>{});
    case kUInt8: return f(KindTag<kUInt8>{});
    case kInt16: return f(KindTag<kInt16>{});
    case kUInt16: return f(KindTag<kUInt16>{});
    case kInt32: return f(KindTag<kInt32>{});
    case kUInt32: return f(KindTag<kUInt32>{});
    case kInt64: return f(KindTag<kInt64>{});
    case kUInt64: return f(KindTag<kUInt64>{});
    case kFloat16: return f(KindTag<kFloat16>{});
    case kBFloat16: return f(KindTag<kBFloat16>{});
    case kFloat32: return f(KindTag<kFloat32>{});
    case kFloat64: return f(KindTag<kFloat64>{});
    case kComplex64: return f(KindTag<kComplex64>{});
    case kComplex128: return f(KindTag<kComplex128>{});
    case kFloat8E4M3FN: return f(KindTag<kFloat8E4M3FN>{});
    case kFloat8E5M2: return f(KindTag<kFloat8E5M2>{});
    default: return otherwise();
  }
}

/// accumulate_group for the job's kind, chosen at run time: the path for small elements' groups
/// in C order, where the address arithmetic costs more than the choice.
OPHOOK_KERNEL_FN void accumulate_any(const TensorJob& job, u64 g, Bits b, Accumulator& acc) {
  for_kind(
      job.kind, [&](auto kind) { accumulate_group<decltype(kind)::value>(job, g, b, acc, acc); }, [] {});
}

/// Lanes of a team on a strided job's row (a GPU's warp), and the positions each lane takes of a
/// team's chunk of it: four loads in flight at a time, as on the whole-group path, four times.
constexpr u64 kTeamLanes = 32, kPerLane = 16;

/// The Partial of a strided `job`'s share (one element per group) that thread `first` of `stride`
/// takes. Its walk (memory order for kMemoryOrder jobs, else C order) is cut into rows (one
/// position of every dimension but the innermost) and each row into chunks of kTeamLanes x
/// kPerLane positions; teams of kTeamLanes threads (neighbours: `stride` a multiple of it, as on a
/// GPU, and rows as long; else teams of one) take chunks team, team + teams, …, each lane every kTeamLanes-th
/// position of its chunk: neighbouring lanes read neighbouring elements, and a row's start is
/// divided out once per chunk instead of an element's place per element (a GPU's divisions, one
/// per dimension, cost more than the element's statistics). One loop per kind that walks_rows.
template <u32 Kind>
OPHOOK_KERNEL_LOOP_FN Partial summarise_rows(const TensorJob& job, u64 first, u64 stride) {
  constexpr u32 size = item_size(Kind);
  Accumulator acc;
  if (job.count == 0) return acc.finish();
  u8* copy = copy_destination(job);
  const u8* data = first_element(job);
  const u32 last = job.ndim - 1;
  const u64 inner = static_cast<u64>(job.sizes[last]);
  const u64 inner_c = (job.flags & kMemoryOrder) ? static_cast<u64>(job.c_strides[last]) : 1;
  // Teams of one where rows are shorter than a team (channels-last's few channels): neighbouring
  // threads then take neighbouring rows, which lie as near.
  const u64 lanes = stride % kTeamLanes == 0 && inner >= kTeamLanes ? kTeamLanes : 1;
  const u64 lane = first % lanes, team = first / lanes, teams = stride / lanes;
  const u64 chunk = lanes * kPerLane, chunks = (inner + chunk - 1) / chunk;
  const u64 items = job.count / inner * chunks;
  // A lane's next position: its element lanes steps further along the row, its C index too.
  const i64 byte_step = job.strides[last] * static_cast<i64>(size * lanes);
  const u64 c_step = inner_c * lanes;
  const auto take = [&](Bits b, u64 c) {
    if (copy != nullptr) store_bits(copy + c * size, b, size);
    accumulate_group<Kind>(job, c, b, acc, acc);
  };
  for (u64 item = team; item < items; item += teams) {
    const u64 row = chunks == 1 ? item : item / chunks, start = chunks == 1 ? 0 : item % chunks * chunk;
    const u64 end = start + chunk < inner ? start + chunk : inner;
    u64 i = start + lane;
    if (i >= end) continue;
    i64 offset = 0;
    u64 c = 0;
    row_start(job, row, offset, c);
    const u8* p = data + (offset + static_cast<i64>(i) * job.strides[last]) * static_cast<i64>(size);
    c += i * inner_c;
    for (; i + 3 * lanes < end; i += 4 * lanes) {  // four loads in flight
      const Bits b0 = load_bits(p, size), b1 = load_bits(p + byte_step, size);
      const Bits b2 = load_bits(p + 2 * byte_step, size), b3 = load_bits(p + 3 * byte_step, size);
      take(b0, c), take(b1, c + c_step), take(b2, c + 2 * c_step), take(b3, c + 3 * c_step);
      p += 4 * byte_step, c += 4 * c_step;
    }
    for (; i < end; i += lanes, p += byte_step, c += c_step) take(load_bits(p, size), c);
  }
  return acc.finish();
}

/// The Partial of groups first, first + stride, … of `job`: whole groups at once where they lie
/// together and aligned, else element by element (views with strides, odd offsets, odd sizes).
OPHOOK_KERNEL_FN Partial summarise(const TensorJob& job, u64 first, u64 stride) {
  const auto none = [] { return Accumulator().finish(); };  // a kind the kernel does not read (never queued)
  if (job.flags & kWholeGroups) {
    const auto whole = [&](auto kind) { return summarise_whole_groups<decltype(kind)::value>(job, first, stride); };
    return for_kind(job.kind, whole, none);
  }
  if (job.group == 1 && job.ndim > 0 && walks_rows(job.kind)) {
    const auto rows = [&](auto kind) {
      if constexpr (walks_rows(decltype(kind)::value)) {
        return summarise_rows<decltype(kind)::value>(job, first, stride);
      } else {
        return none();  // not reached: the loop is compiled for the kinds walked by rows only
      }
    };
    return for_kind(job.kind, rows, none);
  }
  Accumulator acc;
  u8* copy = copy_destination(job);
  const u32 bytes = job.group * item_size(job.kind);
  for (u64 g = first; g < job.groups; g += stride) {  // C-order neighbours of small elements, a 0-d tensor
    const Bits b = load_group(job, g);
    if (copy != nullptr) store_bits(copy + g * bytes, b, bytes);
    accumulate_any(job, g, b, acc);
  }
  return acc.finish();
}

/// The whole job on one thread: the fake device's kernel, and the tests' reference.
OPHOOK_KERNEL_FN Result summarise_job(const TensorJob& job) { return summarise(job, 0, 1); }

/// Whether two reads' results have the same fingerprint: taken for the same bytes. Equal
/// fingerprints of unequal bytes would need two 64-bit sums equal by chance, which `ophook
/// compare` already takes for equal bytes.
OPHOOK_KERNEL_FN bool same_fingerprint(const Result& a, const Result& b) {
  return a.position == b.position && a.by_value == b.by_value;
}

/// Whether the bytes the result of a kCopyIfChanged `job` summarises (`results`: every slot's)
/// are those the host holds or will hold a copy of: the same fingerprint as the held copy's, or
/// as the earlier read's in results[held_slot] (kHeldInSlot). The device skips the copy on it, and
/// the host gives the record that copy on it (same_fingerprint).
OPHOOK_KERNEL_FN bool unchanged(const TensorJob& job, const Result* results) {
  const Result& now = results[job.slot];
  if (job.flags & kHeldInSlot) return same_fingerprint(now, results[job.held_slot]);
  return now.position == job.held_position && now.by_value == job.held_by_value;
}

/// Copies units first, first + stride, … of a kCopyIfChanged job's bytes (C order) to `copy_to`:
/// 16 bytes at a time where both addresses are aligned to 16, else 4 or 1 (the copy's share of
/// the second launch; the fake device's with first 0, stride 1).
OPHOOK_KERNEL_FN void copy_part(const TensorJob& job, u64 first, u64 stride) {
  const u8* from = first_element(job);
  u8* to = reinterpret_cast<u8*>(job.copy_to);  // NOLINT(performance-no-int-to-ptr): as first_element
  const u64 bytes = job.count * item_size(job.kind);
  const u64 alignment = job.data | job.copy_to;
  u64 done = 0;
  if ((alignment & 15) == 0) {
    const u64 vectors = bytes / 16;
    for (u64 v = first; v < vectors; v += stride) store_vector(to + v * 16, load_vector(from + v * 16));
    done = vectors * 16;
  } else if ((alignment & 3) == 0) {
    const u64 words = bytes / 4;
    for (u64 w = first; w < words; w += stride) store_bits(to + w * 4, load_bits(from + w * 4, 4), 4);
    done = words * 4;
  }
  for (u64 b = done + first; b < bytes; b += stride) to[b] = from[b];
}

#if !defined(__CUDACC__)
/// A statistics launch on one host thread, as the kernel runs it (the fake device, and the tests'
/// stand-in driver), its gate and verdicts in host memory: each job's Result from
/// `summarise(job)`, given to `land(slot, result, copied)` with what became of its copy into the
/// ring, whose gate is asked before the copies and closed by the launch's verdict after them.
template <typename Summarise, typename Land>
void run_on_host(const LaunchParams& params, Summarise&& summarise, Land&& land) {
  u64& gate = *reinterpret_cast<u64*>(params.gate);  // NOLINT(performance-no-int-to-ptr): host memory here
  const bool open = gate_open(gate, params);  // the same for every block: none closes it meanwhile
  u32 verdict = 0;
  for (u32 j = 0; j < params.jobs; ++j) {
    TensorJob job = params.job[j];
    const bool skipped = (job.flags & kRingCopy) && !open;
    if (skipped) job.copy_to = 0;
    const Result result = summarise(job);
    if (job.flags & (kJudgedInput | kJudgedOutput)) verdict += verdict_part(job, result);
    land(job.slot, result, skipped ? kCopiedNone : kCopiedAll);
  }
  if (params.judged_jobs > 0 && decide_verdict(verdict, params) && gate_open(gate, params)) gate = params.stamp;
}
#endif

}  // namespace ophook::device::statistics_kernel
