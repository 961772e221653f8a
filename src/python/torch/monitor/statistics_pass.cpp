#include "torch/monitor/statistics_pass.hpp"

#include <optional>
#include <vector>

#include <dlpack/dlpack.h>

#include "ophook/stats/norms.hpp"
#include "torch/tensors/dense_view.hpp"

namespace pb = pybind11;

namespace ophook::py::monitor {
namespace {

/// A contiguous CPU float32/float64 tensor's memory, valid while the tensor lives.
struct FloatArray {
  std::byte* data = nullptr;
  std::size_t count = 0;
  bool wide = false;  // float64
};

std::optional<FloatArray> float_array(pb::handle tensor) {
  if (tensor.is_none()) return std::nullopt;
  DLTensor view;
  if (!read_any_device_view(tensor.ptr(), view)) return std::nullopt;
  if (view.device.device_type != kDLCPU || view.dtype.code != kDLFloat || view.dtype.lanes != 1 ||
      (view.dtype.bits != 32 && view.dtype.bits != 64)) {
    return std::nullopt;
  }
  std::size_t count = 1;
  for (int d = view.ndim - 1; d >= 0; --d) {
    if (view.shape[d] != 1 && view.strides != nullptr && view.strides[d] != static_cast<std::int64_t>(count)) {
      return std::nullopt;
    }
    count *= static_cast<std::size_t>(view.shape[d]);
  }
  // A negative bit (torch's lazy negation) leaves the memory holding the values' negatives: the
  // torch ops read it right.
  if (tensor.attr("is_neg")().ptr() != Py_False) return std::nullopt;
  return FloatArray{static_cast<std::byte*>(view.data) + view.byte_offset, count, view.dtype.bits == 64};
}

bool same_kind(const FloatArray& a, const FloatArray& b) { return a.count == b.count && a.wide == b.wide; }

core::NormStats norm_stats(const FloatArray& a) {
  return a.wide ? core::norm_stats_f64(a.data, a.count) : core::norm_stats_f32(a.data, a.count);
}

pb::tuple as_tuple(const core::NormStats& s) { return pb::make_tuple(s.squares, s.min, s.max, s.nan, s.inf); }

struct Job {
  FloatArray weight;
  std::optional<FloatArray> grad, before;
  core::NormStats weight_stats, grad_stats;
  double update_squares = 0;
};

}  // namespace

pb::list parameter_statistics(const pb::list& weights, const pb::list& grads, const pb::list& befores) {
  std::vector<std::optional<Job>> jobs;
  for (std::size_t i = 0; i < pb::len(weights); ++i) {
    const auto weight = float_array(weights[i]), grad = float_array(grads[i]), before = float_array(befores[i]);
    const bool readable = weight && (grads[i].is_none() || (grad && same_kind(*grad, *weight))) &&
                          (befores[i].is_none() || (before && same_kind(*before, *weight)));
    if (readable) {
      jobs.emplace_back(Job{*weight, grad, before, {}, {}, 0});
    } else {
      jobs.emplace_back();
    }
  }
  {
    pb::gil_scoped_release release;
    for (auto& job : jobs) {
      if (!job) continue;
      job->weight_stats = norm_stats(job->weight);
      if (job->grad) job->grad_stats = norm_stats(*job->grad);
      if (job->before) {
        const FloatArray& w = job->weight;
        job->update_squares = w.wide ? core::update_squares_f64(job->before->data, w.data, w.count)
                                     : core::update_squares_f32(job->before->data, w.data, w.count);
      }
    }
  }
  pb::list out;
  for (const auto& job : jobs) {
    if (!job) {
      out.append(pb::none());
      continue;
    }
    out.append(pb::make_tuple(as_tuple(job->weight_stats), job->grad ? pb::object(as_tuple(job->grad_stats)) : pb::none(),
                              job->before ? pb::object(pb::float_(job->update_squares)) : pb::none()));
  }
  return out;
}

pb::object tensor_statistics(pb::handle tensor) {
  const auto array = float_array(tensor);
  if (!array) return pb::none();
  return as_tuple(norm_stats(*array));
}

}  // namespace ophook::py::monitor
