#include <cstdint>
#include <deque>
#include <vector>

#include "torch/cuda/backend.hpp"

namespace ophook::py::device_statistics {
namespace {

namespace k = statistics_kernel;

/// Runs each launch at once on the host (CPU tensors, so the arithmetic reads them where they
/// are, before the program can change them) and lets its event finish only once three more
/// launches were made after it: records wait in flight as they do behind a busy GPU.
class FakeBackend final : public Backend {
 public:
  FakeBackend() : results_(kSlots) {}

  const k::Result* results() const override { return results_.data(); }

  const std::byte* staging(std::uint64_t& device_address) override {
    if (staging_.empty()) staging_.resize(kStagingBytes);
    device_address = reinterpret_cast<std::uintptr_t>(staging_.data());  // the fake device's memory is the host's
    return staging_.data();
  }

  bool launch(k::LaunchParams& params, std::uint32_t /*blocks*/, void* /*stream*/, std::string& /*why*/) override {
    for (std::uint32_t j = 0; j < params.jobs; ++j) results_[params.job[j].slot] = k::summarise_job(params.job[j]);
    ++launches_;
    return true;
  }

  Event record(void* /*stream*/) override {
    if (free_.empty()) {
      events_.emplace_back();
      free_.push_back(&events_.back());
    }
    auto* event = free_.back();
    free_.pop_back();
    *event = launches_;
    return event;
  }

  bool finished(Event event) override { return launches_ - *static_cast<std::uint64_t*>(event) >= kLag; }
  void wait(Event event) override { *static_cast<std::uint64_t*>(event) = launches_ - kLag; }
  void recycle(Event event) override { free_.push_back(static_cast<std::uint64_t*>(event)); }
  bool capturing(void* /*stream*/) override { return false; }
  int dlpack_device_type() const override { return 1; }  // kDLCPU: no stream to ask for

 private:
  static constexpr std::uint64_t kLag = 3;  // launches a result trails behind
  std::vector<k::Result> results_;
  std::vector<std::byte> staging_;
  std::uint64_t launches_ = kLag;           // so that "launches_ - kLag" never wraps
  std::deque<std::uint64_t> events_;        // the launch count at each event; a deque keeps their addresses
  std::vector<std::uint64_t*> free_;
};

}  // namespace

std::unique_ptr<Backend> make_fake_backend() { return std::make_unique<FakeBackend>(); }

}  // namespace ophook::py::device_statistics
