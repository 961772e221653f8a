#pragma once
#include <string>
#include <string_view>

namespace ophook::cli {

/// An LD_PRELOAD value with `library` first, then the entries of `existing` (the loader accepts
/// spaces and colons as separators) minus any copy of `library`, joined by ':'. Pure.
std::string prepend_preload(std::string_view library, std::string_view existing);

}  // namespace ophook::cli
