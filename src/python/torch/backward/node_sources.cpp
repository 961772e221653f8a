#include "torch/backward/node_sources.hpp"

#include <algorithm>
#include <vector>

#include "torch/backward/node_modules.hpp"

namespace ophook::py::node_sources {
namespace {

// The last calls kept per thread: a forward pass makes a few thousand, so a graph kept for a
// backward many steps later (retain_graph) may outlive its part of the table.
constexpr std::size_t kCallsKept = std::size_t{1} << 16;

/// From sequence number `first` on, the thread's nodes were made by the call at `site`.
struct Call {
  std::uint64_t first;
  SourceSite site;
};

thread_local std::vector<Call> calls;  // by `first`, ascending

}  // namespace

bool recording() noexcept { return node_modules::recording(); }

void call_starts(const SourceSite& site) {
  const auto first = node_modules::next_sequence_number();
  if (first == node_modules::kUnknown || site.file_id == 0) return;
  if (!calls.empty() && calls.back().first == first) {
    calls.back().site = site;  // the call before made no node: this one is the maker from here on
    return;
  }
  if (calls.size() == kCallsKept) calls.erase(calls.begin(), calls.begin() + kCallsKept / 2);
  calls.push_back({first, site});
}

SourceSite site_of(PyObject* node) {
  const auto sequence_nr = node_modules::sequence_number_of(node);
  if (sequence_nr == node_modules::kUnknown) return {};
  const auto after = std::upper_bound(calls.begin(), calls.end(), sequence_nr,
                                      [](std::uint64_t n, const Call& call) { return n < call.first; });
  return after == calls.begin() ? SourceSite{} : (after - 1)->site;
}

}  // namespace ophook::py::node_sources
