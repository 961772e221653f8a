#pragma once
#include <cstddef>
#include <filesystem>
#include <span>

namespace ophook::cli {

/// A whole file mapped read-only (an empty file maps to an empty span). Move-only; unmaps on
/// destruction. Reading is thread-safe.
class MappedFile {
 public:
  /// Throws ophook::Error "<path>: <reason>" ("file not found", "not a regular file", ...).
  explicit MappedFile(const std::filesystem::path& path);
  ~MappedFile();
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&&) = delete;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  std::span<const std::byte> bytes() const { return {static_cast<const std::byte*>(map_), size_}; }

 private:
  void* map_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace ophook::cli
