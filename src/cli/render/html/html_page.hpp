#pragma once
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace ophook::cli {

/// "&<>\"'" escaped for HTML text and attribute values. Pure.
std::string html_escape(std::string_view text);

/// A self-contained HTML page: one inline stylesheet, inline SVG, no scripts and no external
/// references, so it opens offline. Builds the page in memory; not thread-safe.
class HtmlPage {
 public:
  explicit HtmlPage(std::string title);

  /// Appends markup as it is (the caller escapes).
  void raw(std::string_view html);
  void heading(std::string_view text, int level = 2);
  /// A paragraph of escaped text; `css_class` is one of the page's classes ("ok", "bad", "note").
  void paragraph(std::string_view text, std::string_view css_class = "");
  /// A table of escaped cells; columns after the first are right-aligned, and the last one wraps
  /// to the page's width (long text left-aligned). Rows whose entry in `flagged` is true are
  /// highlighted.
  void table(const std::vector<std::string>& header,
             const std::vector<std::vector<std::string>>& rows,
             const std::vector<bool>& flagged = {});
  /// A two-column key/value table.
  void facts(const std::vector<std::pair<std::string, std::string>>& items);

  /// The complete document.
  std::string str() const;

 private:
  std::string title_;
  std::string body_;
};

/// Writes `content` to `path` (replacing it); throws ophook::Error naming the file on failure.
void write_text_file(const std::filesystem::path& path, std::string_view content);

}  // namespace ophook::cli
