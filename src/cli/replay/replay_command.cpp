#include "replay/replay_command.hpp"

#include <fmt/format.h>

#include <regex>

#include "read/parallel_for.hpp"
#include "replay/recorded_run.hpp"
#include "replay/replay_interpreter.hpp"

namespace ophook::cli {

namespace {

CLI::Validator regular_expression() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        try {
          std::regex(text, std::regex::ECMAScript);
        } catch (const std::regex_error& e) {
          return fmt::format("bad regular expression '{}': {}", text, e.what());
        }
        return "";
      },
      "REGEX");
}

}  // namespace

CLI::App* ReplayCommand::attach(CLI::App& app) {
  CLI::App* sub = app.add_subcommand(
      "replay", "Re-run recorded calls from their dumps and compare with the recording (exit 0 same, 1 different)");
  sub->add_option("DIR", dir_, "the run's output directory (recorded with OPHOOK_MODE=dump)")->required();
  sub->add_option("--reference", reference_,
                  "judge each call's recorded outputs against the op run again in this precision")
      ->check(CLI::IsMember({"float64"}));
  auto* include = sub->add_option("--include", include_, "only ops whose name this regex finds")
                      ->check(regular_expression());
  auto* exclude = sub->add_option("--exclude", exclude_, "leave out ops whose name this regex finds")
                      ->check(regular_expression());
  auto* seq = sub->add_option("--seq", seqs_, "only these calls (seq numbers, comma-separated)")
                  ->delimiter(',')
                  ->type_name("N[,M...]")
                  ->check(CLI::NonNegativeNumber);
  auto* json = sub->add_option("--json", json_path_, "also write every call's result as JSON to FILE")->type_name("FILE");
  auto* html = sub->add_option("--html", html_path_, "also write an HTML report (ops ranked by error) to FILE")
                   ->type_name("FILE");
  auto* random = sub->add_flag("--random", random_,
                               "config replay: inputs generated from the recorded shapes, dtypes and min/max "
                               "(any run, trace mode too), each call judged against itself in float64");
  auto* script = sub->add_option("--emit-script", emit_script_,
                                 "print a standalone Python script that replays call SEQ (for a bug report)")
                     ->type_name("SEQ")
                     ->check(CLI::NonNegativeNumber);
  script->excludes(include)->excludes(exclude)->excludes(seq)->excludes(json)->excludes(html)->excludes(random);
  sub->add_option("--jobs", jobs_, "worker processes (default: the number of cores)")->type_name("N")->check(
      CLI::PositiveNumber);
  sub->add_option("--seed", seed_, "--random: the generator's seed")->capture_default_str();
  sub->add_option("--python", python_,
                  "the Python to replay with (default: the one that recorded DIR, else python3); it needs "
                  "numpy, and torch for torch calls")
      ->type_name("PATH");
  sub->footer(
      "Each call is rebuilt from the files its own record names (never another call's): arrays\n"
      "in their recorded dtype and layout, the other arguments decoded from the trace. NumPy\n"
      "ufuncs and their methods, array functions, torch functions and aten ops are replayed;\n"
      "random and uninitialised-memory ops (randn, dropout, empty, ...), calls on the autograd\n"
      "graph and arguments that cannot be rebuilt are skipped, with the reason, never guessed.\n"
      "Default: each result is compared bit for bit with the recorded outputs (a NaN matches\n"
      "a NaN) and a mismatch shows its max abs/rel error.\n"
      "--reference float64: floating inputs (float16, bfloat16, float32) are widened to float64,\n"
      "the op runs again, and each recorded output is judged against that answer by its dtype's\n"
      "threshold T: mean relative error < T and max < 10 T, relative error |x - ref| / (|ref| +\n"
      "1e-7); T = 2^-10 float16, 2^-7 bfloat16, 2^-13 float32 (MindStudio's single-benchmark\n"
      "standard, as msprobe's family uses); integer and bool outputs must be equal.\n"
      "--random: for runs without dumps. Floating and complex inputs are drawn uniformly from\n"
      "the recorded [min, max] (standard normal without statistics), bool inputs at random,\n"
      "integer inputs only from a recorded range (OPHOOK_MODE=stats): calls needing anything\n"
      "else are skipped. Each call is judged against itself in float64 by the thresholds above.\n"
      "Exit status: 0 every replayed call matches (is within the thresholds); 1 otherwise (a\n"
      "missing or damaged file counts as a mismatch of the calls naming it); 2 usage or input\n"
      "error. Example:\n"
      "  ophook replay np_op_dumps --include 'matmul|linear' --json replay.json\n");
  return sub;
}

std::vector<std::string> ReplayCommand::replay_arguments() const {
  if (emit_script_ >= 0) return {"script", dir_, std::to_string(emit_script_)};
  const char* mode = random_ ? "random" : !reference_.empty() ? "reference" : "exact";
  std::vector<std::string> args{"replay", dir_, "--mode", mode,
                                "--jobs", std::to_string(jobs_ > 0 ? jobs_ : default_thread_count()),
                                "--seed", std::to_string(seed_)};
  for (const auto& [option, value] : {std::pair{"--include", &include_}, std::pair{"--exclude", &exclude_},
                                      std::pair{"--json", &json_path_}, std::pair{"--html", &html_path_}}) {
    if (!value->empty()) args.insert(args.end(), {option, *value});
  }
  if (!seqs_.empty()) {
    args.emplace_back("--seq");
    for (const std::int64_t seq : seqs_) args.push_back(std::to_string(seq));
  }
  return args;
}

int ReplayCommand::execute() {
  check_recorded_run(dir_);
  return run_engine(choose_python(python_, {dir_}), "ophook._replay", replay_arguments());
}

}  // namespace ophook::cli
