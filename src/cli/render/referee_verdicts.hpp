#pragma once
#include <nlohmann/json.hpp>
#include <ostream>

#include "compare/result.hpp"
#include "render/html/html_page.hpp"

namespace ophook::cli {

/// The verdicts in the three outputs of `compare`.
void print_referee_text(const CompareResult& result, std::ostream& out);
nlohmann::ordered_json referee_json(const RefereeVerdict& verdict);
void add_referee_html(const CompareResult& result, HtmlPage& page);

}  // namespace ophook::cli
