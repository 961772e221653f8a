#pragma once
#include "command.hpp"

namespace ophook::cli {

/// `ophook preload-path`: prints the absolute path of libophook.so, the value to put in
/// LD_PRELOAD. Exit 0, or 2 when the library is not where the installation puts it.
class PreloadPathCommand final : public Command {
 public:
  CLI::App* attach(CLI::App& app) override;
  int execute() override;
};

}  // namespace ophook::cli
