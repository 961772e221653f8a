#include "ophook/process/process_rank.hpp"

#include <cstdlib>
#include <string>

namespace ophook::core {
namespace {

long parse_rank(const char* text) noexcept {
  if (text == nullptr || *text < '0' || *text > '9') return -1;
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);
  return *end == '\0' ? value : -1;
}

void export_held(long rank) { ::setenv(ProcessRank::kHeldRankVar, std::to_string(rank).c_str(), 1); }

}  // namespace

long ProcessRank::from_environment() noexcept { return parse_rank(std::getenv("RANK")); }

void ProcessRank::at_start() {
  if (own_ >= 0) return;  // OPHOOK_HELD_RANK is then this process's own export
  inherited_ = parse_rank(std::getenv(kHeldRankVar));
  learn(from_environment(), /*export_it=*/true);
}

void ProcessRank::at_fork_child() noexcept {
  if (const long parents = own_ >= 0 ? own_ : from_environment(); parents >= 0) inherited_ = parents;
  own_ = -1;
}

bool ProcessRank::learn(long rank, bool export_it) {
  if (rank < 0 || own_ >= 0 || rank == inherited_) return false;
  own_ = rank;
  if (export_it) export_held(rank);
  return true;
}

}  // namespace ophook::core
