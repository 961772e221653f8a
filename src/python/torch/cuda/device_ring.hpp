#pragma once
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>

#include "ophook/record.hpp"
#include "torch/float_formats.hpp"

namespace ophook::py::device_statistics {

class Backend;

/// OPHOOK_RING_BYTES' ring on a device (docs/devices.md, "OPHOOK_NAN"): the statistics kernel
/// copies the bytes of the tensors of calls the ring may write here, device to device on the
/// program's stream, instead of to the host; the writer fetches them only when a trigger writes
/// the ring. Its memory is reused oldest first, so it holds the latest calls' bytes as the ring
/// holds their records: a record whose bytes were overwritten gets no file and says why. The
/// program's thread takes space (with the GIL); the writer thread fetches (without it); a lock
/// keeps the one from overwriting what the other is copying.
class DeviceRing final : public core::DeviceHeldBytes {
 public:
  /// `capacity` bytes of device memory at `device_address`, copied out through `backend`.
  DeviceRing(Backend& backend, std::uint64_t device_address, std::uint64_t capacity)
      : backend_(backend), base_(device_address), capacity_(capacity) {}

  struct Place {
    std::uint64_t ticket;          // for fetch()
    std::uint64_t device_address;  // where the kernel copies the bytes
  };

  /// What may become of the bytes of an entry the room for a new one would take over.
  enum class Overwrite : std::uint8_t {
    Yes,     // they may go
    Never,   // not now: the new entry gets no room (its launch wrote them)
    NotYet,  // not before the calls they belong to are judged: the new entry gets no room, and
             // `not_yet` says so, so that the caller judges them and asks again
  };

  /// Room for `raw_bytes` that launch `launch` writes, `count` elements widened by `widen` (or
  /// not) when fetched; nullopt when they exceed half the ring or `may_overwrite` refuses. The
  /// room takes over the oldest entries' bytes: `may_overwrite(l)` is asked for the launch `l`
  /// that wrote each of them, so that the engine can let it finish first, refuse (the launch being
  /// assembled would overwrite its own bytes), or have its calls judged first (`not_yet`).
  std::optional<Place> take(std::uint64_t raw_bytes, std::uint64_t count, ElementWidener widen, std::uint64_t launch,
                            const std::function<Overwrite(std::uint64_t)>& may_overwrite, bool& not_yet);

  bool fetch(std::uint64_t ticket, std::byte* dst, std::size_t saved_bytes) noexcept override;

 private:
  struct Entry {
    std::uint64_t ticket, begin, bytes, raw_bytes, count, launch;  // `bytes`: `raw_bytes` rounded up
    ElementWidener widen;
  };

  Backend& backend_;
  const std::uint64_t base_, capacity_;
  std::mutex mutex_;
  std::deque<Entry> entries_;  // oldest first; tickets ascending
  std::uint64_t head_ = 0;     // where the next room begins
  std::uint64_t next_ticket_ = 1;
  bool copy_failed_ = false;  // said once on stderr
};

}  // namespace ophook::py::device_statistics
