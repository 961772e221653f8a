#pragma once
#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "line_buffer.hpp"
#include "ophook/record.hpp"

namespace ophook::core {

/// The parts of a record's lines that say what was called, kept per call: the trace line's
/// `,"op":…,"outputs":[…]` and the API line. A program calls the same op on arrays of the same
/// shapes over and over, and formatting those parts anew was three fifths of the writer's work per
/// traced `np.add`. A call is its op, its encoded values and its arrays' dtypes, devices, reasons
/// and shapes: for arrays without file or statistics that is all the two texts depend on (the
/// caller's business to check). Bounded: emptied when it would exceed kMaxBytes. Writer thread only.
class CallTextCache {
 public:
  struct Texts {
    std::string trace_call;
    std::string api_line;
  };

  /// The texts stored for `record`'s call, or nullptr; remember() then stores them for it.
  const Texts* find(const CallRecord& record);
  /// Stores the texts of the call last passed to find() (not if they alone exceed a sixteenth of
  /// the bound: a call with a huge list argument would only evict the others).
  void remember(std::string_view trace_call, std::string_view api_line);

  static constexpr std::size_t kMaxBytes = std::size_t{8} << 20;
  /// Bytes the stored calls hold (as counted against kMaxBytes).
  std::size_t footprint() const noexcept { return bytes_; }

 private:
  // Bytes an entry costs beyond its texts and key: the map's node and the strings' headers.
  static constexpr std::size_t kEntryOverhead = 160;

  struct KeyHash {
    using is_transparent = void;  // found by string_view: a lookup allocates nothing
    std::size_t operator()(std::string_view key) const noexcept;
  };

  LineBuffer key_;  // the call last passed to find()
  std::unordered_map<std::string, Texts, KeyHash, std::equal_to<>> texts_;
  std::size_t bytes_ = 0;
};

}  // namespace ophook::core
