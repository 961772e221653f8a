#pragma once
#include <map>
#include <string>
#include <vector>

#include "command.hpp"

namespace ophook::cli {

/// `ophook run [options] -- CMD...`: runs CMD with libophook.so prepended to LD_PRELOAD and the
/// given options as OPHOOK_* variables; exits with CMD's status. It has one option per setting
/// of the settings table (--nan for OPHOOK_NAN, ...); an option not given leaves the variable as
/// the caller's environment has it.
class RunCommand final : public Command {
 public:
  CLI::App* attach(CLI::App& app) override;
  int execute() override;

  /// OPHOOK_* variable → value, for the options given.
  const std::map<std::string, std::string>& variables() const { return variables_; }

 private:
  std::map<std::string, std::string> variables_;
  std::vector<std::string> command_;
};

}  // namespace ophook::cli
