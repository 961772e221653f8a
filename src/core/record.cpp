#include "ophook/record.hpp"

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

std::size_t CallRecord::footprint() const {
  std::size_t bytes = sizeof(CallRecord) + values.capacity() + error.capacity();
  for (const auto& a : arrays) bytes += sizeof(ArrayCapture) + a.shape.capacity() * 8 + a.nbytes;
  return bytes;
}

}  // namespace ophook::core
