// The per-process output directory: every file is created relative to one directory fd, written
// in full before it gets its name (docs/reliability.md): an unnamed O_TMPFILE file linked under
// its name (by the fd itself, or by its /proc/self/fd path), or where the file system has no
// O_TMPFILE a temporary name made with O_EXCL|O_NOFOLLOW, renamed into place. A file may also get
// its name as a hard link to an earlier file of the same bytes (link_copy).
#include "ophook/files/output_dir.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <memory>
#include <system_error>
#include <utility>

#include "ophook/error.hpp"

namespace ophook::core {
namespace {

constexpr mode_t kFileMode = 0644;
// For a directory made inside a world-writable one such as /tmp: only its owner may enter it.
constexpr mode_t kPrivateDirMode = 0700;
constexpr std::string_view kTempPrefix = ".tmp.";
// Room left in a 255-byte name for ".tmp." and ".<pid>.<counter>".
constexpr std::size_t kTempNameRoom = 200;

bool valid_name(std::string_view name) noexcept {
  return !name.empty() && name != "." && name != ".." &&
         name.find('/') == std::string_view::npos && name.find('\0') == std::string_view::npos;
}

IoResult failure(int error) noexcept { return IoResult{false, error}; }

void append_decimal(std::string& out, unsigned long value) {
  char digits[24];
  const auto end = std::to_chars(digits, digits + sizeof digits, value).ptr;
  out.append(digits, end);
}

// Writes all of `parts` back to back with one writev (a .npy file's header and data in one system
// call), retrying on EINTR and partial writes.
bool write_all(int fd, std::span<const std::span<const std::byte>> parts) noexcept {
  constexpr std::size_t kMaxIov = 16;
  std::size_t part = 0, offset = 0;  // the first byte not yet written
  auto skip_written = [&](std::size_t n) {
    while (part < parts.size() && n >= parts[part].size() - offset) {
      n -= parts[part].size() - offset;
      ++part, offset = 0;
    }
    offset += n;
  };
  skip_written(0);  // leading empty parts
  while (part < parts.size()) {
    iovec iov[kMaxIov];
    int count = 0;
    for (std::size_t p = part; p < parts.size() && count < static_cast<int>(kMaxIov); ++p, ++count) {
      const std::size_t skip = p == part ? offset : 0;
      iov[count] = {const_cast<std::byte*>(parts[p].data() + skip), parts[p].size() - skip};
    }
    const ssize_t n = ::writev(fd, iov, count);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n == 0) errno = EIO;  // no progress on a non-empty write: never loop forever
      return false;
    }
    skip_written(static_cast<std::size_t>(n));
  }
  return true;
}

// Whether the regular file `fd` holds exactly `parts` back to back. Read in pieces that stay in
// the cache for the comparison; the file's pages are usually still in the page cache, as it was
// written moments ago.
bool holds_exactly(int fd, std::span<const std::span<const std::byte>> parts) {
  constexpr std::size_t kPiece = std::size_t{256} << 10;
  struct stat st{};
  std::size_t total = 0;
  for (const auto& part : parts) total += part.size();
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || static_cast<std::size_t>(st.st_size) != total) return false;
  thread_local const auto buffer = std::make_unique_for_overwrite<std::byte[]>(kPiece);
  off_t offset = 0;
  for (const auto& part : parts) {
    for (std::size_t done = 0; done < part.size();) {
      const auto want = std::min(kPiece, part.size() - done);
      const ssize_t n = ::pread(fd, buffer.get(), want, offset);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0 || std::memcmp(buffer.get(), part.data() + done, static_cast<std::size_t>(n)) != 0) return false;
      done += static_cast<std::size_t>(n);
      offset += n;
    }
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

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw Error("ophook: output path '" + path + "' " + what);
}

std::string error_text(int error) { return std::system_category().message(error); }

// "a/b/c/" → {"a/b", "c"}; "c" → {"", "c"}; "/c" → {"/", "c"}.
std::pair<std::string, std::string> split_last(std::string path) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  const auto slash = path.rfind('/');
  if (slash == std::string::npos) return {"", path};
  return {slash == 0 ? "/" : path.substr(0, slash), path.substr(slash + 1)};
}

bool is_previous_run_file(std::string_view name) noexcept {
  for (const std::string_view fixed : {"trace.jsonl", "summary.json", "api_trace.txt", "api_apis.txt",
                                       "api_configs.txt", "api_statistics.txt", "monitor.jsonl"}) {
    if (name == fixed) return true;
  }
  if (name.size() > 7 && name.starts_with("op_") && name.ends_with(".npy")) return true;
  return name.size() > kTempPrefix.size() && name.starts_with(kTempPrefix);
}

}  // namespace

std::string IoResult::message() const { return std::system_category().message(error); }

OutputDir::OutputDir(std::string path, Leaf leaf, Creation creation)
    : path_(std::move(path)), creation_(creation) {
  if (path_.empty()) throw Error("ophook: the output directory path is empty");
  const auto [parent, name] = split_last(path_);
  if (name.empty()) {  // "/"
    dir_fd_ = ::open(path_.c_str(), O_DIRECTORY | O_RDONLY | O_CLOEXEC);
    if (dir_fd_ < 0) fail(path_, "cannot be opened: " + error_text(errno));
    return;
  }
  if (!parent.empty()) make_directories(parent);
  const int parent_fd = ::open(parent.empty() ? "." : parent.c_str(), O_DIRECTORY | O_RDONLY | O_CLOEXEC);
  if (parent_fd < 0) {
    fail(path_, errno == ENOTDIR ? "lies below something that is not a directory"
                                 : "cannot be reached: " + error_text(errno));
  }
  struct stat parent_st{};
  const bool shared_parent = ::fstat(parent_fd, &parent_st) == 0 && (parent_st.st_mode & S_IWOTH) != 0;
  if (::mkdirat(parent_fd, name.c_str(), shared_parent ? kPrivateDirMode : 0777) != 0 && errno != EEXIST) {
    const int error = errno;
    ::close(parent_fd);
    fail(path_, "cannot be created: " + error_text(error));
  }
  const int nofollow = leaf == Leaf::NoFollow ? O_NOFOLLOW : 0;
  dir_fd_ = ::openat(parent_fd, name.c_str(), O_DIRECTORY | O_RDONLY | O_CLOEXEC | nofollow);
  const int error = errno;
  struct stat leaf_st{};
  // With O_DIRECTORY a symlink fails as ENOTDIR (or ELOOP): tell which it was.
  const bool is_link = dir_fd_ < 0 && leaf == Leaf::NoFollow &&
                       ::fstatat(parent_fd, name.c_str(), &leaf_st, AT_SYMLINK_NOFOLLOW) == 0 &&
                       S_ISLNK(leaf_st.st_mode);
  ::close(parent_fd);
  if (dir_fd_ < 0) {
    if (is_link) fail(path_, "is a symlink: not followed");
    fail(path_, error == ENOTDIR ? std::string("is not a directory") : "cannot be opened: " + error_text(error));
  }
  struct stat st{};
  if (shared_parent && (::fstat(dir_fd_, &st) != 0 || st.st_uid != ::geteuid())) {
    ::close(dir_fd_);
    dir_fd_ = -1;
    fail(path_, "belongs to uid " + std::to_string(st.st_uid) + " in the world-writable directory '" + parent +
                    "': refusing to write there (another user could read or replace the dumps)");
  }
}

OutputDir::~OutputDir() {
  if (dir_fd_ >= 0) ::close(dir_fd_);
}

struct OutputDir::FileNames {
  std::string final_name, temp_name;
};

IoResult OutputDir::write_file(std::string_view name,
                               std::span<const std::span<const std::byte>> parts) {
  if (!valid_name(name)) return failure(EINVAL);
  // Per thread, so that several threads may write files at once, and kept between calls (no
  // allocation per file).
  thread_local FileNames names;
  names.final_name.assign(name);
  if (creation_.load(std::memory_order_relaxed) != Creation::TemporaryName) {
    const int fd = ::openat(dir_fd_, ".", O_WRONLY | O_TMPFILE | O_CLOEXEC, kFileMode);
    if (fd >= 0) return write_unnamed_then_link(fd, parts, names);
    // EISDIR: a kernel before O_TMPFILE (3.11); EOPNOTSUPP: a file system without it (NFS, FUSE).
    if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL) return failure(errno);
    creation_.store(Creation::TemporaryName, std::memory_order_relaxed);
  }
  return write_via_temp_name(parts, names);
}

IoResult OutputDir::write_via_temp_name(std::span<const std::span<const std::byte>> parts, FileNames& names) {
  const int fd = ::openat(dir_fd_, next_temp_name(names).c_str(),
                          O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, kFileMode);
  if (fd < 0) return failure(errno);
  bool ok = write_all(fd, parts);
  int error = ok ? 0 : errno;
  if (::close(fd) != 0 && ok) {  // NFS and quotas may report the failure only here
    ok = false;
    error = errno;
  }
  if (!ok) {
    ::unlinkat(dir_fd_, names.temp_name.c_str(), 0);
    return failure(error);
  }
  return rename_temp_into_place(names);
}

IoResult OutputDir::write_unnamed_then_link(int fd, std::span<const std::span<const std::byte>> parts,
                                            FileNames& names) {
  if (!write_all(fd, parts)) {
    const int error = errno;
    ::close(fd);  // the unnamed file goes with it
    return failure(error);
  }
  const int error = link_into_place(fd, names, /*step_down=*/true);
  ::close(fd);
  if (error == ENOENT || error == EPERM || error == EACCES || error == EXDEV ||
      error == EOPNOTSUPP) {
    // No /proc, or a sandbox that refuses such links: name files the other way from now on.
    creation_.store(Creation::TemporaryName, std::memory_order_relaxed);
    return write_via_temp_name(parts, names);
  }
  return error == 0 ? IoResult{} : failure(error);
}

int OutputDir::link_into_place(int fd, FileNames& names, bool step_down) {
  // linkat never replaces what is there (EEXIST), so a file of that name is replaced the way the
  // temporary-name path does it.
  const int error = link_descriptor(fd, names.final_name, step_down);
  if (error != EEXIST) return error;
  if (const int temp_error = link_descriptor(fd, next_temp_name(names), step_down); temp_error != 0) return temp_error;
  const auto renamed = rename_temp_into_place(names);
  return renamed.ok ? 0 : renamed.error;
}

int OutputDir::link_descriptor(int fd, const std::string& name, bool step_down) {
  if (creation_.load(std::memory_order_relaxed) == Creation::Unnamed) {
    if (::linkat(fd, "", dir_fd_, name.c_str(), AT_EMPTY_PATH) == 0) return 0;
    // ENOENT: a kernel before 6.10 without CAP_DAC_READ_SEARCH; EPERM, EACCES: a sandbox.
    if (errno != ENOENT && errno != EPERM && errno != EACCES) return errno;
    auto unnamed = Creation::Unnamed;  // only ever a step down, whichever thread comes first
    if (step_down) creation_.compare_exchange_strong(unnamed, Creation::UnnamedViaProc, std::memory_order_relaxed);
  }
  // /proc/self/fd/N names the open file: the way open(2) documents to give an O_TMPFILE file a
  // name to any process.
  char fd_path[32] = "/proc/self/fd/";
  *std::to_chars(fd_path + 14, fd_path + sizeof fd_path - 1, fd).ptr = '\0';
  return ::linkat(AT_FDCWD, fd_path, dir_fd_, name.c_str(), AT_SYMLINK_FOLLOW) == 0 ? 0 : errno;
}

const std::string& OutputDir::next_temp_name(FileNames& names) {
  // A long final name is shortened in the temporary one; pid + counter keep it unique even for
  // a forked child that inherited this object. Built in a buffer kept between calls (no
  // allocation per file; snprintf was a quarter of write_file's instructions).
  auto& temp = names.temp_name;
  temp.assign(kTempPrefix);
  temp += std::string_view(names.final_name).substr(0, kTempNameRoom);
  append_decimal(temp += '.', static_cast<unsigned long>(::getpid()));
  append_decimal(temp += '.', temp_counter_.fetch_add(1, std::memory_order_relaxed) + 1);
  return temp;
}

IoResult OutputDir::rename_temp_into_place(const FileNames& names) {
  // rename replaces whatever sits at the name (a planted symlink included) without following it.
  if (::renameat(dir_fd_, names.temp_name.c_str(), dir_fd_, names.final_name.c_str()) != 0) {
    const int error = errno;
    ::unlinkat(dir_fd_, names.temp_name.c_str(), 0);
    return failure(error);
  }
  return {};
}

IoResult OutputDir::write_file(std::string_view name, std::string_view text) {
  const std::span<const std::byte> part(reinterpret_cast<const std::byte*>(text.data()),
                                        text.size());
  return write_file(name, std::span<const std::span<const std::byte>>(&part, 1));
}

OutputDir::LinkResult OutputDir::link_copy(std::string_view existing, std::string_view name,
                                           std::span<const std::span<const std::byte>> parts) {
  if (!valid_name(existing) || !valid_name(name)) return {Link::Failed, EINVAL};
  thread_local FileNames names;
  names.final_name.assign(existing);
  const int fd = ::openat(dir_fd_, names.final_name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return {Link::Differs, errno};  // gone, or a symlink planted there (ELOOP)
  const bool same = holds_exactly(fd, parts);
  names.final_name.assign(name);
  const int error = same ? link_into_place(fd, names, /*step_down=*/false) : 0;
  ::close(fd);
  if (!same) return {Link::Differs, 0};
  return error == 0 ? LinkResult{} : LinkResult{Link::Failed, error};
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

int OutputDir::rename(std::string_view name) {
  if (!valid_name(name)) return EINVAL;
  const auto [parent, old_name] = split_last(path_);
  if (old_name.empty()) return EINVAL;  // "/"
  const int parent_fd =
      ::open(parent.empty() ? "." : parent.c_str(), O_DIRECTORY | O_RDONLY | O_CLOEXEC);
  if (parent_fd < 0) return errno;
  const std::string new_name(name);
  struct stat ours{}, there{};
  int error = 0;
  if (::fstat(dir_fd_, &ours) != 0 ||
      ::fstatat(parent_fd, old_name.c_str(), &there, AT_SYMLINK_NOFOLLOW) != 0) {
    error = errno == ENOENT ? ESTALE : errno;
  } else if (ours.st_dev != there.st_dev || ours.st_ino != there.st_ino) {
    error = ESTALE;  // something else took the old name: never move that
  } else if (::renameat(parent_fd, old_name.c_str(), parent_fd, new_name.c_str()) != 0) {
    // A non-empty directory at the name: ENOTEMPTY or EEXIST; a file or a symlink: ENOTDIR.
    error = errno == ENOTEMPTY || errno == ENOTDIR ? EEXIST : errno;
  }
  ::close(parent_fd);
  if (error == 0) path_ = (parent.empty() ? "" : parent == "/" ? parent : parent + "/") + new_name;
  return error;
}

void OutputDir::reserve_space(std::size_t bytes) noexcept {
  char name[64];
  std::snprintf(name, sizeof name, "%sreserve.%ld", kTempPrefix.data(), static_cast<long>(::getpid()));
  const int fd = ::openat(dir_fd_, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, kFileMode);
  if (fd < 0) return;
  const bool ok = ::posix_fallocate(fd, 0, static_cast<off_t>(bytes)) == 0;
  ::close(fd);
  if (ok) {
    reserve_name_ = name;
  } else {
    ::unlinkat(dir_fd_, name, 0);
  }
}

void OutputDir::release_reserve() noexcept {
  if (reserve_name_.empty()) return;
  ::unlinkat(dir_fd_, reserve_name_.c_str(), 0);
  reserve_name_.clear();
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
  // The duplicate shares dir_fd_'s position, where an earlier call's walk ended: from the start.
  ::rewinddir(dir);
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
