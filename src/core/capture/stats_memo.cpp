#include "capture/stats_memo.hpp"

#include <atomic>
#include <memory>
#include <string>

#include "capture/content_memo.hpp"

namespace ophook::core {
namespace {

using StatsMemo = ContentMemo<std::string, ArrayStats, ForkStage::StatsMemo>;
std::atomic<std::uint64_t> computed{0}, remembered{0};

}  // namespace

ArrayStats remembered_stats(std::string_view descr, const std::byte* data, std::size_t nbytes) {
  if (data == nullptr || nbytes < kContentBlockBytes) return compute_stats(descr, data, nbytes);  // not worth it
  auto& memo = StatsMemo::get();
  std::uint32_t misses = 0;
  if (const auto known = memo.find_same(data, data, nbytes, descr, misses)) {
    remembered.fetch_add(1, std::memory_order_relaxed);
    return known->payload;
  }
  auto fresh = std::make_shared<StatsMemo::Entry>();
  fresh->key = descr;
  fresh->nbytes = nbytes;
  fresh->misses_in_a_row.store(misses, std::memory_order_relaxed);
  if (StatsMemo::should_hash(misses)) fresh->block_hashes.resize(content_block_count(nbytes));
  fresh->payload = compute_stats(descr, data, nbytes, fresh->block_hashes.empty() ? nullptr : fresh->block_hashes.data());
  computed.fetch_add(1, std::memory_order_relaxed);
  const ArrayStats stats = fresh->payload;
  memo.keep(data, std::move(fresh));
  return stats;
}

StatsMemoCounts stats_memo_counts() noexcept {
  return {computed.load(std::memory_order_relaxed), remembered.load(std::memory_order_relaxed)};
}

}  // namespace ophook::core
