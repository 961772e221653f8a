#pragma once
#include <fmt/compile.h>
#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace ophook::core {

/// Appends JSON to a buffer without building a document: the writer thread formats one trace line
/// per recorded call, and a DOM (nlohmann::json) cost ~10 µs per line — more than the call being
/// recorded. Commas are the caller's business (`sep()`); strings are escaped per RFC 8259.
/// Numbers go through fmt's compiled forms (no format-string parsing per value, same text as
/// "{}"). Not thread-safe; one per writer.
class JsonLine {
 public:
  explicit JsonLine(fmt::memory_buffer& out) : out_(out) {}

  /// A copy into the reserved tail: fmt's generic append() costs ~80 instructions per call, and
  /// a line is made of dozens of short pieces. Always inlined: for a literal the copy's length is
  /// then a constant and the compiler turns memcpy into a few moves instead of a libc call.
  [[gnu::always_inline]] void raw(std::string_view text) {
    const auto at = out_.size();
    out_.try_resize(at + text.size());
    std::memcpy(out_.data() + at, text.data(), text.size());
  }
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
  void real(double v) { fmt::format_to(std::back_inserter(out_), FMT_COMPILE("{}"), v); }
  void string(std::string_view s);
  /// `s` escaped as string() does, without the quotes: for pieces of a string built in parts.
  void string_content(std::string_view s);

 private:
  void digits(const fmt::format_int& f) { raw(std::string_view(f.data(), f.size())); }

  fmt::memory_buffer& out_;
};

}  // namespace ophook::core
