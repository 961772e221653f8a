#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "command.hpp"

namespace ophook::cli {

/// `ophook replay DIR`: re-runs the recorded calls of a run from their dumps (or, with --random,
/// on generated inputs) and compares the results with the recording or with a float64 reference.
/// The options are checked here; the calls run in the replay package (replay/replay_interpreter.hpp).
/// Exit 0 when every replayed call matches (is within the thresholds), 1 otherwise, 2 on usage
/// or input errors.
class ReplayCommand final : public Command {
 public:
  CLI::App* attach(CLI::App& app) override;
  int execute() override;

 private:
  std::vector<std::string> replay_arguments() const;

  std::string dir_;
  std::string reference_;
  std::string include_, exclude_;
  std::vector<std::int64_t> seqs_;
  std::string json_path_, html_path_;
  std::int64_t emit_script_ = -1;
  bool random_ = false;
  unsigned jobs_ = 0;
  std::uint32_t seed_ = 0;
  std::string python_;
};

}  // namespace ophook::cli
