#pragma once

namespace ophook::cli {

/// The ophook command: parses `argv`, runs the selected subcommand and returns the process exit
/// status (0 ok, 1 compare found differences, 2 usage or input error, or the child's status for
/// `run`). Prints errors on stderr; never throws.
int run_cli(int argc, char** argv);

}  // namespace ophook::cli
