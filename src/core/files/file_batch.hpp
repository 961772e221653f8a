#pragma once
#include <span>
#include <string>

#include "ophook/files/output_dir.hpp"
#include "writer/array_outcome.hpp"

namespace ophook::core {

/// True for errors that concern one file name only (a name too long, a directory or a planted
/// file in the way): that file is skipped and the others go on. Anything else is a failure of the
/// medium (disk full, size limit, read-only, permission).
bool error_concerns_one_file(int error) noexcept;

/// One .npy file of a batch: named by its outcome, made of `header` and the record's bytes. With
/// `same_as` set, the file is not written: that earlier file is linked under the name if it holds
/// the same bytes (OutputDir::link_copy), and `link` says how that went.
struct FileJob {
  ArrayOutcome* outcome = nullptr;
  std::string header;
  std::span<const std::byte> data;
  IoResult result;
  bool attempted = false;  // false: the batch stopped at a failure of the medium before this file
  std::string same_as;
  OutputDir::LinkResult link;
};

/// Does `job` (writes its file, or links it when `same_as` is set) and returns false when the
/// medium failed: the caller stops the batch's other files then. Any thread.
bool do_file_job(OutputDir& dir, FileJob& job) noexcept;

}  // namespace ophook::core
