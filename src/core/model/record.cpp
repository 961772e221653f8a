#include "ophook/model/record.hpp"

#include "ophook/capture/strided_copy.hpp"

#include <algorithm>
#include <new>

namespace ophook::core {

std::string_view to_string(Level level) {
  switch (level) {
    case Level::Ufunc: return "ufunc";
    case Level::UfuncMethod: return "ufunc_method";
    case Level::ArrayFunction: return "array_function";
    case Level::TorchFunction: return "torch_function";
    case Level::TorchDispatch: return "torch_dispatch";
    case Level::Compiled: return "compiled";
    case Level::Collective: return "collective";
  }
  return "unknown";
}

std::string_view framework_of(Level level) {
  return level == Level::TorchFunction || level == Level::TorchDispatch || level == Level::Compiled ||
                 level == Level::Collective
             ? "torch"
             : "numpy";
}

std::string_view to_string(Phase phase) {
  switch (phase) {
    case Phase::Forward: return "forward";
    case Phase::Backward: return "backward";
    case Phase::Optimizer: return "optimizer";
    case Phase::None: break;
  }
  return "";
}

namespace {
// Value and error buffers up to this size stay with a recycled record; bigger ones are freed.
constexpr std::size_t kKeptBufferBytes = 4096;
// Array buffers up to this size stay with their slot; bigger ones go to CaptureBufferPool, which
// keeps no smaller ones. Freed on the writer and allocated again on the program's thread, buffers
// of a few KiB make the two threads wait on malloc's arena lock and fault in fresh pages
// (docs/performance.md, "Figures behind the code"). The pool of idle records bounds what they hold
// (RecordPool).
constexpr std::size_t kKeptArrayBufferBytes = CaptureBufferPool::kMinBytes;
// Array slots a recycled record keeps (each with its shape and small data buffers).
constexpr std::size_t kKeptArraySlots = 16;
}  // namespace

void SharedCopy::widen_now() const noexcept {
  std::lock_guard lock(widen_mutex_);
  if (widened_.load(std::memory_order_relaxed)) return;
  const std::size_t nbytes = capacity_;
  const std::byte* narrow = narrow_->bytes();
  SpareBuffer buffer = CaptureBufferPool::take(nbytes);
  if (!buffer.data) buffer = {std::unique_ptr<std::byte[]>(new (std::nothrow) std::byte[nbytes]), nbytes};
  if (buffer.data && narrow != nullptr) {
    widen_(buffer.data.get(), narrow, count_);
    owned_ = std::move(buffer.data);
    capacity_ = buffer.capacity;
    bytes_ = owned_.get();
  }
  narrow_.reset();  // its range goes back to the device's staging memory now
  widened_.store(true, std::memory_order_release);
}

ArrayStats SharedCopy::stats(std::string_view descr, std::size_t nbytes) const {
  std::lock_guard lock(stats_mutex_);
  if (!stats_ || stats_descr_ != descr) {
    const std::byte* data = bytes();
    if (data == nullptr && nbytes > 0) throw std::bad_alloc();  // no memory to widen them into
    stats_ = compute_stats(descr, data, nbytes);
    stats_descr_ = descr;
  }
  return *stats_;
}

void ArrayCapture::set_strides(std::span<const std::int64_t> element_strides) {
  strides.clear();
  if (element_strides.size() != shape.size() || element_count(shape) == 0) return;  // no element, no layout
  if (!is_c_order(shape, element_strides)) strides.assign(element_strides.begin(), element_strides.end());
}

std::byte* ArrayCapture::reserve_data(std::size_t n, SpareBuffer spare) {
  if (spare.data) {
    data = std::move(spare.data);
    data_capacity = spare.capacity;
  } else if (!data || data_capacity < n) {
    data = std::make_unique_for_overwrite<std::byte[]>(n);
    data_capacity = n;
  }
  nbytes = n;
  return data.get();
}

void ArraySlots::clear(std::size_t kept_buffer_bytes, std::size_t kept_slots) noexcept {
  for (std::size_t i = 0; i < used_; ++i) {
    auto& a = slots_[i];
    // A shared copy's size says nothing of `data`, which the slot kept from an earlier use.
    const bool bytes_in_data = !std::exchange(a.shared, nullptr);
    if (!a.data) continue;  // `trace`: the slot is only read here
    if (a.data_capacity == 0 && bytes_in_data) a.data_capacity = a.nbytes;  // filled without reserve_data
    if (a.data_capacity > kept_buffer_bytes) CaptureBufferPool::give(std::move(a.data), std::exchange(a.data_capacity, 0));
  }
  if (slots_.size() > kept_slots) {
    slots_.erase(slots_.begin() + static_cast<std::ptrdiff_t>(kept_slots), slots_.end());
  }
  used_ = 0;
}

std::size_t ArraySlots::footprint() const noexcept {
  std::size_t bytes = slots_.capacity() * sizeof(ArrayCapture);
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    const auto& a = slots_[i];
    // Bytes held on a device count as what they will take on the host once fetched.
    const auto data_bytes = i < used_ ? std::max({a.nbytes, a.data_capacity, a.on_device.saved_bytes}) : a.data_capacity;
    bytes += a.shape.capacity() * sizeof(std::int64_t) + data_bytes;
  }
  return bytes;
}

std::size_t CallRecord::footprint() const {
  return sizeof(CallRecord) + values.capacity() + error.capacity() + arrays.footprint();
}

void CallRecord::clear_for_reuse() noexcept {
  seq = 0, op_id = 0, phase = Phase::None;
  overridden = has_error = nonfinite_new = nonfinite_scalar_input = nonfinite_expected = ring_trigger = false;
  grad_disabled = false;
  depth = 0, parent = kNoParent, step = 0, t_ns = dur_ns = 0, tid = 0;
  source_file_id = source_func_id = 0, source_line = 0, module_id = 0;
  forward_file_id = forward_func_id = 0, forward_line = 0;
  collective = {};
  kwargs_offset = outputs_offset = 0;
  error.clear();
  if (error.capacity() > kKeptBufferBytes) std::string().swap(error);
  values.clear();
  if (values.capacity() > kKeptBufferBytes) std::vector<std::uint8_t>().swap(values);
  arrays.clear(kKeptArrayBufferBytes, kKeptArraySlots);
  next_in_chain = nullptr;
  queued_bytes = 0;
}

}  // namespace ophook::core
