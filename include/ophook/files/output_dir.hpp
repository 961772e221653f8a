#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "ophook/export.hpp"

namespace ophook::core {

/// Result of a file operation on the hot writer path: no exceptions, errno kept for the message.
struct IoResult {
  bool ok = true;
  int error = 0;  // errno when !ok
  std::string message() const;  // strerror text
};

/// One process's output directory, held open as a directory fd so that every file is created
/// relative to it. A file gets its name only once it is complete, so a reader sees it whole or not
/// at all: written unnamed (O_TMPFILE) and linked under its name, or, where the file system has no
/// O_TMPFILE, written to a unique temporary name made with O_CREAT|O_EXCL|O_NOFOLLOW and renamed
/// into place. A file or a symlink planted at the name is replaced, never followed or written
/// through. Files get mode 0644 (less what the umask removes).
/// A directory created directly inside a world-writable one (/tmp) gets mode 0700, and an existing
/// one there must belong to this user: others could otherwise read the dumps or swap them.
/// write_file and link_copy may run on several threads at once (the writer and its file helpers);
/// everything else is the writer's alone.
class OPHOOK_API OutputDir {
 public:
  /// Whether the last component of the path may be a symlink: yes for the directory the user
  /// named, no for the pid<PID>/rank<R> directories made inside it.
  enum class Leaf { Follow, NoFollow };
  /// How a file is made before it gets its name. Unnamed (O_TMPFILE, then one link) saves the
  /// rename's second directory update: 15-20% of the kernel's time per small file on a quiet
  /// ext4. The link names the open file itself (AT_EMPTY_PATH: Linux 6.10 allows it to the
  /// file's opener, earlier kernels only with CAP_DAC_READ_SEARCH); UnnamedViaProc links its
  /// /proc/self/fd/N path instead, whose lookup was a tenth of the kernel's time per small file.
  /// Each falls back to the next by itself where the kernel, /proc or the file system lacks it.
  enum class Creation { Unnamed, UnnamedViaProc, TemporaryName };

  /// Creates the directory (and parents) if needed and opens it; throws ophook::Error naming the
  /// path when it is not a directory or cannot be created/opened.
  explicit OutputDir(std::string path, Leaf leaf = Leaf::Follow,
                     Creation creation = Creation::Unnamed);
  ~OutputDir();
  OutputDir(const OutputDir&) = delete;
  OutputDir& operator=(const OutputDir&) = delete;

  const std::string& path() const { return path_; }
  /// The way files are made now: the one asked for, or a step down from it (see Creation).
  Creation creation() const { return creation_.load(std::memory_order_relaxed); }

  /// Writes `parts` back to back into `name` atomically (see the class comment). Thread-safe.
  IoResult write_file(std::string_view name, std::span<const std::span<const std::byte>> parts);
  IoResult write_file(std::string_view name, std::string_view text);

  /// What link_copy did: made the link; found other content (or no regular file) at `existing`;
  /// or failed to link (`error`: EPERM, EMLINK, EOPNOTSUPP, ... where hard links are refused).
  enum class Link : std::uint8_t { Made, Differs, Failed };
  struct LinkResult {
    Link outcome = Link::Made;
    int error = 0;  // errno when Failed
  };
  /// Gives `name` to the file `existing` of this directory (a hard link) when it holds exactly the
  /// bytes of `parts` back to back, compared byte for byte. `existing` is opened without following
  /// a symlink and linked by that descriptor, so `name` is the very file compared; a file or
  /// symlink already at `name` is replaced as write_file replaces it. Thread-safe.
  LinkResult link_copy(std::string_view existing, std::string_view name,
                       std::span<const std::span<const std::byte>> parts);

  /// Opens `name` for appending from scratch (an earlier file of that name is replaced), returns
  /// an fd owned by the caller, or -1 with errno set.
  int open_fresh_for_append(std::string_view name);

  /// Removes the files an earlier run left that the contract names (trace.jsonl, summary.json,
  /// api_*.txt, op_*.npy, stale temporaries), never anything else. Returns how many were removed.
  std::size_t remove_previous_run_files();

  /// Gives the directory the name `name` within its parent: its open fd, and so every file being
  /// written, stays valid, and path() names it from then on. Fails with EEXIST when something is
  /// at `name` already (an empty directory there is replaced); with ESTALE when the directory no
  /// longer has its old name. 0 or errno. Writer thread only, between batches of files.
  int rename(std::string_view name);

  /// Sets `bytes` of disk space aside in a hidden temporary file, so that the end-of-run files
  /// still fit when the disk fills up during the run; release_reserve() frees it just before they
  /// are written. Best effort (nothing happens where fallocate is unsupported).
  void reserve_space(std::size_t bytes) noexcept;
  void release_reserve() noexcept;

 private:
  struct FileNames;  // one write_file's final and temporary names (per thread, kept between calls)
  IoResult write_unnamed_then_link(int fd, std::span<const std::span<const std::byte>> parts, FileNames& names);
  /// Links the open file `fd` as names.final_name, replacing what is there; 0 or errno.
  /// `step_down`: a refused way of linking is not tried again for later files (see Creation).
  int link_into_place(int fd, FileNames& names, bool step_down);
  int link_descriptor(int fd, const std::string& name, bool step_down);  // 0 or errno
  IoResult write_via_temp_name(std::span<const std::span<const std::byte>> parts, FileNames& names);
  const std::string& next_temp_name(FileNames& names);       // for names.final_name
  IoResult rename_temp_into_place(const FileNames& names);  // temp_name → final_name

  std::string path_;
  int dir_fd_ = -1;
  std::atomic<Creation> creation_;
  std::atomic<unsigned long> temp_counter_{0};
  std::string reserve_name_;
};

}  // namespace ophook::core
