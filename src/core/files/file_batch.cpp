#include "files/file_batch.hpp"

#include <cerrno>

namespace ophook::core {

bool error_concerns_one_file(int error) noexcept {
  return error == ENAMETOOLONG || error == EINVAL || error == EEXIST || error == EISDIR ||
         error == ENOTEMPTY || error == ELOOP;
}

bool do_file_job(OutputDir& dir, FileJob& job) noexcept {
  const std::span<const std::byte> parts[] = {
      {reinterpret_cast<const std::byte*>(job.header.data()), job.header.size()}, job.data};
  job.attempted = true;
  if (!job.same_as.empty()) {
    job.link = dir.link_copy(job.same_as, job.outcome->file, parts);
    return true;  // not linked: the caller writes the file instead
  }
  job.result = dir.write_file(job.outcome->file, parts);
  return job.result.ok || error_concerns_one_file(job.result.error);
}

}  // namespace ophook::core
