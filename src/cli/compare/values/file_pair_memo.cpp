#include "compare/values/file_pair_memo.hpp"

#include <sys/stat.h>

namespace ophook::cli {

ArrayDiff FilePairMemo::compare(const std::filesystem::path& a, const std::filesystem::path& b,
                                const std::function<ArrayDiff()>& compare) {
  struct stat sa{}, sb{};
  // A pair with a file of one name cannot come up again; one that cannot be read is the comparison's to report.
  if (::stat(a.c_str(), &sa) != 0 || ::stat(b.c_str(), &sb) != 0 || (sa.st_nlink < 2 || sb.st_nlink < 2)) {
    return compare();
  }
  const Key key{sa.st_dev, sa.st_ino, sb.st_dev, sb.st_ino};
  std::promise<ArrayDiff> promise;
  std::shared_future<ArrayDiff> earlier;
  {
    std::lock_guard lock(mutex_);
    auto [it, fresh] = done_.try_emplace(key);
    if (fresh) {
      it->second = promise.get_future().share();
    } else {
      earlier = it->second;
    }
  }
  if (earlier.valid()) return earlier.get();  // compared already, or being compared by another thread
  try {
    auto diff = compare();
    promise.set_value(diff);
    return diff;
  } catch (...) {
    promise.set_exception(std::current_exception());
    throw;
  }
}

}  // namespace ophook::cli
