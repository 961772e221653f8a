#include "read/arrays/mapped_file.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "ophook/error.hpp"

namespace ophook::cli {

MappedFile::MappedFile(const std::filesystem::path& path) {
  const std::string name = path.string();
  const int fd = open(name.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    throw Error(fmt::format("{}: {}", name, err == ENOENT ? "file not found" : std::strerror(err)));
  }
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    throw Error(fmt::format("{}: not a regular file", name));
  }
  size_ = static_cast<std::size_t>(st.st_size);
  if (size_ > 0) {
    void* map = mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    const int err = errno;
    if (map == MAP_FAILED) {
      close(fd);
      throw Error(fmt::format("{}: cannot be mapped: {}", name, std::strerror(err)));
    }
    map_ = map;
    madvise(map_, size_, MADV_SEQUENTIAL);
  }
  close(fd);
}

MappedFile::~MappedFile() {
  if (map_ != nullptr) munmap(map_, size_);
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : map_(std::exchange(other.map_, nullptr)), size_(std::exchange(other.size_, 0)) {}

}  // namespace ophook::cli
