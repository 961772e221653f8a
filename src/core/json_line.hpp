#pragma once
#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <string_view>

namespace ophook::core {

/// Appends JSON to a buffer without building a document: the writer thread formats one trace line
/// per recorded call, and a DOM (nlohmann::json) cost ~10 µs per line — more than the call being
/// recorded. Commas are the caller's business (`sep()`); strings are escaped per RFC 8259.
/// Not thread-safe; one per writer.
class JsonLine {
 public:
  explicit JsonLine(fmt::memory_buffer& out) : out_(out) {}

  void raw(std::string_view text) { out_.append(text); }
  void sep() { out_.push_back(','); }
  void key(std::string_view name) {
    string(name);
    out_.push_back(':');
  }
  void null() { raw("null"); }
  void boolean(bool v) { raw(v ? "true" : "false"); }
  void integer(std::int64_t v) { fmt::format_to(std::back_inserter(out_), "{}", v); }
  void unsigned_integer(std::uint64_t v) { fmt::format_to(std::back_inserter(out_), "{}", v); }
  /// Finite doubles only (callers encode NaN/Inf as values of their own): shortest round-trip form.
  void real(double v) { fmt::format_to(std::back_inserter(out_), "{}", v); }
  void string(std::string_view s);

 private:
  fmt::memory_buffer& out_;
};

}  // namespace ophook::core
