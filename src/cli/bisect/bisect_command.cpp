#include "bisect/bisect_command.hpp"

#include <fmt/format.h>

#include <filesystem>

#include "launch/library_locator.hpp"
#include "replay/replay_interpreter.hpp"

namespace ophook::cli {

namespace fs = std::filesystem;

namespace {

/// --python, else the program's own interpreter when CMD starts with one (it has NumPy, which
/// the engine reads the results with), else python3 in PATH.
PythonChoice engine_python(const std::string& explicit_python, const std::vector<std::string>& command) {
  if (!explicit_python.empty()) return {explicit_python, "--python"};
  if (fs::path(command.front()).filename().string().starts_with("python")) {
    return {command.front(), "the program's interpreter"};
  }
  return {"python3", "python3 in PATH"};
}

}  // namespace

CLI::App* BisectCommand::attach(CLI::App& app) {
  CLI::App* sub = app.add_subcommand(
      "bisect", "Find the few ops that must run in higher precision: runs CMD with chosen ops widened");
  sub->add_option("--by", by_, "group the calls by op name, by nn.Module, or by source line")
      ->check(CLI::IsMember({"op", "module", "line"}))
      ->capture_default_str();
  sub->add_option("--to", to_, "the precision the chosen calls run in")
      ->check(CLI::IsMember({"float64", "float32"}))
      ->capture_default_str();
  sub->add_option("--max-runs", max_runs_, "the most runs of CMD, the first three included")
      ->check(CLI::Range(3u, 100000u))
      ->capture_default_str();
  sub->add_option("--tolerance", tolerance_,
                  "a run is good when its result lies within this relative error of the all-widened run's "
                  "(default: a tenth of the unchanged program's error, at least the result dtype's threshold)")
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--check", check_, "judge each run by this shell command's exit status instead (0 good)")
      ->type_name("CMD");
  sub->add_option("--output", output_, "where the runs record (kept: the three first runs)")
      ->type_name("DIR")
      ->capture_default_str();
  sub->add_option("--state", state_, "the runs done so far, to continue an interrupted bisection (default: DIR/state.json)")
      ->type_name("FILE");
  sub->add_option("--python", python_,
                  "the Python the engine runs in, which needs numpy (default: CMD's interpreter when CMD starts "
                  "with python, else python3)")
      ->type_name("PATH");
  sub->add_option("command", command_, "the program, after --")->type_name("CMD...")->required();
  sub->footer(
      "Runs CMD under the hook (ophook run, dump mode with a ring: only the last calls' arrays are\n"
      "written), first unchanged: every outermost call that reads a floating array narrower than\n"
      "--to is a candidate, grouped by --by. Then unchanged again (the noise floor: how far two\n"
      "unchanged runs' results lie apart), then with every group widened (the reference). Widened\n"
      "calls get their floating inputs in --to and give back outputs in the dtype the program\n"
      "would have got (under autocast: the dtype outside autocast); the program is not changed.\n"
      "The result is the floating outputs of the last outermost call that has any (the loss, the\n"
      "logits); its error is max |x - ref| / max |ref| against the reference run, or --check CMD\n"
      "judges each run (exit 0 good; OPHOOK_BISECT_RUN names the run's recording).\n"
      "Delta debugging then finds a small set of groups that is good: the larger half, else the\n"
      "other, else both with the other kept widened; one culprit among G groups takes at most\n"
      "ceil(2 log2 G) + 3 runs. The answer names each group's op, module and source line with\n"
      "the result's error with the set widened and without that group. A run whose program fails\n"
      "is reported with its stderr and its set counts as not good. Each run is saved in --state\n"
      "as it ends: the same command again continues where an interrupted bisection stopped.\n"
      "Exit status: 0 a set is named, or nothing needs more precision; 1 --max-runs ran out first\n"
      "(the smallest good set found so far is named), or --check fails with every group widened;\n"
      "2 usage or input error (CMD fails unchanged, a --state of another bisection); 4 the noise\n"
      "floor is above the tolerance (the program is not deterministic enough). Example:\n"
      "  ophook bisect --by module -- python train.py --steps 3\n");
  return sub;
}

std::vector<std::string> BisectCommand::engine_arguments() const {
  std::vector<std::string> args{"--ophook",   self_executable().string(),
                                "--by",       by_,
                                "--to",       to_,
                                "--max-runs", std::to_string(max_runs_),
                                "--output",   fs::absolute(output_).string(),
                                "--state",    fs::absolute(state_.empty() ? fs::path(output_) / "state.json" : fs::path(state_)).string()};
  if (tolerance_) args.insert(args.end(), {"--tolerance", fmt::format("{}", *tolerance_)});
  if (!check_.empty()) args.insert(args.end(), {"--check", check_});
  args.emplace_back("--");
  args.insert(args.end(), command_.begin(), command_.end());
  return args;
}

int BisectCommand::execute() { return run_engine(engine_python(python_, command_), "ophook._bisect", engine_arguments()); }

}  // namespace ophook::cli
