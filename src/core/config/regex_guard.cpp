// Whether a pattern may be handed to std::regex: OPHOOK_INCLUDE, OPHOOK_EXCLUDE, OPHOOK_MODULES and
// OPHOOK_DUMP_INCLUDE are compiled by the recorder, and a pattern std::regex mishandles must be
// rejected before it gets there.
#include <regex>
#include <string>
#include <string_view>

#include "ophook/config/settings.hpp"

namespace ophook::core {
namespace {

// libstdc++ 12 reads the number of a back-reference (\N) or of a {n,m} count into a long without
// an overflow check: 20 digits are undefined behaviour inside std::regex (found by fuzz_config).
// True when such a number has more digits than any real pattern needs.
bool has_oversized_regex_number(std::string_view pattern) {
  constexpr std::size_t kMaxDigits = 9;
  bool escaped = false, in_braces = false;
  std::size_t run = 0;  // digits so far of a number std::regex will read
  for (const char c : pattern) {
    const bool digit = c >= '0' && c <= '9';
    if (run > 0 && digit) {
      if (++run > kMaxDigits) return true;
      continue;
    }
    run = 0;
    if (escaped) {
      escaped = false;
      run = digit ? 1 : 0;
    } else if (c == '\\') {
      escaped = true;
    } else if (c == '{' || c == '}') {
      in_braces = c == '{';
    } else if (in_braces && digit) {
      run = 1;
    }
  }
  return false;
}

}  // namespace

std::string regex_problem(std::string_view pattern) {
  if (has_oversized_regex_number(pattern)) return "a back-reference or repeat count of more than 9 digits";
  try {
    const std::regex compiled(pattern.begin(), pattern.end(), std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    return e.what();
  }
  return "";
}

}  // namespace ophook::core
