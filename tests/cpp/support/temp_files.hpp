#pragma once
// Files for the units that write some: a fresh temporary directory, a file's whole content, a
// directory's names, a file's inode.
#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>

namespace ophook::test {

/// A new directory <system temp>/<stem>XXXXXX; the caller removes it.
inline std::filesystem::path make_temp_dir(const std::string& stem) {
  std::string pattern = (std::filesystem::temp_directory_path() / (stem + "XXXXXX")).string();
  if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed for " + pattern);
  return pattern;
}

inline std::string slurp(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

/// Writes `text` as the whole of `path`.
inline void spit(const std::filesystem::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

/// The inode `path` names (0 when none): two names of one inode are links of one file.
inline ino_t inode(const std::filesystem::path& path) {
  struct stat st{};
  return ::lstat(path.c_str(), &st) == 0 ? st.st_ino : 0;
}

/// The names in `dir`.
inline std::set<std::string> listing(const std::filesystem::path& dir) {
  std::set<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) names.insert(entry.path().filename());
  return names;
}

}  // namespace ophook::test
