#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <utility>
#include <vector>

#include "device/driver/backend.hpp"

namespace ophook::device {
namespace {

namespace k = statistics_kernel;


/// Runs each launch's arithmetic at once on the host (CPU tensors, so it reads them where they are,
/// before the program can change them), but makes its results and their stamps visible only three
/// launches later (OPHOOK_TEST_FAKE_DEVICE_LAG: more), or when waited for: records wait in flight as they do
/// behind a busy GPU, and a result read before it has landed reads a poisoned slot.
class FakeBackend final : public Backend {
 public:
  FakeBackend(bool idle, std::uint64_t lag)
      : lag_(std::max<std::uint64_t>(1, lag)),
        results_(kSlots),
        stamps_(kSlots),
        ring_copies_(kSlots),
        on_device_(kSlots),
        idle_(idle) {}

  const k::Result* results() const override { return results_.data(); }
  const std::uint32_t* ring_copies() const override { return ring_copies_.data(); }

  const std::byte* staging(std::uint64_t bytes, std::uint64_t& device_address) override {
    if (!staging_) staging_ = std::make_unique_for_overwrite<std::byte[]>(bytes);
    device_address = reinterpret_cast<std::uintptr_t>(staging_.get());  // the fake device's memory is the host's
    return staging_.get();
  }

  std::uint64_t ring_memory(std::uint64_t bytes, std::string& /*why*/) override {
    if (!ring_) ring_ = std::make_unique_for_overwrite<std::byte[]>(bytes);
    return reinterpret_cast<std::uintptr_t>(ring_.get());
  }

  bool copy_to_host(std::byte* to, std::uint64_t from, std::size_t n) noexcept override {
    std::memcpy(to, reinterpret_cast<const std::byte*>(from), n);  // NOLINT(performance-no-int-to-ptr): its own memory
    return true;
  }

  bool launch(Kernel kernel, k::LaunchParams& params, std::uint32_t /*blocks*/, void* /*stream*/,
              std::string& /*why*/) override {
    if (kernel == Kernel::CopyChanged) {  // finishes with the launch before it
      for (std::uint32_t j = 0; j < params.jobs; ++j) {
        if (!idle_ && !k::unchanged(params.job[j], on_device_.data())) k::copy_part(params.job[j], 0, 1);
      }
      return true;
    }
    in_flight_.push_back({++launches_, params.stamp, {}});
    params.gate = reinterpret_cast<std::uintptr_t>(&gate_and_verdicts_[0]);
    params.verdicts = reinterpret_cast<std::uintptr_t>(&gate_and_verdicts_[1]);
    const auto summarise = [&](const k::TensorJob& job) { return idle_ ? idle_result(job) : k::summarise_job(job); };
    k::run_on_host(params, summarise, [&](std::uint32_t slot, const k::Result& result, k::RingCopy copied) {
      on_device_[slot] = result;
      in_flight_.back().results.push_back({slot, result, copied});
      std::memset(&results_[slot], 0xFF, sizeof(k::Result));  // not there until it lands
    });
    return true;
  }

  bool arrived(std::uint32_t slot, std::uint64_t stamp) override {
    if (stamps_[slot] != stamp && launches_ >= lag_) land_through(launches_ - lag_);
    return stamps_[slot] == stamp;
  }

  bool wait_until(const std::function<bool()>& landed, void* /*stream*/) override {
    land_through(launches_);
    return landed();
  }

  Event record(void* /*stream*/) override {
    if (free_.empty()) {
      events_.emplace_back();
      free_.push_back(&events_.back());
    }
    auto* event = free_.back();
    free_.pop_back();
    event->launch = launches_;
    return event;
  }

  bool finished(Event event) override {
    const auto launch = static_cast<FakeEvent*>(event)->launch;
    if (launches_ - launch < lag_) return false;
    land_through(launch);
    return true;
  }

  void wait(Event event) override { land_through(static_cast<FakeEvent*>(event)->launch); }
  void recycle(Event event) override { free_.push_back(static_cast<FakeEvent*>(event)); }
  bool capturing(void* /*stream*/) override { return false; }
  int dlpack_device_type() const override { return 1; }  // kDLCPU: no stream to ask for

 private:
  struct FakeEvent {
    std::uint64_t launch = 0;  // the launch count when it was recorded
  };

  /// A job's result, and what became of its copy into the ring.
  struct Landing {
    std::uint32_t slot;
    k::Result result;
    k::RingCopy copied;
  };

  /// A launch whose results have not landed yet.
  struct InFlight {
    std::uint64_t launch = 0;  // its number, from 1
    std::uint64_t stamp = 0;
    std::vector<Landing> results;
  };

  /// What the idle device says of `job`: all finite and zero, its fingerprint its own.
  k::Result idle_result(const k::TensorJob& job) {
    k::Result result{};
    result.finite = job.count;
    result.position = ++idle_reads_;
    return result;
  }

  /// Lands the results and stamps of the launches up to number `launch`.
  void land_through(std::uint64_t launch) {
    while (!in_flight_.empty() && in_flight_.front().launch <= launch) {
      for (const auto& [slot, result, copied] : in_flight_.front().results) {
        results_[slot] = result, ring_copies_[slot] = copied, stamps_[slot] = in_flight_.front().stamp;
      }
      in_flight_.pop_front();
    }
  }

  std::uint64_t lag_ = 3;  // launches a result trails behind (OPHOOK_TEST_FAKE_DEVICE_LAG)
  std::vector<k::Result> results_;
  std::vector<std::uint64_t> stamps_;
  std::vector<std::uint32_t> ring_copies_;
  // The ring's gate, then the launches' verdicts (LaunchParams::gate, verdicts): the fake device's memory.
  std::vector<k::u64> gate_and_verdicts_ = std::vector<k::u64>(1 + k::kVerdictSlots);
  std::vector<k::Result> on_device_;  // each slot's latest result as the device sees it: at once,
                                      // for the copy launch after its statistics launch
  // Left unwritten until used, as device memory is: no page of it is touched before a copy.
  std::unique_ptr<std::byte[]> staging_;
  std::unique_ptr<std::byte[]> ring_;  // the ring's "device memory"
  std::deque<InFlight> in_flight_;
  std::uint64_t launches_ = 0;
  // OPHOOK_TEST_FAKE_DEVICE_IDLE, for the benchmarks of the host's side of the device path: none of
  // a GPU's work (no arithmetic, no copies), so that what a run costs beyond `trace` is what a GPU
  // run costs the program's thread. Its results say every element is finite and zero, with a
  // fingerprint unlike any other (every compared read has changed, every input that shares the
  // ring's copy of the read before it is found changed, and the host pays for both): no NaN is ever
  // found, and the staged bytes, never copied, are not the tensors'.
  bool idle_ = false;
  std::uint64_t idle_reads_ = 0;
  std::deque<FakeEvent> events_;  // a deque keeps their addresses
  std::vector<FakeEvent*> free_;
};

}  // namespace

std::unique_ptr<Backend> make_fake_backend(bool idle, std::uint64_t lag) {
  return std::make_unique<FakeBackend>(idle, lag);
}

}  // namespace ophook::device
