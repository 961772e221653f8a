#include "report/report_command.hpp"

#include <algorithm>
#include <iostream>

#include "exit_codes.hpp"
#include "render/chrome_trace.hpp"
#include "render/html/html_page.hpp"
#include "render/html/report_html.hpp"
#include "render/report_text.hpp"
#include "report/report_contents.hpp"

namespace ophook::cli {

CLI::App* ReportCommand::attach(CLI::App& app) {
  CLI::App* sub =
      app.add_subcommand("report", "Summarise one run; optionally an HTML page and a Chrome trace");
  sub->add_option("DIR", dir_, "the run's output directory (OPHOOK_OUTPUT)")->required();
  sub->add_option("--html", html_path_, "write a self-contained HTML report to FILE")
      ->type_name("FILE");
  sub->add_option("--chrome-trace", chrome_path_, "write a Chrome Trace Event JSON file to FILE")
      ->type_name("FILE");
  sub->add_option("--top", top_, "how many ops the top lists and charts show")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  sub->footer(
      "Shows totals, the top ops by count and by total time, the first NaN/Inf, the byte\n"
      "budget and write errors, and the per-process subdirectories (pid*/, rank*/) found.\n"
      "The Chrome trace opens in Perfetto (ui.perfetto.dev) or chrome://tracing.\n"
      "A run of many ranks is read on every core from the index each rank's summary.json holds;\n"
      "the page stays short whatever the ranks (docs/ranks.md, \"Thousands of ranks\").\n"
      "Exit status: 0 on success; 3 when the run is incomplete (a rank directory missing, a\n"
      "process without its summary.json or cut short, a directory of an earlier run): the rest is\n"
      "reported and the page names them; 2 on usage or input errors (missing directory or\n"
      "trace.jsonl, malformed trace line or summary.json) - the message names the file.\n");
  return sub;
}

int ReportCommand::execute() {
  const RunReport report = load_run_report(dir_, !html_path_.empty() || !chrome_path_.empty());
  // As bounded as the page: a fault shared by thousands of ranks is said a few times and counted.
  constexpr std::size_t kWarnings = 10;
  for (std::size_t i = 0; i < std::min(kWarnings, report.warnings.size()); ++i) {
    std::cerr << "ophook report: warning: " << report.warnings[i] << '\n';
  }
  if (report.warnings.size() > kWarnings) {
    std::cerr << "ophook report: warning: … and " << report.warnings.size() - kWarnings << " more warnings\n";
  }
  print_report_text(report, std::cout, top_);
  if (!html_path_.empty()) write_text_file(html_path_, render_report_html(report, top_));
  if (!chrome_path_.empty()) write_chrome_trace_file(report, chrome_path_);
  return report.incomplete() ? kExitIncomplete : kExitOk;
}

}  // namespace ophook::cli
