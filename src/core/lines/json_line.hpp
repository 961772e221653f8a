#pragma once
#include <fmt/compile.h>
#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <string_view>

#include "lines/line_buffer.hpp"

namespace ophook::core {

/// Appends JSON to a buffer without building a document: the writer thread formats one trace line
/// per recorded call, and a DOM (nlohmann::json) costs more per line than the call being recorded
/// (docs/design.md, "The writer"). Commas are the caller's business (`sep()`); strings are escaped per RFC 8259.
/// Numbers go through fmt's compiled forms (no format-string parsing per value, same text as
/// "{}"). Not thread-safe; one per writer.
class JsonLine {
 public:
  explicit JsonLine(LineBuffer& out) : out_(out) {}

  /// Always inlined, like LineBuffer::append: a literal's copy becomes a few moves.
  [[gnu::always_inline]] void raw(std::string_view text) { out_.append(text); }
  void sep() { out_.push_back(','); }
  void key(std::string_view name) {
    string(name);
    out_.push_back(':');
  }
  void null() { raw("null"); }
  void boolean(bool v) { raw(v ? "true" : "false"); }
  void integer(std::int64_t v) { digits(fmt::format_int(v)); }
  void unsigned_integer(std::uint64_t v) { digits(fmt::format_int(v)); }
  /// Finite doubles only (callers encode NaN/Inf as values of their own): shortest round-trip form.
  void real(double v) {
    char text[32];  // the longest shortest form, "-2.2250738585072014e-308", has 24
    raw({text, static_cast<std::size_t>(fmt::format_to(text, FMT_COMPILE("{}"), v) - text)});
  }
  /// A Python float's value: real()'s text, with ".0" added when that reads as an integer
  /// ("1.0", not "1"), so that a reader tells 1.0 from 1 (np.add(ints, 1.0) returns floats).
  void python_float(double v) {
    char text[34];
    auto* end = fmt::format_to(text, FMT_COMPILE("{}"), v);
    if (std::string_view(text, static_cast<std::size_t>(end - text)).find_first_of(".e") == std::string_view::npos) {
      *end++ = '.';
      *end++ = '0';
    }
    raw({text, static_cast<std::size_t>(end - text)});
  }
  void string(std::string_view s);
  /// `s` escaped as string() does, without the quotes: for pieces of a string built in parts.
  void string_content(std::string_view s);

 private:
  void digits(const fmt::format_int& f) { raw(std::string_view(f.data(), f.size())); }

  LineBuffer& out_;
};

}  // namespace ophook::core
