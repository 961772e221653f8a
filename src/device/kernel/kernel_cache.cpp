#include "device/kernel/kernel_cache.hpp"

#include <cstdlib>
#include <exception>
#include <fstream>
#include <iterator>

#include "device/kernel/kernel_source.hpp"
#include "ophook/files/output_dir.hpp"

namespace ophook::device {
namespace {

std::string cache_directory() {
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && xdg[0] == '/') return std::string(xdg) + "/ophook";
  if (const char* home = std::getenv("HOME"); home != nullptr && home[0] == '/') return std::string(home) + "/.cache/ophook";
  return {};
}

}  // namespace

std::optional<std::string> read_cached_kernel(const std::string& name) {
  const std::string directory = cache_directory();
  if (directory.empty()) return std::nullopt;
  std::ifstream file(directory + "/" + name, std::ios::binary);
  if (!file) return std::nullopt;
  std::string image{std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()};
  if (file.bad() || image.find(kStatisticsKernelName) == std::string::npos) return std::nullopt;
  return image;
}

bool store_cached_kernel(const std::string& name, const std::string& image) {
  const std::string directory = cache_directory();
  if (directory.empty()) return false;
  try {
    core::OutputDir cache(directory);  // made if need be; the file appears whole or not at all
    return cache.write_file(name, image).ok;
  } catch (const std::exception&) {  // the directory cannot be made or opened
    return false;
  }
}

}  // namespace ophook::device
