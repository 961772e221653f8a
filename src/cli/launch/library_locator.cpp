#include "launch/library_locator.hpp"

#include <fmt/format.h>

#include <system_error>

#include "ophook/error.hpp"

namespace ophook::cli {

namespace fs = std::filesystem;

fs::path self_executable() {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) {
    throw Error(fmt::format("cannot read /proc/self/exe: {}", ec.message()));
  }
  return exe;
}

fs::path preload_library_candidate(const fs::path& exe) {
  return exe.parent_path() / "libophook.so";
}

std::optional<fs::path> find_preload_library(const fs::path& exe) {
  const fs::path candidate = preload_library_candidate(exe);
  std::error_code ec;
  if (!fs::is_regular_file(candidate, ec)) {
    return std::nullopt;
  }
  fs::path canonical = fs::weakly_canonical(candidate, ec);
  return ec ? fs::absolute(candidate) : canonical;
}

fs::path locate_preload_library() {
  const fs::path exe = self_executable();
  if (auto found = find_preload_library(exe)) {
    return *found;
  }
  throw Error(fmt::format("cannot find {} (the library lies beside the ophook executable)",
                          preload_library_candidate(exe).string()));
}

}  // namespace ophook::cli
