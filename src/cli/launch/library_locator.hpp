#pragma once
#include <filesystem>
#include <optional>

namespace ophook::cli {

/// The real path of the running executable (/proc/self/exe); throws ophook::Error when it cannot
/// be read.
std::filesystem::path self_executable();

/// Where libophook.so lies for the ophook executable at `exe`: beside it, in the build tree
/// (build/ophook, build/libophook.so) as in the installed Python package
/// (site-packages/ophook/ophook, site-packages/ophook/libophook.so). Pure.
std::filesystem::path preload_library_candidate(const std::filesystem::path& exe);

/// The candidate made absolute and canonical when it exists as a regular file, else nullopt.
std::optional<std::filesystem::path> find_preload_library(const std::filesystem::path& exe);

/// find_preload_library(self_executable()), or throws ophook::Error naming where it looked.
std::filesystem::path locate_preload_library();

}  // namespace ophook::cli
