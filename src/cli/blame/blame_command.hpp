#pragma once
#include <optional>
#include <string>
#include <vector>

#include "command.hpp"

namespace ophook::cli {

/// `ophook blame RUN`: for each call of a dump-mode run, its local error (its recorded outputs
/// against the op in float64 on its recorded inputs) and its propagated error (its recorded inputs
/// against the float64 chain of the calls that made them), and the share of the final result's
/// error its own rounding explains, ranked per op, module and source line (docs/precision.md).
/// The options are checked here; the chain runs in the blame engine (ophook._blame, run by
/// replay/replay_interpreter.hpp). Exit 0 the final result is within the tolerance (nothing needs
/// more precision), 1 it is not, 2 usage or input error.
class BlameCommand final : public Command {
 public:
  CLI::App* attach(CLI::App& app) override;
  int execute() override;

 private:
  std::vector<std::string> engine_arguments() const;

  std::string dir_;
  std::string by_ = "op";
  unsigned top_ = 10;
  unsigned candidates_ = 16;
  std::optional<double> tolerance_;
  std::string json_path_;
  std::string html_path_;
  std::string python_;
};

}  // namespace ophook::cli
