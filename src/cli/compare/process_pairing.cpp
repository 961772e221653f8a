#include "compare/process_pairing.hpp"

#include <algorithm>
#include <map>

namespace ophook::cli {

namespace {

std::vector<std::size_t> of_kind(std::span<const ProcessDir> processes, ProcessDir::Kind kind) {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < processes.size(); ++i) {
    if (processes[i].kind == kind) out.push_back(i);
  }
  return out;
}

}  // namespace

std::vector<ProcessPair> pair_processes(std::span<const ProcessDir> base,
                                        std::span<const ProcessDir> other) {
  using Kind = ProcessDir::Kind;
  std::vector<ProcessPair> pairs;
  const auto base_roots = of_kind(base, Kind::Root), new_roots = of_kind(other, Kind::Root);
  if (!base_roots.empty() || !new_roots.empty()) {
    ProcessPair root;
    if (!base_roots.empty()) root.base = base_roots.front();
    if (!new_roots.empty()) root.other = new_roots.front();
    pairs.push_back(root);
  }
  std::map<std::int64_t, ProcessPair> ranks;
  for (std::size_t i : of_kind(base, Kind::Rank)) ranks[base[i].number].base = i;
  for (std::size_t i : of_kind(other, Kind::Rank)) ranks[other[i].number].other = i;
  for (const auto& [rank, pair] : ranks) pairs.push_back(pair);

  auto pids = [](std::span<const ProcessDir> processes) {
    std::vector<std::size_t> order = of_kind(processes, Kind::Pid);
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      return started_before(processes[a], processes[b]);
    });
    return order;
  };
  const auto base_pids = pids(base), new_pids = pids(other);
  for (std::size_t k = 0; k < std::max(base_pids.size(), new_pids.size()); ++k) {
    ProcessPair pair;
    if (k < base_pids.size()) pair.base = base_pids[k];
    if (k < new_pids.size()) pair.other = new_pids[k];
    pairs.push_back(pair);
  }
  return pairs;
}

}  // namespace ophook::cli
