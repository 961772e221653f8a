#pragma once

#include "core_handoff.hpp"

namespace ophook::preload {

/// The core's finish-before-exit entry once the stub's constructor has loaded the core (a Python
/// process), else nullptr.
FinishBeforeExitFunction loaded_core_finish() noexcept;

}  // namespace ophook::preload
