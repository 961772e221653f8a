#pragma once
#include <sys/types.h>

#include <filesystem>
#include <functional>
#include <future>
#include <map>
#include <mutex>
#include <tuple>

#include "compare/values/array_diff.hpp"

namespace ophook::cli {

/// Array comparisons remembered by the identity of the two files (device and inode of each). A
/// run that stores repeated content once gives one file many names (hard links, "same_as"), so the
/// same two files come up in many pairs of records: they are compared once. Only files with more
/// than one name are remembered. Thread-safe: a pair one thread is comparing is waited for by the
/// others, so no pair is compared twice.
class FilePairMemo {
 public:
  /// `compare()`'s result for files `a` and `b`, computed at most once per pair of files; what it
  /// throws is thrown to every caller of that pair.
  ArrayDiff compare(const std::filesystem::path& a, const std::filesystem::path& b,
                    const std::function<ArrayDiff()>& compare);

 private:
  using Key = std::tuple<dev_t, ino_t, dev_t, ino_t>;
  std::mutex mutex_;
  std::map<Key, std::shared_future<ArrayDiff>> done_;
};

}  // namespace ophook::cli
