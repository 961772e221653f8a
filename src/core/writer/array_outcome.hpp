#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "ophook/stats/stats.hpp"

namespace ophook::core {

/// Why a captured array that dump mode would have saved has no file (trace.jsonl's "reason").
enum class NoFileReason : std::uint8_t {
  None,
  Budget,               // OPHOOK_MAX_BYTES was reached
  TerminationDeadline,  // the time allowed for files after a termination signal had passed
  RingTooLarge,         // the call's arrays alone take more than OPHOOK_RING_BYTES
  RingEvicted,          // newer calls pushed it out of the ring before any trigger
  RingNotTriggered,     // still in the ring when the run ended without a trigger
  RingDeviceLost,       // its bytes, held on its device, were overwritten there, not copied there (the
                        // gate) or could not be fetched
};

/// The reason's text, "" for None.
std::string_view to_string(NoFileReason reason) noexcept;

/// What the writer made of one captured array: its file (empty = none) and statistics.
struct ArrayOutcome {
  std::string file;
  std::string same_as;  // the earlier file of the same content that `file` is a hard link to
  std::optional<ArrayStats> stats;
  NoFileReason no_file = NoFileReason::None;
  bool is_output = false;
};

}  // namespace ophook::core
