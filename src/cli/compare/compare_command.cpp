#include "compare/compare_command.hpp"

#include <cmath>
#include <iostream>
#include <string>

#include "compare/referee.hpp"
#include "compare/run_comparison.hpp"
#include "exit_codes.hpp"
#include "read/parallel_for.hpp"
#include "render/compare_json.hpp"
#include "render/compare_text.hpp"
#include "render/html/compare_html.hpp"
#include "render/html/html_page.hpp"

namespace ophook::cli {

namespace {

CLI::Validator non_negative_number() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        double value = -1;
        std::size_t used = 0;
        try {
          value = std::stod(text, &used);
        } catch (const std::exception&) {
          used = 0;
        }
        if (used != text.size() || !(value >= 0) || !std::isfinite(value)) {
          return "'" + text + "' is not a non-negative number";
        }
        return "";
      },
      "");
}

}  // namespace

CLI::App* CompareCommand::attach(CLI::App& app) {
  CLI::App* sub = app.add_subcommand(
      "compare", "Compare the calls and arrays of two runs (exit 0 same, 1 different)");
  sub->add_option("BASE", base_dir_, "the reference run's output directory")->required();
  sub->add_option("NEW", new_dir_, "the run to check against BASE")->required();
  sub->add_option("--rtol", rtol_, "relative tolerance, as numpy.allclose")
      ->capture_default_str()
      ->check(non_negative_number());
  sub->add_option("--atol", atol_, "absolute tolerance, as numpy.allclose")
      ->capture_default_str()
      ->check(non_negative_number());
  sub->add_option("--json", json_path_, "also write the full result as JSON to FILE")
      ->type_name("FILE");
  sub->add_option("--html", html_path_, "also write a self-contained HTML report to FILE")
      ->type_name("FILE");
  sub->add_option("--threads", threads_, "worker threads (default: all cores)")->type_name("N");
  sub->add_option("--referee", referee_,
                  "for each op whose outputs differ, re-run its calls in float64 on each run's own inputs "
                  "and say which run is closer")
      ->check(CLI::IsMember({"float64"}));
  sub->add_option("--python", python_,
                  "--referee: the Python to re-run ops with (default: the one that recorded BASE or NEW, "
                  "else python3)")
      ->type_name("PATH");
  sub->footer(
      "Pairs the processes of two output directories - root with root, rank<R> with rank<R>,\n"
      "pid<PID> directories (e.g. DataLoader workers) in the order they started - and within each\n"
      "their calls: one to one when the op sequences are equal, else thread by thread, aligned\n"
      "by op name (longest common subsequence). Compares every array of every pair, from\n"
      "the .npy files when both runs have them, else from the recorded statistics.\n"
      "Prints the verdict with how many calls had values to compare, the first divergent call\n"
      "and the first origin (the earliest call whose array inputs match and whose results do\n"
      "not: where a difference starts; a differing call whose inputs already differ is marked\n"
      "propagated), a per-op table (max abs/rel error, min cosine similarity, origins,\n"
      "shape/dtype/NaN-pattern mismatches), the calls it could not pair and the verdict again.\n"
      "Values are close when |new - base| <= atol + rtol * |base| (NaN matches NaN, Inf the\n"
      "same Inf). Arrays holding uninitialized memory in both runs (outputs of torch.empty &\n"
      "co., recognised by their digest wherever they reappear) are not compared.\n"
      "A truncated last line of a trace.jsonl is ignored with a warning.\n"
      "--referee float64: for each op with differing pairs whose arrays both runs dumped (its first\n"
      "32 such pairs), each side's call is re-run with its floating inputs widened to float64 and\n"
      "the side whose recorded outputs have the smaller max relative error to that answer is the\n"
      "closer one (a tie within 1%); 'ophook replay --help' says how the error is measured.\n"
      "Exit status: 0 all pairs within tolerance, nothing unmatched, values compared; 1\n"
      "differences, unmatched calls, or no values to compare (trace mode: the verdict is\n"
      "'same calls, values not recorded'); 2 usage or input error (missing directory or\n"
      "trace.jsonl, malformed trace line, missing or corrupt .npy file) - the message names\n"
      "the file. docs/compare.md explains how to read the report.\n");
  return sub;
}

int CompareCommand::execute() {
  CompareOptions options;
  options.base_dir = base_dir_;
  options.new_dir = new_dir_;
  options.tolerance = {rtol_, atol_};
  options.threads = threads_ > 0 ? threads_ : default_thread_count();
  CompareResult result = run_comparison(options);
  if (!referee_.empty()) referee_float64(result, python_, options.threads);
  for (const std::string& warning : result.warnings) {
    std::cerr << "ophook compare: warning: " << warning << '\n';
  }
  print_compare_text(result, std::cout);
  if (!json_path_.empty()) write_compare_json_file(result, json_path_);
  if (!html_path_.empty()) write_text_file(html_path_, render_compare_html(result));
  return result.same() ? kExitOk : kExitDifferent;
}

}  // namespace ophook::cli
