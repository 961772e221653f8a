#pragma once
// Statistics of large arrays read where they lie (`stats` mode), remembered by where they lie and
// given again only to the same content.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "ophook/stats/stats.hpp"

namespace ophook::core {

/// compute_stats(descr, data, nbytes), for an array of kContentBlockBytes or more summarised where
/// it lies. In the cache an array's statistics and XXH64 cost five times what telling its content
/// unchanged costs, and most large arrays are summarised more than once unchanged: the statistics
/// of the arrays summarised last are kept, with the XXH3 of each block of their bytes (taken in the
/// same pass), under their address (content_memo.hpp); an array of the same size and dtype found
/// there whose every block hashes as before gets them back without being summarised.
ArrayStats remembered_stats(std::string_view descr, const std::byte* data, std::size_t nbytes);

/// Arrays remembered_stats summarised, and those whose statistics it gave back, in this process.
struct StatsMemoCounts {
  std::uint64_t computed = 0, remembered = 0;
};
StatsMemoCounts stats_memo_counts() noexcept;

}  // namespace ophook::core
