// The per-process output directory: every file is created relative to one directory fd, under a
// temporary name with O_EXCL|O_NOFOLLOW, then renamed into place (CONTRACT.md section 7).
#include "ophook/output_dir.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <system_error>
#include <utility>

#include "ophook/error.hpp"

namespace ophook::core {
namespace {

constexpr mode_t kFileMode = 0644;
constexpr std::string_view kTempPrefix = ".tmp.";
// Room left in a 255-byte name for ".tmp." and ".<pid>.<counter>".
constexpr std::size_t kTempNameRoom = 200;

bool valid_name(std::string_view name) noexcept {
  return !name.empty() && name != "." && name != ".." &&
         name.find('/') == std::string_view::npos && name.find('\0') == std::string_view::npos;
}

IoResult failure(int error) noexcept { return IoResult{false, error}; }

// Writes all of `data`, retrying on EINTR and partial writes.
bool write_all(int fd, const std::byte* data, std::size_t size) noexcept {
  while (size > 0) {
    const ssize_t n = ::write(fd, data, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    data += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

// mkdir -p: creates each missing component; an existing one is fine whatever it is, the final
// open(O_DIRECTORY) decides whether the result is usable.
void make_directories(const std::string& path) {
  for (std::size_t pos = path.find('/', 1);; pos = path.find('/', pos + 1)) {
    const std::string prefix = path.substr(0, pos);
    if (!prefix.empty() && ::mkdir(prefix.c_str(), 0777) != 0 && errno != EEXIST) {
      const int error = errno;
      throw Error("ophook: cannot create output directory '" + prefix +
                  "': " + std::system_category().message(error));
    }
    if (pos == std::string::npos) break;
  }
}

bool is_previous_run_file(std::string_view name) noexcept {
  for (const std::string_view fixed : {"trace.jsonl", "summary.json", "api_trace.txt",
                                       "api_apis.txt", "api_configs.txt", "api_statistics.txt"}) {
    if (name == fixed) return true;
  }
  if (name.size() > 7 && name.starts_with("op_") && name.ends_with(".npy")) return true;
  return name.size() > kTempPrefix.size() && name.starts_with(kTempPrefix);
}

}  // namespace

std::string IoResult::message() const { return std::system_category().message(error); }

OutputDir::OutputDir(std::string path) : path_(std::move(path)) {
  if (path_.empty()) throw Error("ophook: the output directory path is empty");
  make_directories(path_);
  dir_fd_ = ::open(path_.c_str(), O_DIRECTORY | O_RDONLY | O_CLOEXEC);
  if (dir_fd_ < 0) {
    const int error = errno;
    throw Error("ophook: output path '" + path_ + "' " +
                (error == ENOTDIR ? std::string("is not a directory")
                                  : "cannot be opened: " + std::system_category().message(error)));
  }
}

OutputDir::~OutputDir() {
  if (dir_fd_ >= 0) ::close(dir_fd_);
}

IoResult OutputDir::write_file(std::string_view name,
                               std::span<const std::span<const std::byte>> parts) {
  if (!valid_name(name)) return failure(EINVAL);
  // A long final name is shortened in the temporary one; pid + counter keep it unique even for
  // a forked child that inherited this object.
  char suffix[48];
  std::snprintf(suffix, sizeof suffix, ".%ld.%lu", static_cast<long>(::getpid()), ++temp_counter_);
  std::string temp;
  temp.reserve(kTempPrefix.size() + kTempNameRoom + sizeof suffix);
  temp += kTempPrefix;
  temp += name.substr(0, kTempNameRoom);
  temp += suffix;

  const int fd = ::openat(dir_fd_, temp.c_str(),
                          O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, kFileMode);
  if (fd < 0) return failure(errno);
  bool ok = true;
  for (const auto& part : parts) {
    if (!write_all(fd, part.data(), part.size())) {
      ok = false;
      break;
    }
  }
  int error = ok ? 0 : errno;
  if (::close(fd) != 0 && ok) {  // NFS and quotas may report the failure only here
    ok = false;
    error = errno;
  }
  // rename replaces whatever sits at `name` (a planted symlink included) without following it.
  const std::string final_name(name);
  if (ok && ::renameat(dir_fd_, temp.c_str(), dir_fd_, final_name.c_str()) != 0) {
    ok = false;
    error = errno;
  }
  if (!ok) {
    ::unlinkat(dir_fd_, temp.c_str(), 0);
    return failure(error);
  }
  return {};
}

IoResult OutputDir::write_file(std::string_view name, std::string_view text) {
  const std::span<const std::byte> part(reinterpret_cast<const std::byte*>(text.data()),
                                        text.size());
  return write_file(name, std::span<const std::span<const std::byte>>(&part, 1));
}

int OutputDir::open_fresh_for_append(std::string_view name) {
  if (!valid_name(name)) {
    errno = EINVAL;
    return -1;
  }
  const std::string file(name);
  // Unlink first, then O_EXCL: whatever was there (a file, a symlink) is never written through.
  // ENOENT is the usual outcome; any other failure (EISDIR) makes the openat below fail.
  (void)::unlinkat(dir_fd_, file.c_str(), 0);
  return ::openat(dir_fd_, file.c_str(),
                  O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_APPEND | O_CLOEXEC, kFileMode);
}

std::size_t OutputDir::remove_previous_run_files() {
  // fdopendir takes ownership of its fd, so hand it a duplicate.
  const int fd = ::fcntl(dir_fd_, F_DUPFD_CLOEXEC, 0);
  if (fd < 0) return 0;
  DIR* dir = ::fdopendir(fd);
  if (dir == nullptr) {
    ::close(fd);
    return 0;
  }
  std::size_t removed = 0;
  while (const dirent* entry = ::readdir(dir)) {
    const std::string_view name = entry->d_name;
    if (!is_previous_run_file(name)) continue;
    struct stat st;
    if (::fstatat(dir_fd_, entry->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    // Only files and links: a directory named like ours (or anything else) is the user's.
    if (!S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode)) continue;
    if (::unlinkat(dir_fd_, entry->d_name, 0) == 0) ++removed;
  }
  ::closedir(dir);
  return removed;
}

}  // namespace ophook::core
