#include "launch/preload_path_command.hpp"

#include <iostream>

#include "exit_codes.hpp"
#include "launch/library_locator.hpp"

namespace ophook::cli {

CLI::App* PreloadPathCommand::attach(CLI::App& app) {
  CLI::App* sub = app.add_subcommand(
      "preload-path", "Print the absolute path of libophook.so (the LD_PRELOAD value)");
  sub->footer(
      "Usage: LD_PRELOAD=$(ophook preload-path) python script.py\n"
      "The library lies beside the ophook executable (build/, or the installed ophook package).\n"
      "Exit status: 0 on success; 2 when the library cannot be found.\n");
  return sub;
}

int PreloadPathCommand::execute() {
  std::cout << locate_preload_library().string() << '\n';
  return kExitOk;
}

}  // namespace ophook::cli
