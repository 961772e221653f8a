#pragma once
#include <filesystem>

namespace ophook::cli {

/// Checks that `dir` is one process's recorded run (holds a trace.jsonl); otherwise throws
/// ophook::Error, naming the per-process runs (`pid*/`, `rank*/`) found below `dir`, which the
/// engines (replay, blame) read one by one.
void check_recorded_run(const std::filesystem::path& dir);

}  // namespace ophook::cli
