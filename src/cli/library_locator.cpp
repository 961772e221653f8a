#include "library_locator.hpp"

#include <fmt/format.h>

#include <system_error>

#include "ophook/error.hpp"

namespace ophook::cli {

namespace fs = std::filesystem;

namespace {
constexpr const char* kLibraryName = "libophook.so";
}  // namespace

fs::path self_executable() {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) {
    throw Error(fmt::format("cannot read /proc/self/exe: {}", ec.message()));
  }
  return exe;
}

std::vector<fs::path> preload_library_candidates(const fs::path& exe) {
  const fs::path dir = exe.parent_path();
  return {dir / kLibraryName, dir / ".." / "ophook" / kLibraryName};
}

std::optional<fs::path> find_preload_library(const fs::path& exe) {
  for (const fs::path& candidate : preload_library_candidates(exe)) {
    std::error_code ec;
    if (fs::is_regular_file(candidate, ec)) {
      fs::path canonical = fs::weakly_canonical(candidate, ec);
      return ec ? fs::absolute(candidate) : canonical;
    }
  }
  return std::nullopt;
}

fs::path locate_preload_library() {
  const fs::path exe = self_executable();
  if (auto found = find_preload_library(exe)) {
    return *found;
  }
  std::string places;
  for (const fs::path& candidate : preload_library_candidates(exe)) {
    places += places.empty() ? "" : ", ";
    places += candidate.lexically_normal().string();
  }
  throw Error(fmt::format("cannot find {} (looked at {})", kLibraryName, places));
}

}  // namespace ophook::cli
