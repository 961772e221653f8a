#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>

#include "lines/line_buffer.hpp"
#include "ophook/model/record.hpp"

namespace ophook::core {

/// The parts of a record's lines that say what was called, kept per call: the trace line's
/// `,"op":…,"outputs":[…]` and the API line. A program calls the same op on arrays of the same
/// shapes over and over, and formatting those parts anew was three fifths of the writer's work per
/// traced `np.add`. A call is its op, its encoded values and its arrays' dtypes, devices, reasons
/// and shapes: for arrays without file or statistics that is all the two texts depend on (the
/// caller's business to check). A call is kept from its second sighting on, so that a program
/// whose calls never repeat (a new scalar each time) pays a lookup, not an allocation, per call.
/// Bounded: emptied when it would exceed kMaxBytes. Writer thread only.
class CallTextCache {
 public:
  struct Texts {
    std::string trace_call;
    std::string api_line;
  };

  /// The texts stored for `record`'s call, or nullptr; remember() then may store them for it.
  const Texts* find(const CallRecord& record);
  /// Stores the texts of the call last passed to find(), if that call was seen before (and not if
  /// they alone exceed a sixteenth of the bound: a call with a huge list argument would only evict
  /// the others).
  void remember(std::string_view trace_call, std::string_view api_line);

  static constexpr std::size_t kMaxBytes = std::size_t{8} << 20;
  /// Bytes the stored calls hold (as counted against kMaxBytes).
  std::size_t footprint() const noexcept { return bytes_; }

 private:
  // Hashes of calls seen once, by their low bits: a later call that overwrites a slot only delays
  // the first call's caching.
  static constexpr std::size_t kSightings = 4096;

  struct Entry {
    std::string key;  // the whole key: two calls with one hash are told apart
    Texts texts;
  };
  struct Identity {
    std::size_t operator()(std::uint64_t hash) const noexcept { return hash; }  // XXH3 mixes already
  };

  LineBuffer key_;           // the call last passed to find()
  std::uint64_t hash_ = 0;   // its hash
  std::unordered_map<std::uint64_t, Entry, Identity> entries_;
  std::array<std::uint64_t, kSightings> seen_once_{};
  std::size_t bytes_ = 0;
};

}  // namespace ophook::core
