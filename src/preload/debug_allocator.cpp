#include "debug_allocator.hpp"

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

namespace ophook::preload {
namespace {

std::vector<std::string> command_line() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> args;
  std::string current;
  for (char c : all) {
    if (c == '\0') {
      args.push_back(current);
      current.clear();
    } else {
      current += c;
    }
  }
  return args;
}

bool has_dev_option(const std::vector<std::string>& args) {
  // Interpreter options come before the script, "-c" or "-m"; stop there.
  for (std::size_t i = 1; i < args.size(); ++i) {
    const std::string_view a = args[i];
    if (a == "-c" || a == "-m" || a == "-" || a == "--" || a.empty() || a[0] != '-') return false;
    if (a == "-Xdev" || (a == "-X" && i + 1 < args.size() && args[i + 1] == "dev")) return true;
  }
  return false;
}

}  // namespace

bool python_will_use_debug_allocator() {
  const char* malloc_env = std::getenv("PYTHONMALLOC");
  if (malloc_env && std::string_view(malloc_env).find("debug") != std::string_view::npos) return true;
  const char* dev = std::getenv("PYTHONDEVMODE");
  if (dev && *dev) return true;
  return has_dev_option(command_line());
}

}  // namespace ophook::preload
