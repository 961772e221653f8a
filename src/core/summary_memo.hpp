#pragma once
// Statistics of large arrays read where they lie (`stats` mode), remembered by where they lie and
// given again only to the same content.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "ophook/stats.hpp"

namespace ophook::core {

/// compute_stats(descr, data, nbytes), for an array of kContentBlockBytes or more summarised where
/// it lies. A program reads most large arrays more than once unchanged — a weight in the forward,
/// the backward and the optimizer; an activation as one op's output and the next op's input; the
/// same operands call after call — and in the cache their statistics and XXH64 cost five times
/// what telling their content unchanged costs (XXH3 with AVX-512: 80 GB/s here, against 16 GB/s).
/// So the statistics of the arrays summarised last are kept, with the XXH3 of each block of their
/// bytes (taken in the same pass), under their address; an array of the same size and dtype found
/// there whose every block hashes as before gets them back without being summarised. The first
/// block that differs ends the check (memory reused for new content costs one block). The content
/// decides, not the address or a version counter, so a write no call records (through `.data`, a
/// NumPy view, DLPack, C code) is seen as a change. Equal hashes of unequal blocks (2^-64 per
/// block) would give back the old statistics: as likely as two arrays' XXH64 digests being equal,
/// which `ophook compare` already takes as equal bytes. Where the content changes before every
/// summary, the blocks are hashed only now and then (summary_memo.cpp), so such arrays cost what
/// they did before there was a memo.
///
/// Bounded: the 4096 arrays used last, holding at most 2^19 block hashes (4 MiB) between them.
/// Thread-safe; the arrays' memory must not change while read (as for compute_stats).
ArrayStats remembered_stats(std::string_view descr, const std::byte* data, std::size_t nbytes);

/// Arrays remembered_stats summarised, and those whose statistics it gave back, in this process.
struct SummaryMemoCounts {
  std::uint64_t computed = 0, remembered = 0;
};
SummaryMemoCounts summary_memo_counts() noexcept;

}  // namespace ophook::core
