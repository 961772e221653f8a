#pragma once
#include <string>

#include "ophook/record.hpp"

namespace ophook::core {

class Recorder;

/// The call as one line of the seed API tracer's api_trace.txt:
/// `torch.add(Tensor([2, 3], "float32"), Tensor([2, 3], "float32"), alpha=10)`; NumPy arrays print
/// as `Array([2, 3], "float64")`. Arguments only (no outputs). Writer thread only.
std::string api_call_text(const CallRecord& record, const Recorder& recorder);

}  // namespace ophook::core
