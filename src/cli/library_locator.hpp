#pragma once
#include <filesystem>
#include <optional>
#include <vector>

namespace ophook::cli {

/// The real path of the running executable (/proc/self/exe); throws ophook::Error when it cannot
/// be read.
std::filesystem::path self_executable();

/// The places where libophook.so may lie relative to the ophook executable at `exe`, in search
/// order: beside it (the build tree: build/ophook, build/libophook.so), then ../ophook/ (an
/// installed package). Pure.
std::vector<std::filesystem::path> preload_library_candidates(const std::filesystem::path& exe);

/// The first candidate that exists as a regular file, made absolute and canonical; nullopt when
/// none does.
std::optional<std::filesystem::path> find_preload_library(const std::filesystem::path& exe);

/// find_preload_library(self_executable()), or throws ophook::Error listing where it looked.
std::filesystem::path locate_preload_library();

}  // namespace ophook::cli
