#pragma once
#include <string>

#include "ophook/model/record.hpp"

namespace ophook::core {

class Recorder;

/// Appends the call as one line of the seed API tracer's api_trace.txt (without the newline):
/// `torch.add(Tensor([2, 3], "float32"), Tensor([2, 3], "float32"), alpha=10)`; NumPy arrays print
/// as `Array([2, 3], "float64")`. Arguments only (no outputs). Writer thread only; `out` is meant
/// to be reused from record to record, so that a line costs no allocation.
void append_api_call_text(std::string& out, const CallRecord& record, const Recorder& recorder);

}  // namespace ophook::core
