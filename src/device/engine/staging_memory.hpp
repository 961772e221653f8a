#pragma once
#include <sys/types.h>

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>

#include "ophook/model/record.hpp"

/// Where `dump`'s bytes wait in the host memory the device writes (Backend::staging), and stay
/// until written: the device copies a tensor into a range of it, and the range becomes the
/// records' copy of those bytes (core::SharedCopy, lent), given back when the last record holding
/// it is written. So the program's thread never copies them again on the host: the writer reads
/// them where the device put them (docs/devices.md, "dump").
namespace ophook::device {

/// The ranges of one device's staging memory. Ranges are taken on the program's thread (the caller
/// serialises those calls) and given back from any thread (the writer's, its helpers'), in any order: a weight's copy that
/// records keep sharing (its bytes unchanged step after step) holds its range while later ones
/// come and go, so free ranges are kept by offset, first fit, neighbours merged.
class StagingMemory : public std::enable_shared_from_this<StagingMemory> {
 public:
  /// `size` bytes at `host`, which the device writes at `device_address`.
  StagingMemory(const std::byte* host, std::uint64_t device_address, std::uint64_t size);

  struct Range {
    std::shared_ptr<const core::SharedCopy> copy;  // null: no room
    std::uint64_t device_address = 0;              // where the device writes its bytes
  };

  /// A range of `n` bytes (16-byte aligned) as a copy to be lent to records: its bytes are the
  /// device's to write until its launch has finished, and the range is free again when the last
  /// holder of the copy lets it go. No copy when no free range is large enough.
  Range take(std::uint64_t n);

  /// Waits (with the caller's lock released: the writer gives ranges back) until a range of `n` bytes is free, while `more_coming()` says
  /// that copies are still on their way back (records not yet written). False when none is free
  /// and none is coming: the ranges are held by what the program's thread itself holds (the
  /// call's own tensors; records a host ring keeps). Then, until a range comes back, false at once
  /// when none is coming, so that each tensor met meanwhile does not wait again for nothing.
  bool wait_for_room(std::uint64_t n, const std::function<bool()>& more_coming);

  std::uint64_t size() const noexcept { return size_; }

 private:
  static std::uint64_t aligned(std::uint64_t n) noexcept { return (n + 15) & ~std::uint64_t{15}; }
  using FreeRanges = std::map<std::uint64_t, std::uint64_t>;  // offset -> size
  FreeRanges::iterator first_fit(std::uint64_t n);  // the first free range of `n` bytes or more; mutex_ held
  void give_back(std::uint64_t offset, std::uint64_t n) noexcept;

  const std::byte* host_;
  std::uint64_t device_address_, size_;
  pid_t owner_;  // a forked child gives nothing back: the parent's writer may have held mutex_
  std::mutex mutex_;
  std::condition_variable returned_;
  FreeRanges free_;
  bool stuck_ = false;  // a wait found nothing coming; no range has come back since
};

}  // namespace ophook::device
