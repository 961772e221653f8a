#pragma once
#include <string>
#include <vector>

#include "ophook/model/record.hpp"
#include "ophook/process/recorder.hpp"
#include "python_common.hpp"

namespace ophook::py {

/// Where a call comes from: the innermost Python frame of the calling thread whose file lies
/// outside the library directories (numpy, torch, ophook); all zero when there is none.
struct SourceSite {
  std::uint32_t file_id = 0;
  std::uint32_t func_id = 0;
  std::int32_t line = 0;
};

/// What the frames below a call say about it.
enum class CallOrigin : std::uint8_t {
  Program,        // the program's call (site filled in when a user frame was found)
  TensorRebuild,  // torch.multiprocessing's reductions rebuilding a tensor another process sent
};

/// Walks the calling thread's frames from the innermost to the first user frame. Per code object
/// the verdict and the interned file/function ids are cached, so a call costs a short frame walk
/// and a line lookup. Needs the GIL; never raises.
CallOrigin locate_source(SourceSite& site, core::Recorder& recorder);

/// Whether a frame running one of `codes` is on this thread's stack (a walk of the stack).
bool running_below(const std::vector<PyObject*>& codes);

/// OPHOOK_COMPILE=eager: `codes` are the frames every torch.compile'd callable runs through
/// (Dynamo's compile_wrapper). The first recorded call that runs below one of them says once on
/// stderr that compiled code runs eagerly (so its results are eager PyTorch's): seen in the source
/// walk when the wrapper lies below the user frame (a compiled library module), else by a walk of
/// the whole stack at the first call from each user code object not seen before (a compiled user
/// function), until the notice is given. Empty: off.
void notice_compiled_calls(const std::vector<PyObject*>& codes);

/// Adds a directory whose files count as library code (a package's __path__ entry).
void add_library_directory(const std::string& directory);

}  // namespace ophook::py
