#include "lines/json_line.hpp"

namespace ophook::core {

void JsonLine::string(std::string_view s) {
  out_.push_back('"');
  string_content(s);
  out_.push_back('"');
}

void JsonLine::string_content(std::string_view s) {
  static constexpr char hex[] = "0123456789abcdef";
  std::size_t clean = 0;  // start of the run of bytes needing no escape
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    raw(s.substr(clean, i - clean));
    clean = i + 1;
    switch (c) {
      case '"': raw("\\\""); break;
      case '\\': raw("\\\\"); break;
      case '\n': raw("\\n"); break;
      case '\r': raw("\\r"); break;
      case '\t': raw("\\t"); break;
      default: {
        const char escaped[] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
        raw(std::string_view(escaped, sizeof escaped));
      }
    }
  }
  raw(s.substr(clean));
}

}  // namespace ophook::core
