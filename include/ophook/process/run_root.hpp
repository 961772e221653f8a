#pragma once

namespace ophook::core {

/// The variables the root process of a run exports, so that every process started under it
/// (spawned Python children, DataLoader workers, DDP ranks) writes below the root's directory
/// instead of over it (docs/outputs.md, "Where"): the one definition of their names, handed to the
/// Python package by the preload's bootstrap and by the extension (_ophook.run_root_names()).
inline constexpr const char* kRootPidVariable = "OPHOOK_ROOT_PID";
inline constexpr const char* kRootOutputVariable = "OPHOOK_ROOT_OUTPUT";

}  // namespace ophook::core
