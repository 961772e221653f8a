#pragma once
#include <cstddef>
#include <span>
#include <string>
#include <string_view>

namespace ophook::core {

/// Result of a file operation on the hot writer path: no exceptions, errno kept for the message.
struct IoResult {
  bool ok = true;
  int error = 0;  // errno when !ok
  std::string message() const;  // strerror text
};

/// One process's output directory, held open as a directory fd so that every file is created
/// relative to it. Files are written to a unique temporary name with O_CREAT|O_EXCL|O_NOFOLLOW and
/// renamed into place, so a reader sees each file complete or not at all and a symlink planted at
/// the final name is replaced, never followed. Mode 0644. Not thread-safe: owned by the writer.
class OutputDir {
 public:
  /// Creates the directory (and parents) if needed and opens it; throws ophook::Error naming the
  /// path when it is not a directory or cannot be created/opened.
  explicit OutputDir(std::string path);
  ~OutputDir();
  OutputDir(const OutputDir&) = delete;
  OutputDir& operator=(const OutputDir&) = delete;

  const std::string& path() const { return path_; }

  /// Writes `parts` back to back into `name` atomically (temp file + rename).
  IoResult write_file(std::string_view name, std::span<const std::span<const std::byte>> parts);
  IoResult write_file(std::string_view name, std::string_view text);

  /// Opens `name` for appending from scratch (an earlier file of that name is replaced), returns
  /// an fd owned by the caller, or -1 with errno set.
  int open_fresh_for_append(std::string_view name);

  /// Removes the files an earlier run left that the contract names (trace.jsonl, summary.json,
  /// api_*.txt, op_*.npy, stale temporaries), never anything else. Returns how many were removed.
  std::size_t remove_previous_run_files();

 private:
  std::string path_;
  int dir_fd_ = -1;
  unsigned long temp_counter_ = 0;
};

}  // namespace ophook::core
