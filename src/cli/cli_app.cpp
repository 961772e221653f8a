#include "cli_app.hpp"

#include <iostream>
#include <memory>
#include <utility>
#include <vector>

#include "bisect/bisect_command.hpp"
#include "blame/blame_command.hpp"
#include "command.hpp"
#include "compare/compare_command.hpp"
#include "exit_codes.hpp"
#include "ophook/error.hpp"
#include "launch/preload_path_command.hpp"
#include "replay/replay_command.hpp"
#include "report/report_command.hpp"
#include "launch/run_command.hpp"

#ifndef OPHOOK_VERSION
#define OPHOOK_VERSION "unknown"
#endif

namespace ophook::cli {

namespace {

std::vector<std::unique_ptr<Command>> make_commands() {
  std::vector<std::unique_ptr<Command>> commands;
  commands.push_back(std::make_unique<RunCommand>());
  commands.push_back(std::make_unique<CompareCommand>());
  commands.push_back(std::make_unique<ReportCommand>());
  commands.push_back(std::make_unique<ReplayCommand>());
  commands.push_back(std::make_unique<BisectCommand>());
  commands.push_back(std::make_unique<BlameCommand>());
  commands.push_back(std::make_unique<PreloadPathCommand>());
  return commands;
}

int execute_guarded(Command& command, const std::string& name) {
  try {
    return command.execute();
  } catch (const Error& e) {
    std::cerr << "ophook " << name << ": error: " << e.what() << '\n';
  } catch (const std::exception& e) {
    std::cerr << "ophook " << name << ": internal error: " << e.what() << '\n';
  } catch (...) {
    std::cerr << "ophook " << name << ": internal error\n";
  }
  return kExitUsage;
}

}  // namespace

int run_cli(int argc, char** argv) {
  CLI::App app{
      "ophook: record every NumPy/PyTorch operator call of a Python program, and read the\n"
      "records back. The recorder is the preload library; this tool runs programs under it\n"
      "and compares, summarises or replays what it wrote, or blames or bisects which ops need more precision.",
      "ophook"};
  app.set_version_flag("--version", std::string("ophook ") + OPHOOK_VERSION,
                       "Print the version and exit");
  app.require_subcommand(1);
  app.footer(
      "Run 'ophook SUBCOMMAND --help' for the options of each subcommand.\n"
      "Exit status: 0 success; 1 'compare' found differences, or calls 'replay' re-ran differ;\n"
      "2 usage or input error; 'bisect' 1 and 4, 'blame' 1: see their --help;\n"
      "'run' exits with the status of the command it ran.\n");

  std::vector<std::unique_ptr<Command>> commands = make_commands();
  std::vector<std::pair<CLI::App*, Command*>> attached;
  attached.reserve(commands.size());
  for (const auto& command : commands) {
    attached.emplace_back(command->attach(app), command.get());
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? kExitOk : kExitUsage;
  }
  for (const auto& [sub, command] : attached) {
    if (sub->parsed()) {
      return execute_guarded(*command, sub->get_name());
    }
  }
  return kExitUsage;  // unreachable: require_subcommand(1) guarantees one was parsed
}

}  // namespace ophook::cli
