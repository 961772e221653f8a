#pragma once
#include <CLI/CLI.hpp>

namespace ophook::cli {

/// One subcommand of the ophook tool. The application registers every command once; a command
/// binds its options to its own members in `attach` and does its work in `execute`, which runs
/// only when the parser selected it. Not thread-safe; one instance per process.
class Command {
 public:
  virtual ~Command() = default;

  /// Adds this command as a subcommand of `app` and returns the subcommand.
  virtual CLI::App* attach(CLI::App& app) = 0;

  /// Runs the command after a successful parse; returns the process exit status. Throws
  /// ophook::Error for input errors (the application prints the message and exits 2).
  virtual int execute() = 0;
};

}  // namespace ophook::cli
