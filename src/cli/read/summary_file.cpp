#include "read/summary_file.hpp"

#include <fmt/format.h>

#include <fstream>
#include <system_error>

namespace ophook::cli {

SummaryFile read_summary_file(const std::filesystem::path& dir) {
  SummaryFile file;
  const auto path = dir / "summary.json";
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return file;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    file.problem = fmt::format("{}: cannot be opened for reading", path.string());
    return file;
  }
  auto summary = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (summary.is_discarded() || !summary.is_object()) {
    file.problem = fmt::format("{}: not a valid JSON object", path.string());
    return file;
  }
  file.document = std::move(summary);
  return file;
}

}  // namespace ophook::cli
