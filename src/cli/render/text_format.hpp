#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ophook::cli {

/// Short human-readable numbers for terminal and HTML tables. Pure.

/// "0", "1.234e-05", "inf", "nan".
std::string format_error(double value);
/// "0.999998" (six decimals), or "-" for NaN (undefined).
std::string format_cosine(double value);
/// "12.3 MiB", "512 B".
std::string format_bytes(std::uint64_t bytes);
/// "850 ns", "12.4 us", "3.21 ms", "1.50 s".
std::string format_duration_ns(double ns);
/// "[2, 3]", "[]" for a 0-d array.
std::string format_shape(std::span<const std::int64_t> shape);

/// A plain left/right-aligned text table: the first column left-aligned, the others right.
std::string render_table(const std::vector<std::string>& header,
                         const std::vector<std::vector<std::string>>& rows,
                         std::string_view indent = "  ");

}  // namespace ophook::cli
