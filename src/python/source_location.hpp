#pragma once
#include <string>

#include "ophook/record.hpp"
#include "ophook/recorder.hpp"
#include "python_common.hpp"

namespace ophook::py {

/// Fills record.source_* with the innermost Python frame of the calling thread whose file lies
/// outside the library directories (numpy, torch, ophook). Per code object, the verdict and the
/// interned file/function ids are cached, so a call costs a frame walk and a line lookup.
/// Needs the GIL; never raises.
void locate_source(core::CallRecord& record, core::Recorder& recorder);

/// True when the call comes from a library module's import (its innermost non-library frame is
/// importlib's bootstrap), e.g. numpy.random setting itself up: such calls are not the program's
/// and, seeded from entropy, would make two identical runs differ. Same cost model as above.
bool called_by_library_import(core::Recorder& recorder);

/// Adds a directory whose files count as library code (a package's __path__ entry).
void add_library_directory(const std::string& directory);

}  // namespace ophook::py
