#include "torch/devices/device_readback.hpp"

#include <unordered_map>
#include <utility>
#include <vector>

#include "device/engine/device_engines.hpp"
#include "torch/devices/kernel_results.hpp"
#include "torch/devices/torch_readback.hpp"

namespace ophook::py::device_readback {
namespace {

// Never destroyed: it may hold Python references, which must not be released once Python has
// finalised (at exit, records still held are counted as dropped by the recorder).
// By record (being built or held; no empty list), each record's in the order they were captured:
// a GPU far behind the program leaves a thousand records held, and a list of all their arrays
// scanned per record made the host's time per call grow with them.
auto& expected = *new std::unordered_map<const core::CallRecord*, std::vector<Expected>>;
std::size_t snapshot_bytes = 0;   // of the entries in `expected`
std::size_t generic_entries = 0;  // entries of `expected` torch reads back (not the kernel)

void account(const Expected& entry) {
  if (entry.readback.bytes) snapshot_bytes += entry.readback.nbytes;
  if (entry.readback.pending) ++generic_entries;
}

void unaccount(const Expected& entry) {
  if (entry.readback.bytes) snapshot_bytes -= entry.readback.nbytes;
  if (entry.readback.pending) --generic_entries;
}

}  // namespace

std::vector<Expected> take_expected(const core::CallRecord& record) {
  const auto it = expected.find(&record);
  if (it == expected.end()) return {};
  std::vector<Expected> taken = std::move(it->second);
  expected.erase(it);
  for (const auto& entry : taken) unaccount(entry);
  return taken;
}

const std::vector<Expected>& entries_of(const core::CallRecord& record) {
  static const std::vector<Expected> none;
  const auto it = expected.find(&record);
  return it == expected.end() ? none : it->second;
}

void expect(core::CallRecord& record, std::uint32_t index, Readback readback) {
  auto& entries = expected[&record];
  entries.push_back({&record, index, std::move(readback)});
  account(entries.back());
}

bool awaited(const core::CallRecord& record) noexcept { return expected.contains(&record); }

void withdraw_ring_copies(const core::CallRecord& record) {
  const auto& entries = entries_of(record);
  for (auto it = entries.rbegin(); it != entries.rend(); ++it) {  // newest first: their rooms go back
    if (it->readback.slot.ring_ticket != 0) device::withdraw_ring_copy(it->readback.slot);
  }
}

void read_back(std::vector<Expected>& batch) {
  if (batch.empty()) return;
  // The kernel's results first: waited for, no Python.
  std::vector<Expected> through_torch;
  for (auto& entry : batch) {
    if (!entry.readback.slot.valid()) {
      through_torch.push_back(std::move(entry));
      continue;
    }
    device::wait(entry.readback.slot);
    take_kernel_result(entry);
  }
  read_back_through_torch(through_torch);
}

void resolve(core::CallRecord& record) {
  if (!awaited(record)) return;
  auto batch = take_expected(record);
  read_back(batch);
}

void drop_expected(const core::CallRecord& record) noexcept {
  for (const auto& entry : take_expected(record)) {
    if (entry.readback.slot.valid()) device::abandon(entry.readback.slot);
  }
}

std::size_t snapshot_bytes_waiting() noexcept { return snapshot_bytes; }
std::size_t torch_reads_waiting() noexcept { return generic_entries; }

void forget_expected_after_fork() noexcept {
  for (auto& [record, entries] : expected) {
    for (auto& entry : entries) (void)entry.readback.pending.release();
  }
  expected.clear();
  snapshot_bytes = 0;
  generic_entries = 0;
}

}  // namespace ophook::py::device_readback
