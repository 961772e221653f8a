// An anonymous in-memory file (memfd) whose content each fuzz input replaces, so that the readers
// under test open, stat and map it by path exactly as they do a file on disk, without disk I/O.
#pragma once
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

namespace ophook::fuzz {

class MemoryFile {
 public:
  MemoryFile() : fd_(memfd_create("ophook-fuzz-input", MFD_CLOEXEC)) {
    if (fd_ < 0) std::abort();  // no harness without it: fail loudly, not with false passes
  }
  ~MemoryFile() { close(fd_); }
  MemoryFile(const MemoryFile&) = delete;
  MemoryFile& operator=(const MemoryFile&) = delete;

  /// Makes the file hold exactly `data`; returns a path that opens it.
  std::string hold(const std::uint8_t* data, std::size_t size) {
    if (ftruncate(fd_, 0) != 0) std::abort();
    for (std::size_t done = 0; done < size;) {
      const ssize_t n = pwrite(fd_, data + done, size - done, static_cast<off_t>(done));
      if (n <= 0) std::abort();
      done += static_cast<std::size_t>(n);
    }
    return "/proc/self/fd/" + std::to_string(fd_);
  }

 private:
  int fd_;
};

}  // namespace ophook::fuzz
