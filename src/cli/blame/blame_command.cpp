#include "blame/blame_command.hpp"

#include <fmt/format.h>

#include "replay/recorded_run.hpp"
#include "replay/replay_interpreter.hpp"

namespace ophook::cli {

CLI::App* BlameCommand::attach(CLI::App& app) {
  CLI::App* sub = app.add_subcommand(
      "blame", "Rank a recorded run's ops by how much of its final error their own rounding explains");
  sub->add_option("RUN", dir_, "the run's output directory (recorded with OPHOOK_MODE=dump)")->required();
  sub->add_option("--by", by_, "the table's groups: op name, nn.Module, or source line")
      ->check(CLI::IsMember({"op", "module", "line"}))
      ->capture_default_str();
  sub->add_option("--top", top_, "rows of each table")->check(CLI::PositiveNumber)->capture_default_str();
  sub->add_option("--candidates", candidates_,
                  "how many calls (those whose local error is furthest over its threshold) get their share "
                  "of the final error measured, one float64 run of the chain below each")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  sub->add_option("--tolerance", tolerance_,
                  "the final result's relative error that needs nothing (default: 10x its dtype's replay "
                  "threshold: float16 9.8e-3, bfloat16 7.8e-2, float32 1.2e-3)")
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--json", json_path_, "also write every call's errors and the tables as JSON to FILE")
      ->type_name("FILE");
  sub->add_option("--html", html_path_,
                  "also write the verdict and the tables as an HTML page to FILE (one file, no script; "
                  "each row's share of the final error drawn as a bar)")
      ->type_name("FILE");
  sub->add_option("--python", python_,
                  "the Python to replay with (default: the one that recorded RUN, else python3); it needs "
                  "numpy, and torch for torch calls")
      ->type_name("PATH");
  sub->footer(
      "Every call no replayable call encloses is run again in float64 twice: on its recorded\n"
      "inputs (its local error: the recorded outputs against that, as replay --reference\n"
      "float64 judges them) and on the float64 chain's values of the inputs earlier calls made\n"
      "(linked by the content digest of the recorded arrays; its propagated error: the recorded\n"
      "inputs against those). The final result is the last such call's floating outputs (the\n"
      "loss, the logits); its error is max |x - ref| / max |ref| against the chain. When it is\n"
      "above the tolerance, each of the --candidates calls with the worst local error gets its\n"
      "share: the final error the chain makes with only that call's local error added, over the\n"
      "run's. Tables: --by groups and calls, most to blame first (summed shares, then local\n"
      "error over threshold). Calls replay skips (random ops, the autograd graph, arrays with no\n"
      "file) are listed as skipped; their outputs are read from their files.\n"
      "Exit status: 0 the final result is within the tolerance (nothing needs more precision);\n"
      "1 it is not (the report names the groups explaining at least a tenth of it); 2 usage or\n"
      "input error. Example:\n"
      "  ophook blame np_op_dumps --by module --json blame.json --html blame.html\n");
  return sub;
}

std::vector<std::string> BlameCommand::engine_arguments() const {
  std::vector<std::string> args{dir_, "--by", by_, "--top", std::to_string(top_), "--candidates",
                                std::to_string(candidates_)};
  if (tolerance_) args.insert(args.end(), {"--tolerance", fmt::format("{}", *tolerance_)});
  if (!json_path_.empty()) args.insert(args.end(), {"--json", json_path_});
  if (!html_path_.empty()) args.insert(args.end(), {"--html", html_path_});
  return args;
}

int BlameCommand::execute() {
  check_recorded_run(dir_);
  return run_engine(choose_python(python_, {dir_}), "ophook._blame", engine_arguments());
}

}  // namespace ophook::cli
