#include "recording/value_capture.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "ophook/stats/stats.hpp"
#include "thread_state.hpp"

namespace ophook::py {
namespace {

constexpr int kMaxDepth = 8;
constexpr Py_ssize_t kMaxItems = 1000;
constexpr Py_ssize_t kMaxRepr = 200;

std::vector<ArrayLikeCapturer>& capturers() {
  static std::vector<ArrayLikeCapturer> list;
  return list;
}
ArrayLikeCapturer numpy_capturer = nullptr;

}  // namespace

void register_array_like_capturer(ArrayLikeCapturer capturer) {
  auto& list = capturers();
  if (std::find(list.begin(), list.end(), capturer) == list.end()) list.push_back(capturer);
}

void set_numpy_capturer(ArrayLikeCapturer capturer) { numpy_capturer = capturer; }

ValueCapture::ValueCapture(core::CallRecord& record, core::Recorder& recorder, bool check_only, bool copy_inputs)
    : record_(record), recorder_(recorder), writer_(record.values),
      copy_data_(recorder.config().mode != core::Mode::Trace && (!check_only || copy_inputs)),
      check_only_(check_only),
      // Not for the empty family: its outputs are never judged, so reading them (on a GPU, a
      // launch whose results are then given up) would be for nothing.
      checks_in_place_(recorder.config().nan != core::NanPolicy::Off &&
                       (recorder.config().mode == core::Mode::Trace || check_only) &&
                       !recorder.op(record.op_id).uninitialized_output),
      stats_in_place_(recorder.config().mode == core::Mode::Stats && !check_only) {}

void ValueCapture::stats_in_place_of(core::ArrayCapture& array, const std::byte* data, std::size_t nbytes) {
  const std::string_view descr = recorder_.dtype(array.dtype_id).descr;  // interned: outlives the batch
  if (nbytes >= core::StatsBatch::kSharedBytes) {
    auto& batch = in_outputs_ ? output_stats_ : input_stats_;
    if (!batch) batch.emplace();
    if (batch->add(descr, data, nbytes, static_cast<std::uint32_t>(record_.arrays.size() - 1))) return;
  }
  array.given_stats = core::compute_stats(descr, data, nbytes);
}

void ValueCapture::inputs_captured(bool inputs_may_change) {
  if (!input_stats_) return;
  input_stats_->start();
  if (inputs_may_change) input_stats_->finish();
}

void ValueCapture::finish_stats_in_place() {
  if (output_stats_) output_stats_->start();
  // Both threads on what is left of both batches before either waits.
  for (auto* batch : {&input_stats_, &output_stats_}) {
    if (*batch) (*batch)->run_open_jobs();
  }
  for (auto* batch : {&input_stats_, &output_stats_}) {
    if (!*batch) continue;
    (*batch)->finish();
    (*batch)->for_each_result([&](std::uint32_t index, const core::ArrayStats& stats) { record_.arrays[index].given_stats = stats; });
  }
}

void ValueCapture::begin_outputs() {
  record_.outputs_offset = offset();
  in_outputs_ = true;
  if (check_only_) copy_data_ = false;  // inputs copied before the call; outputs are read in place
  seen_count_ = 0;
  overflow_.clear();
}

void ValueCapture::note_block(std::uint32_t index, const std::byte* first, std::size_t nbytes, std::uint32_t dtype_id) {
  if (block_count_ < kMaxBlocks) blocks_[block_count_++] = {index, first, nbytes, dtype_id};
}

const ValueCapture::Block* ValueCapture::block_holding(const std::byte* low, const std::byte* end,
                                                       std::uint32_t dtype_id) const {
  for (std::size_t i = 0; i < block_count_; ++i) {
    const auto& block = blocks_[i];
    if (block.dtype_id == dtype_id && low >= block.first && end <= block.first + block.nbytes) return &block;
  }
  return nullptr;
}

std::int32_t ValueCapture::alias_of(PyObject* object) const {
  for (std::size_t i = 0; i < seen_count_; ++i) {
    if (seen_[i].first == object) return static_cast<std::int32_t>(seen_[i].second);
  }
  for (const auto& [o, index] : overflow_) {
    if (o == object) return static_cast<std::int32_t>(index);
  }
  return -1;
}

void ValueCapture::note_array(PyObject* object, std::uint32_t index) {
  if (seen_count_ < kInlineSeen) {
    seen_[seen_count_++] = {object, index};
  } else {
    overflow_.emplace_back(object, index);
  }
  writer_.array(index);
}

std::uint32_t ValueCapture::add_array(PyObject* object, core::ArrayCapture array) {
  const auto index = static_cast<std::uint32_t>(record_.arrays.size());
  record_.arrays.push_back(std::move(array));
  note_array(object, index);
  return index;
}

core::ArrayCapture& ValueCapture::new_array(PyObject* object) {
  const auto index = static_cast<std::uint32_t>(record_.arrays.size());
  auto& slot = record_.new_array();
  note_array(object, index);
  return slot;
}

void ValueCapture::value(PyObject* object) { value_at_depth(object, 0); }

void ValueCapture::value_at_depth(PyObject* object, int depth) {
  if (object == Py_None) return writer_.null();
  if (PyBool_Check(object)) return writer_.boolean(object == Py_True);
  if (PyLong_CheckExact(object)) {
    int overflow = 0;
    const long long v = PyLong_AsLongLongAndOverflow(object, &overflow);
    if (!overflow && !(v == -1 && PyErr_Occurred())) return writer_.integer(v);
    PyErr_Clear();
    return other(object);
  }
  if (PyFloat_CheckExact(object)) {
    const double v = PyFloat_AS_DOUBLE(object);
    if (!in_outputs_ && !std::isfinite(v)) record_.nonfinite_scalar_input = true;
    return writer_.real(v);
  }
  if (PyUnicode_CheckExact(object)) {
    Py_ssize_t size = 0;
    if (const char* text = PyUnicode_AsUTF8AndSize(object, &size)) return writer_.str({text, size_t(size)});
    PyErr_Clear();
    return other(object);
  }
  if ((PyList_CheckExact(object) || PyTuple_CheckExact(object)) && depth < kMaxDepth) return list(object, depth);
  if (numpy_capturer != nullptr && numpy_capturer(*this, object)) return;
  for (auto capturer : capturers()) {
    if (capturer(*this, object)) return;
  }
  other(object);
}

void ValueCapture::list(PyObject* sequence, int depth) {
  const Py_ssize_t n = PySequence_Fast_GET_SIZE(sequence);
  PyObject** items = PySequence_Fast_ITEMS(sequence);
  if (PyTuple_CheckExact(sequence)) {
    writer_.begin_tuple();  // replay rebuilds a tuple: numpy's axis=(0, 1) refuses a list
  } else {
    writer_.begin_list();
  }
  for (Py_ssize_t i = 0; i < std::min(n, kMaxItems); ++i) value_at_depth(items[i], depth + 1);
  if (n > kMaxItems) writer_.other("truncated", std::to_string(n - kMaxItems) + " more items");
  writer_.end_list();
}

void ValueCapture::other(PyObject* object) {
  const char* kind = Py_TYPE(object)->tp_name;
  BusyScope busy;  // a user __repr__ may call NumPy itself
  PyRef repr = PyRef::steal(PyObject_Repr(object));
  Py_ssize_t size = 0;
  const char* text = repr ? PyUnicode_AsUTF8AndSize(repr.get(), &size) : nullptr;
  if (text == nullptr) {
    PyErr_Clear();
    return writer_.other(kind, "<unrepresentable>");
  }
  std::string_view view(text, static_cast<size_t>(size));
  if (size > kMaxRepr) {
    // Cut at a character boundary (UTF-8 continuation bytes are 10xxxxxx).
    std::size_t cut = kMaxRepr;
    while (cut > 0 && (static_cast<unsigned char>(view[cut]) & 0xC0) == 0x80) --cut;
    view = view.substr(0, cut);
  }
  writer_.other(kind, view);
}

}  // namespace ophook::py
