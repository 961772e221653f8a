#pragma once
#include <string_view>

namespace ophook::preload {

/// Writes the output of a root process that imported no framework (summary.json saying 0 calls,
/// the empty trace and api_* files, replacing an earlier run's), as the extension would, but
/// without loading it: the shim calls this at exit through the bootstrap. `encoded_settings`:
/// the shim's OPHOOK_* settings as NAME=value pairs separated by NUL bytes; `start_message`: the
/// "recording ... into ..." line logged when recording starts. False when the output could not
/// be written (already logged).
bool write_empty_root_run(std::string_view encoded_settings, std::string_view python_version,
                          std::string_view start_message) noexcept;

}  // namespace ophook::preload
