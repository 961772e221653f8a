#pragma once
#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>

#include "ophook/stats/stats.hpp"

namespace ophook::core {

/// A 128-bit digest of a file's bytes.
struct ContentDigest {
  std::uint64_t low = 0, high = 0;
  bool operator==(const ContentDigest&) const = default;
};

/// The digest of `parts` taken back to back (a .npy file: header, then the array's bytes).
using DigestFunction = ContentDigest (*)(std::span<const std::span<const std::byte>> parts) noexcept;

/// XXH3-128, the index's digest outside tests.
ContentDigest xxh3_128_digest(std::span<const std::span<const std::byte>> parts) noexcept;

/// The first file this process wrote with each content, by digest of the whole file (the .npy
/// header holds dtype and shape, so equal files mean equal dtype, shape and bytes), with its
/// statistics: where a later array of that content can be linked instead of written, and its
/// statistics taken instead of computed once the bytes are found equal. A digest only nominates a file; the
/// bytes are compared before a link is made (OutputDir::link_copy), so a digest collision costs a
/// comparison, never a wrong link. The digest function is injectable for tests of that case.
///
/// Bounded: past `max_bytes` of entries the oldest is forgotten, and its content, should it come
/// again, is written again and becomes the new first file. Writer thread only.
class ContentIndex {
 public:
  /// About 150,000 entries of a typical file name.
  static constexpr std::size_t kDefaultMaxBytes = std::size_t{32} << 20;

  explicit ContentIndex(DigestFunction digest = xxh3_128_digest, std::size_t max_bytes = kDefaultMaxBytes)
      : digest_(digest), max_bytes_(max_bytes) {}

  ContentDigest digest(std::span<const std::span<const std::byte>> parts) const noexcept { return digest_(parts); }

  struct First {
    std::string file;
    std::optional<ArrayStats> stats;  // of the array written there
  };
  /// The first file of this content, or nullptr.
  const First* find(const ContentDigest& digest) const;
  /// `file` is (about to be) the first file of this content, replacing any earlier entry.
  void remember(const ContentDigest& digest, const std::string& file, const std::optional<ArrayStats>& stats);
  /// The statistics of the entry of `digest` when it is `file` (computed after it was remembered).
  void add_stats(const ContentDigest& digest, const std::string& file, const ArrayStats& stats) noexcept;
  /// Forgets the entry of `digest` when it is `file` (a file that was not written after all).
  void forget(const ContentDigest& digest, const std::string& file);

  std::size_t entries() const noexcept { return files_.size(); }
  /// Entries forgotten for the bound.
  std::uint64_t forgotten() const noexcept { return forgotten_; }

 private:
  struct DigestHash {
    std::size_t operator()(const ContentDigest& d) const noexcept { return static_cast<std::size_t>(d.low); }
  };
  struct Entry {
    First first;
    std::uint64_t order = 0;  // when it was remembered: the age queue's entries of older ones are stale
  };
  static std::size_t cost(const std::string& file) noexcept;

  DigestFunction digest_;
  std::size_t max_bytes_;
  std::size_t bytes_ = 0;
  std::uint64_t next_order_ = 0, forgotten_ = 0;
  std::unordered_map<ContentDigest, Entry, DigestHash> files_;
  std::deque<std::pair<ContentDigest, std::uint64_t>> ages_;  // oldest first
};

}  // namespace ophook::core
