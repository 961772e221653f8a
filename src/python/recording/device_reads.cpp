#include "recording/device_reads.hpp"

namespace ophook::py {
namespace {
const DeviceReads* registered = nullptr;
}  // namespace

const DeviceReads* device_reads() noexcept { return registered; }

void register_device_reads(const DeviceReads& reads) noexcept { registered = &reads; }

void resolve_held_device_reads() {
  if (registered != nullptr) registered->resolve_held();
}

}  // namespace ophook::py
