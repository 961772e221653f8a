// OPHOOK_STEPS / OPHOOK_RANKS lists: "3", "0-2,10", "100-".
#include <algorithm>
#include <charconv>

#include "config/setting_parser.hpp"
#include "ophook/config/config.hpp"

namespace ophook::core {
namespace {

std::optional<std::uint64_t> number(std::string_view text) {
  text = trim(text);
  std::uint64_t value = 0;
  const auto* end = text.data() + text.size();
  const auto [ptr, error] = std::from_chars(text.data(), end, value);
  if (text.empty() || error != std::errc() || ptr != end) return std::nullopt;
  return value;
}

}  // namespace

std::optional<RangeSet> parse_ranges(std::string_view text) {
  RangeSet out;
  std::string_view rest = text;
  while (true) {
    const std::size_t comma = rest.find(',');
    const std::string_view item = trim(rest.substr(0, comma));
    const std::size_t dash = item.find('-');
    const auto low = number(item.substr(0, dash));
    if (!low) return std::nullopt;
    std::uint64_t high = *low;
    if (dash != std::string_view::npos) {
      const auto tail = trim(item.substr(dash + 1));
      const auto parsed = tail.empty() ? std::optional(RangeSet::kOpen) : number(tail);
      if (!parsed || *parsed < *low) return std::nullopt;
      high = *parsed;
    }
    out.ranges.emplace_back(*low, high);
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  std::sort(out.ranges.begin(), out.ranges.end());
  std::vector<std::pair<std::uint64_t, std::uint64_t>> merged;
  for (const auto& range : out.ranges) {
    if (!merged.empty() && (merged.back().second == RangeSet::kOpen || range.first <= merged.back().second + 1)) {
      merged.back().second = std::max(merged.back().second, range.second);
    } else {
      merged.push_back(range);
    }
  }
  out.ranges = std::move(merged);
  return out;
}

bool RangeSet::contains(std::uint64_t value) const noexcept {
  if (ranges.empty()) return true;
  for (const auto& [low, high] : ranges) {
    if (value < low) return false;
    if (value <= high) return true;
  }
  return false;
}

std::string RangeSet::to_string() const {
  std::string out;
  for (const auto& [low, high] : ranges) {
    if (!out.empty()) out += ',';
    out += std::to_string(low);
    if (high == kOpen) {
      out += '-';
    } else if (high != low) {
      out += '-' + std::to_string(high);
    }
  }
  return out;
}

}  // namespace ophook::core
