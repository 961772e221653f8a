#pragma once
#include <stdexcept>
#include <string>

namespace ophook {

/// The one exception type of the project's set-up code (configuration, files, CLI input).
/// Hot paths (hooks, writer) never throw: they report through return values and the log.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace ophook
