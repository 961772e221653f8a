#include "ophook/record.hpp"

#include <algorithm>

namespace ophook::core {

std::string_view to_string(Level level) {
  switch (level) {
    case Level::Ufunc: return "ufunc";
    case Level::UfuncMethod: return "ufunc_method";
    case Level::ArrayFunction: return "array_function";
    case Level::TorchFunction: return "torch_function";
    case Level::TorchDispatch: return "torch_dispatch";
  }
  return "unknown";
}

std::string_view framework_of(Level level) {
  return level == Level::TorchFunction || level == Level::TorchDispatch ? "torch" : "numpy";
}

std::string_view to_string(Phase phase) {
  switch (phase) {
    case Phase::Forward: return "forward";
    case Phase::Backward: return "backward";
    case Phase::None: break;
  }
  return "";
}

namespace {
// Buffers up to this size stay with a recycled record; bigger ones are freed, so that the pool of
// idle records never holds more than a few KiB each.
constexpr std::size_t kKeptBufferBytes = 4096;
// Cleared array slots a recycled record keeps (each with its shape and small data buffers).
constexpr std::size_t kKeptSpareArrays = 16;
}  // namespace

std::byte* ArrayCapture::reserve_data(std::size_t n) {
  if (!data || data_capacity < n) {
    data = std::make_unique_for_overwrite<std::byte[]>(n);
    data_capacity = n;
  }
  nbytes = n;
  return data.get();
}

std::size_t CallRecord::footprint() const {
  std::size_t bytes = sizeof(CallRecord) + values.capacity() + error.capacity() +
                      (arrays.capacity() + spare_arrays_.capacity()) * sizeof(ArrayCapture);
  for (const auto& a : arrays) bytes += a.shape.capacity() * 8 + std::max(a.nbytes, a.data_capacity);
  for (const auto& a : spare_arrays_) bytes += a.shape.capacity() * 8 + a.data_capacity;
  return bytes;
}

ArrayCapture& CallRecord::new_array() {
  if (spare_arrays_.empty()) return arrays.emplace_back();
  auto& slot = arrays.emplace_back(std::move(spare_arrays_.back()));
  spare_arrays_.pop_back();
  return slot;
}

void CallRecord::clear_for_reuse() noexcept {
  seq = 0, op_id = 0, phase = Phase::None, overridden = has_error = nonfinite_new = nonfinite_scalar_input = false;
  depth = 0, t_ns = dur_ns = 0, tid = 0;
  source_file_id = source_func_id = 0, source_line = 0, module_id = 0;
  kwargs_offset = outputs_offset = 0;
  error.clear();
  if (error.capacity() > kKeptBufferBytes) std::string().swap(error);
  values.clear();
  if (values.capacity() > kKeptBufferBytes) std::vector<std::uint8_t>().swap(values);
  for (auto& a : arrays) {
    if (a.data && a.data_capacity == 0) a.data_capacity = a.nbytes;  // filled without reserve_data
    if (a.data_capacity > kKeptBufferBytes) a.data.reset(), a.data_capacity = 0;
    a.shape.clear();
    a.dtype_id = a.device_id = a.no_data_reason_id = 0;
    a.alias_of = -1;
    a.captured = false;
    a.nbytes = 0;
  }
  if (spare_arrays_.empty()) {
    // The usual case (each call uses the slots the last one left): the cleared slots become the
    // spares where they lie. Moving them one by one wrote into memory the program's thread had
    // just written, a cache miss per slot on the writer (7% of its time in a long trace run).
    arrays.swap(spare_arrays_);
    if (spare_arrays_.size() > kKeptSpareArrays) spare_arrays_.resize(kKeptSpareArrays);
    arrays.reserve(spare_arrays_.size());  // here, not by growth on the program's thread
  } else {
    spare_arrays_.reserve(std::min(kKeptSpareArrays, spare_arrays_.size() + arrays.size()));
    for (auto& a : arrays) {
      if (spare_arrays_.size() < kKeptSpareArrays) spare_arrays_.push_back(std::move(a));
    }
    arrays.clear();
  }
  next_in_chain = nullptr;
  queued_bytes = 0;
}

}  // namespace ophook::core
