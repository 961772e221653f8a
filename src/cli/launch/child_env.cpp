#include "launch/child_env.hpp"

#include <algorithm>

namespace ophook::cli {

std::string prepend_preload(std::string_view library, std::string_view existing) {
  std::string result(library);
  std::size_t pos = 0;
  while (pos < existing.size()) {
    const std::size_t end = std::min(existing.find_first_of(" :", pos), existing.size());
    const std::string_view entry = existing.substr(pos, end - pos);
    if (!entry.empty() && entry != library) {
      result += ':';
      result += entry;
    }
    pos = end + 1;
  }
  return result;
}

}  // namespace ophook::cli
