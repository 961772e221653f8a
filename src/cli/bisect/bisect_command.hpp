#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "command.hpp"

namespace ophook::cli {

/// `ophook bisect [options] -- CMD...`: finds a small set of the program's ops that must run in
/// higher precision, by running CMD repeatedly under the hook with chosen groups of calls widened
/// through overrides (docs/precision.md). The options are checked here; the runs and the search
/// happen in the bisect engine (ophook._bisect, run by replay/replay_interpreter.hpp). Exit 0 a
/// set is named or nothing needs more precision, 1 the budget ran out first, 2 usage or input
/// error, 4 the program's noise floor is above the tolerance.
class BisectCommand final : public Command {
 public:
  CLI::App* attach(CLI::App& app) override;
  int execute() override;

 private:
  std::vector<std::string> engine_arguments() const;

  std::string by_ = "op";
  std::string to_ = "float64";
  unsigned max_runs_ = 60;
  std::optional<double> tolerance_;
  std::string check_;
  std::string state_;
  std::string output_ = "ophook_bisect";
  std::string python_;
  std::vector<std::string> command_;
};

}  // namespace ophook::cli
