#pragma once
#include <string>
#include <vector>

#include "child_env.hpp"
#include "command.hpp"

namespace ophook::cli {

/// `ophook run [options] -- CMD...`: runs CMD with libophook.so prepended to LD_PRELOAD and the
/// given options as OPHOOK_* variables; exits with CMD's status.
class RunCommand final : public Command {
 public:
  CLI::App* attach(CLI::App& app) override;
  int execute() override;

 private:
  HookSettings settings_;
  std::vector<std::string> command_;
};

}  // namespace ophook::cli
