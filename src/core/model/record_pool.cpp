#include "ophook/model/record_pool.hpp"

#include <atomic>
#include <utility>

namespace ophook::core {
namespace {

// Idle records beyond this many bytes are freed rather than pooled.
constexpr std::size_t kMaxPooledBytes = 16u << 20;
constexpr std::size_t kTypicalValueBytes = 128;
constexpr std::size_t kTypicalArrays = 4;

// The shared chain: only the writer pushes; program threads take it whole with one exchange, so no
// node is ever popped alone (no ABA). A pusher never reads the head it links to: that record may
// already belong to (or have been freed by) the thread that took the chain.
std::atomic<CallRecord*> shared_chain{nullptr};
// Bytes on the shared chain, a soft cap: take() zeroes it just after taking the chain, so a record
// pushed between the two goes uncounted until the next take.
std::atomic<std::size_t> shared_bytes{0};

/// This thread's records, taken from the shared chain. Trivially destructible, so that a take()
/// reads it with one thread-local lookup (a call to __tls_get_addr in a shared library; a
/// variable with a destructor costs a second one, for its guard).
thread_local constinit CallRecord* local_head = nullptr;

/// Frees this thread's records when it ends; set up when the thread first takes the shared chain.
struct LocalChainOwner {
  ~LocalChainOwner() {
    while (local_head != nullptr) delete std::exchange(local_head, local_head->next_in_chain);
  }
};

}  // namespace

RecordPtr RecordPool::take() {
  // One thread-local lookup: the compiler repeated it for every use of the variable.
  CallRecord*& head = local_head;
  if (head == nullptr && shared_chain.load(std::memory_order_relaxed) != nullptr) {
    thread_local LocalChainOwner owner;  // constructed on this thread's first pass only
    (void)owner;
    head = shared_chain.exchange(nullptr, std::memory_order_acquire);
    if (head != nullptr) shared_bytes.store(0, std::memory_order_relaxed);
  }
  if (head == nullptr) {
    // The writer is behind (or this is the first call): a fresh record, sized for a typical
    // call at once rather than grown by doubling.
    auto fresh = std::make_unique<CallRecord>();
    fresh->values.reserve(kTypicalValueBytes);
    fresh->arrays.reserve(kTypicalArrays);
    return fresh;
  }
  RecordPtr record(std::exchange(head, head->next_in_chain));
  record->next_in_chain = nullptr;
  return record;
}

void RecordPool::give(RecordPtr record) noexcept {
  // A full pool frees the record as it is: clearing it first (most of give()'s cost) would be
  // wasted.
  if (shared_bytes.load(std::memory_order_relaxed) >= kMaxPooledBytes) return;
  record->clear_for_reuse();
  const auto bytes = record->footprint();
  if (shared_bytes.load(std::memory_order_relaxed) + bytes > kMaxPooledBytes) return;  // freed here
  CallRecord* node = record.release();
  CallRecord* head = shared_chain.load(std::memory_order_relaxed);
  do {
    node->next_in_chain = head;
  } while (!shared_chain.compare_exchange_weak(head, node, std::memory_order_release, std::memory_order_relaxed));
  shared_bytes.fetch_add(bytes, std::memory_order_relaxed);
}

}  // namespace ophook::core
