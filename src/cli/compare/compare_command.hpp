#pragma once
#include <string>

#include "command.hpp"

namespace ophook::cli {

/// `ophook compare BASE NEW`: pairs the records of two runs and compares every array.
/// Exit 0 when all pairs are within tolerance and nothing is unmatched, 1 on differences,
/// 2 on usage or input errors.
class CompareCommand final : public Command {
 public:
  CLI::App* attach(CLI::App& app) override;
  int execute() override;

 private:
  std::string base_dir_, new_dir_;
  double rtol_ = 1e-5, atol_ = 1e-8;
  std::string json_path_, html_path_;
  unsigned threads_ = 0;
  std::string referee_, python_;
};

}  // namespace ophook::cli
