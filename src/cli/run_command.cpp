#include "run_command.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>

#include "child_process.hpp"
#include "library_locator.hpp"
#include "ophook/error.hpp"

namespace ophook::cli {

namespace {

/// Adds `--name VALUE` bound to an optional string, so an option not given sets no variable.
CLI::Option* add_optional(CLI::App* sub, const std::string& name,
                          std::optional<std::string>& target, const std::string& help) {
  return sub->add_option_function<std::string>(
      name, [&target](const std::string& value) { target = value; }, help);
}

CLI::Validator validator(std::string (*check)(const std::string&), const std::string& what) {
  return CLI::Validator([check](std::string& value) { return check(value); }, what);
}

}  // namespace

CLI::App* RunCommand::attach(CLI::App& app) {
  CLI::App* sub =
      app.add_subcommand("run", "Run a command with the hook (LD_PRELOAD and OPHOOK_* set for it)");
  add_optional(sub, "--output", settings_.output, "OPHOOK_OUTPUT: output directory")
      ->type_name("DIR");
  add_optional(sub, "--mode", settings_.mode,
               "OPHOOK_MODE: trace (specs only), stats (+ statistics), dump (+ .npy files)")
      ->type_name("MODE")
      ->check(CLI::IsMember({"trace", "stats", "dump"}));
  add_optional(sub, "--levels", settings_.levels,
               "OPHOOK_LEVELS: comma list of numpy, torch_function, torch_dispatch")
      ->type_name("LIST")
      ->check(validator(check_levels, "LEVELS"));
  add_optional(sub, "--include", settings_.include,
               "OPHOOK_INCLUDE: record only ops whose qualified name matches this regex")
      ->type_name("RE")
      ->check(validator(check_regex, "REGEX"));
  add_optional(sub, "--exclude", settings_.exclude,
               "OPHOOK_EXCLUDE: skip ops whose qualified name matches this regex")
      ->type_name("RE")
      ->check(validator(check_regex, "REGEX"));
  add_optional(sub, "--max-bytes", settings_.max_bytes,
               "OPHOOK_MAX_BYTES: cap on .npy bytes per process (e.g. 512M, 2G)")
      ->type_name("N")
      ->check(validator(check_byte_size, "SIZE"));
  sub->add_option("command", command_, "the command to run, after --")
      ->type_name("CMD...")
      ->required();
  sub->footer(
      "Prepends libophook.so to LD_PRELOAD and sets OPHOOK_* for the options given; options not\n"
      "given leave the caller's environment as it is. Example:\n"
      "  ophook run --mode stats --output runs/a -- python train.py --epochs 1\n"
      "Exit status: CMD's exit status; 128+N when CMD was killed by signal N; 127 when CMD is\n"
      "not found, 126 when it cannot be executed; 2 on bad options or when libophook.so is\n"
      "missing. SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2 are passed on to CMD.\n");
  return sub;
}

int RunCommand::execute() {
  const std::filesystem::path library = locate_preload_library();
  if (library.string().find_first_of(" :") != std::string::npos) {
    throw Error(fmt::format("{}: cannot be preloaded, its path contains a space or a colon",
                            library.string()));
  }
  if (settings_.output) {
    // The child may change directory before Python starts; the caller meant this directory.
    settings_.output = std::filesystem::absolute(*settings_.output).lexically_normal().string();
  }
  for (const auto& [name, value] : hook_variables(settings_)) {
    setenv(name.c_str(), value.c_str(), 1);
  }
  const char* existing = std::getenv("LD_PRELOAD");
  const std::string preload = prepend_preload(library.string(), existing ? existing : "");
  setenv("LD_PRELOAD", preload.c_str(), 1);
  return run_and_wait(command_);
}

}  // namespace ophook::cli
