#pragma once
#include <filesystem>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

/// A process directory's summary.json (docs/outputs.md, "summary.json"), read in one place for
/// every command. The file may be absent — a process killed before it finished, or still running
/// — or malformed; each caller decides what that means for it (report stops, compare orders the
/// process by its first record instead).
namespace ophook::cli {

struct SummaryFile {
  std::optional<nlohmann::json> document;  // the JSON object, when the file is there and one
  std::string problem;  // why a file that is there cannot be used ("<path>: not a valid JSON object"), else ""
  bool present() const { return document.has_value(); }
};

/// `dir`/summary.json. Never throws.
SummaryFile read_summary_file(const std::filesystem::path& dir);

}  // namespace ophook::cli
