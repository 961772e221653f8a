#pragma once
#include <string>

#include "command.hpp"

namespace ophook::cli {

/// `ophook report DIR`: a summary of one run on the terminal, optionally an HTML page with
/// charts and a Chrome trace. Exit 0, or 2 on input errors.
class ReportCommand final : public Command {
 public:
  CLI::App* attach(CLI::App& app) override;
  int execute() override;

 private:
  std::string dir_;
  std::string html_path_, chrome_path_;
  std::size_t top_ = 15;
};

}  // namespace ophook::cli
