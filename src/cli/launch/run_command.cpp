#include "launch/run_command.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>

#include "launch/child_env.hpp"
#include "launch/child_process.hpp"
#include "launch/library_locator.hpp"
#include "ophook/config/settings.hpp"
#include "ophook/error.hpp"

namespace ophook::cli {

CLI::App* RunCommand::attach(CLI::App& app) {
  CLI::App* sub =
      app.add_subcommand("run", "Run a command with the hook (LD_PRELOAD and OPHOOK_* set for it)");
  for (const auto& setting : core::settings()) {
    const auto variable = setting.variable();
    const auto help = fmt::format("{}: {} ({}; default: {})", variable, setting.help, setting.values,
                                  setting.default_text);
    sub->add_option_function<std::string>(
           setting.option(), [this, variable](const std::string& value) { variables_[variable] = value; }, help)
        ->type_name(std::string(setting.metavar))
        ->check(CLI::Validator(
            [&setting](std::string& value) { return core::setting_problem(setting, value); }, ""));
  }
  sub->add_option("command", command_, "the command to run, after --")
      ->type_name("CMD...")
      ->required();
  sub->footer(
      "Prepends libophook.so to LD_PRELOAD and sets OPHOOK_* for the options given; options not\n"
      "given leave the caller's environment as it is. Example:\n"
      "  ophook run --mode stats --nan warn --output runs/a -- python train.py --epochs 1\n"
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
  if (auto output = variables_.find("OPHOOK_OUTPUT"); output != variables_.end()) {
    // The child may change directory before Python starts; the caller meant this directory.
    output->second = std::filesystem::absolute(output->second).lexically_normal().string();
  }
  for (const auto& [name, value] : variables_) {
    setenv(name.c_str(), value.c_str(), 1);
  }
  const char* existing = std::getenv("LD_PRELOAD");
  const std::string preload = prepend_preload(library.string(), existing ? existing : "");
  setenv("LD_PRELOAD", preload.c_str(), 1);
  return run_and_wait(command_);
}

}  // namespace ophook::cli
