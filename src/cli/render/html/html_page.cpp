#include "render/html/html_page.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "ophook/error.hpp"

namespace ophook::cli {

namespace {

constexpr std::string_view kStyle = R"css(
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 24px auto;
       max-width: 1200px; padding: 0 16px; color: #1d2330; background: #fff; }
h1 { font-size: 22px; margin-bottom: 4px; } h2 { font-size: 17px; margin-top: 28px; }
h1, h2, p { overflow-wrap: anywhere; }
table { border-collapse: collapse; margin: 8px 0; font-variant-numeric: tabular-nums; }
th, td { padding: 3px 10px; border-bottom: 1px solid #e3e6ec; text-align: right;
         white-space: nowrap; }
th:first-child, td:first-child { text-align: left; }
td:last-child { white-space: normal; overflow-wrap: anywhere; }
td:last-child > span { display: inline-block; text-align: left; }
th { background: #f3f5f9; font-weight: 600; }
tr.flag td { background: #fdecec; }
table.facts td { text-align: left; } table.facts td:first-child { color: #5a6275; }
p.ok, p.bad, p.note { padding: 8px 12px; border-radius: 6px; }
p.ok { background: #e7f6ec; color: #145a2c; } p.bad { background: #fdecec; color: #8a1c1c; }
p.note { background: #f3f5f9; color: #3b4354; }
code, td.mono { font-family: ui-monospace, "SFMono-Regular", Menlo, monospace; font-size: 12.5px; }
svg { display: block; margin: 8px 0; max-width: 100%; height: auto; }
svg text { font: 11px system-ui, sans-serif; fill: #3b4354; }
)css";

}  // namespace

std::string html_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

HtmlPage::HtmlPage(std::string title) : title_(std::move(title)) { heading(title_, 1); }

void HtmlPage::raw(std::string_view html) { body_ += html; }

void HtmlPage::heading(std::string_view text, int level) {
  body_ += fmt::format("<h{0}>{1}</h{0}>\n", level, html_escape(text));
}

void HtmlPage::paragraph(std::string_view text, std::string_view css_class) {
  if (css_class.empty()) {
    body_ += fmt::format("<p>{}</p>\n", html_escape(text));
  } else {
    body_ += fmt::format("<p class=\"{}\">{}</p>\n", css_class, html_escape(text));
  }
}

void HtmlPage::table(const std::vector<std::string>& header,
                     const std::vector<std::vector<std::string>>& rows,
                     const std::vector<bool>& flagged) {
  body_ += "<table>\n<tr>";
  for (const std::string& cell : header) body_ += "<th>" + html_escape(cell) + "</th>";
  body_ += "</tr>\n";
  for (std::size_t r = 0; r < rows.size(); ++r) {
    body_ += r < flagged.size() && flagged[r] ? "<tr class=\"flag\">" : "<tr>";
    for (std::size_t c = 0; c < rows[r].size(); ++c) {
      // The last column (a reason, a mismatch list) takes the width left and wraps, so that a
      // table never runs off the page; its span keeps a short value right-aligned and the lines
      // of a long one left-aligned.
      const bool last = c + 1 == rows[r].size();
      body_ += (last ? "<td><span>" : "<td>") + html_escape(rows[r][c]) + (last ? "</span></td>" : "</td>");
    }
    body_ += "</tr>\n";
  }
  body_ += "</table>\n";
}

void HtmlPage::facts(const std::vector<std::pair<std::string, std::string>>& items) {
  body_ += "<table class=\"facts\">\n";
  for (const auto& [key, value] : items) {
    body_ += fmt::format("<tr><td>{}</td><td>{}</td></tr>\n", html_escape(key), html_escape(value));
  }
  body_ += "</table>\n";
}

std::string HtmlPage::str() const {
  return fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
      "<title>{}</title>\n<style>{}</style>\n</head>\n<body>\n{}</body>\n</html>\n",
      html_escape(title_), kStyle, body_);
}

void write_text_file(const std::filesystem::path& path, std::string_view content) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) {
    throw Error(fmt::format("{}: cannot be written: {}", path.string(), std::strerror(errno)));
  }
  out.write(content.data(), static_cast<std::streamsize>(content.size()));
  out.close();
  if (!out) {
    throw Error(fmt::format("{}: write failed", path.string()));
  }
}

}  // namespace ophook::cli
