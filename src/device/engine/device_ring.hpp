#pragma once
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>

#include "device/kernel/statistics_kernel.hpp"
#include "ophook/model/record.hpp"
#include "ophook/stats/element_widener.hpp"

namespace ophook::device {

class Backend;

/// OPHOOK_RING_BYTES' ring on a device (docs/devices.md, "OPHOOK_NAN"): the statistics kernel
/// copies the bytes of the tensors of calls the ring may write here, device to device on the
/// program's stream, instead of to the host; the writer fetches them only when a trigger writes
/// the ring. Its memory is reused oldest first, so it holds the latest calls' bytes as the ring
/// holds their records: a record whose bytes were overwritten gets no file and says why.
/// The host hands rooms out without waiting for the device: a room may take over the bytes of
/// calls not judged yet, which the device's gate keeps where one of them may be the culprit
/// (docs/design.md, "the ring's gate"): the entries a room takes over are kept aside until it
/// says what it copied (each entry learns that from its launch's result: settle), and stay while
/// the rooms over them copied nothing (behind a closed gate, the culprit's and the calls' before it).
/// The program's thread takes space and settles (its calls serialised by the caller); the writer
/// thread fetches at the same time; a lock keeps the one from overwriting what the other is copying.
class DeviceRing final : public core::DeviceHeldBytes {
 public:
  /// `capacity` bytes of device memory at `device_address`, copied out through `backend`.
  DeviceRing(Backend& backend, std::uint64_t device_address, std::uint64_t capacity)
      : backend_(backend), base_(device_address), capacity_(capacity) {}

  struct Place {
    std::uint64_t ticket;          // for settle() and fetch()
    std::uint64_t device_address;  // where the kernel copies the bytes
  };

  /// What may become of the bytes of an entry the room for a new one would take over.
  enum class Overwrite : std::uint8_t {
    Yes,    // the room may take them: they are kept aside until it says what it copied
    Never,  // not now: the new entry gets no room (its launch wrote them)
  };

  /// Room for `raw_bytes` that launch `launch` writes, `count` elements widened by `widen` (or
  /// not) when fetched; nullopt when they exceed half the ring or `may_overwrite` refuses. The
  /// room takes over the oldest entries' bytes, kept aside: `may_overwrite(l)` is asked for the
  /// launch `l` that wrote each of them, so that the engine can let it finish first (on another
  /// stream) or refuse (the launch being assembled would overwrite its own bytes).
  std::optional<Place> take(std::uint64_t raw_bytes, std::uint64_t count, core::ElementWidener widen, std::uint64_t launch,
                            const std::function<Overwrite(std::uint64_t)>& may_overwrite);

  /// Entry `ticket`'s launch has copied its bytes, or not, or part of them (its result is in):
  /// the entries kept aside that it copied over are gone. False when it was settled already.
  bool settle(std::uint64_t ticket, statistics_kernel::RingCopy copied);

  /// Entry `ticket`'s bytes are not copied after all (its call outgrew OPHOOK_RING_BYTES): settled
  /// as copied nothing, its room given back when it is the newest, so that the next room begins
  /// where it began.
  void withdraw(std::uint64_t ticket);

  /// The entries kept aside that rooms copied over go (those at the front of the list).
  void forget_overwritten();

  bool fetch(std::uint64_t ticket, std::byte* dst, std::size_t saved_bytes) noexcept override;

 private:
  struct Entry {
    std::uint64_t ticket = 0, begin = 0, bytes = 0, raw_bytes = 0, count = 0, launch = 0;  // `bytes`: `raw_bytes` rounded up
    core::ElementWidener widen = nullptr;
    bool settled = false;
    statistics_kernel::RingCopy copied = statistics_kernel::kCopiedAll;  // once settled
    std::uint64_t first_kept = 0, last_kept = 0;  // the tickets of the entries its room kept aside
    std::uint64_t head_before = 0;  // where the head was before its room
    bool gone = false;  // kept aside, then overwritten by a room that copied: left for forget_overwritten
    bool under_uncopied = false;  // kept aside under a room that copied nothing (counted in survivors_)
    bool overlaps(const Entry& other) const { return begin < other.begin + other.bytes && other.begin < begin + bytes; }
  };

  static bool by_ticket(const Entry& a, const Entry& b) { return a.ticket < b.ticket; }

  /// The entry `ticket` (in entries_ or kept_), null when it is gone.
  Entry* find(std::uint64_t ticket);

  /// settle(), the lock held.
  bool settle_locked(std::uint64_t ticket, statistics_kernel::RingCopy copied);

  /// Marks an entry of kept_ overwritten.
  void mark_gone(Entry& kept);

  /// Whether the bytes of `kept`, an entry kept aside, are still there: every newer room over
  /// them copied nothing (the gate was closed). An entry of entries_ has no newer room over it.
  bool left_uncopied(const Entry& kept) const;

  Backend& backend_;
  const std::uint64_t base_, capacity_;
  std::mutex mutex_;
  std::deque<Entry> entries_;  // the latest at each place, oldest first; tickets ascending
  std::deque<Entry> kept_;     // taken over by newer rooms; tickets ascending
  // Entries of kept_ under a room that copied nothing, not gone: only while there are any may one
  // lie under a newer room besides the one that kept it aside, and does a room that copied look
  // through all of kept_ for what it overwrote, not just at those it kept aside itself.
  std::uint64_t survivors_ = 0;
  std::uint64_t head_ = 0;     // where the next room begins
  std::uint64_t next_ticket_ = 1;
  bool copy_failed_ = false;  // said once on stderr
};

}  // namespace ophook::device
