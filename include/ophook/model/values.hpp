#pragma once
#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

namespace ophook::core {

/// Tags of the compact value encoding that a hook writes on the program's thread and the writer
/// thread turns into JSON. Everything is appended to one byte vector: no per-value allocation.
enum class ValueTag : std::uint8_t {
  Null,
  True,
  False,
  Int,        // int64
  Float,      // double (non-finite floats become Other on the writer side)
  Str,        // u32 length + bytes
  ListBegin,  // a list; values follow until ListEnd
  ListEnd,
  Key,        // u32 length + bytes: the name of the next keyword value
  Array,      // u32 index into CallRecord::arrays
  Other,      // kind (Str payload) + repr (Str payload)
  TupleBegin,  // a tuple (torch.Size, torch.return_types too); values follow until ListEnd.
               // JSON has no tuples: it becomes an array, named in the record's "tuples" field
};

/// Appends encoded values to a byte vector. Not thread-safe; one per record being built.
class ValueWriter {
 public:
  explicit ValueWriter(std::vector<std::uint8_t>& out) : out_(out) {}

  void null() { tag(ValueTag::Null); }
  void boolean(bool v) { tag(v ? ValueTag::True : ValueTag::False); }
  void integer(std::int64_t v) { tag(ValueTag::Int), raw(v); }
  void real(double v) { tag(ValueTag::Float), raw(v); }
  void str(std::string_view s) { tag(ValueTag::Str), text(s); }
  void begin_list() { tag(ValueTag::ListBegin); }
  void begin_tuple() { tag(ValueTag::TupleBegin); }
  void end_list() { tag(ValueTag::ListEnd); }
  void key(std::string_view name) { tag(ValueTag::Key), text(name); }
  void array(std::uint32_t index) { tag(ValueTag::Array), raw(index); }
  void other(std::string_view kind, std::string_view repr) { tag(ValueTag::Other), text(kind), text(repr); }

 private:
  void tag(ValueTag t) { out_.push_back(static_cast<std::uint8_t>(t)); }
  // Byte by byte: each push_back is an inlined capacity check, where resize() called out of line
  // and zero-filled bytes about to be overwritten (≈ 45 instructions per value, on every call).
  template <typename T>
  void raw(T v) {
    std::uint8_t bytes[sizeof(T)];
    std::memcpy(bytes, &v, sizeof(T));
    for (const auto b : bytes) out_.push_back(b);
  }
  void text(std::string_view s) {
    raw(static_cast<std::uint32_t>(s.size()));
    out_.insert(out_.end(), s.begin(), s.end());
  }
  std::vector<std::uint8_t>& out_;
};

/// Reads back what ValueWriter wrote, one token at a time. Used on the writer thread only.
class ValueReader {
 public:
  struct Token {
    ValueTag tag = ValueTag::Null;
    std::int64_t i = 0;
    double f = 0;
    std::uint32_t index = 0;
    std::string_view s;     // Str, Key, Other's kind
    std::string_view repr;  // Other's repr
  };

  ValueReader(const std::uint8_t* begin, const std::uint8_t* end) : p_(begin), end_(end) {}
  bool done() const { return p_ >= end_; }

  Token next() {
    Token t;
    t.tag = static_cast<ValueTag>(*p_++);
    switch (t.tag) {
      case ValueTag::Int: t.i = raw<std::int64_t>(); break;
      case ValueTag::Float: t.f = raw<double>(); break;
      case ValueTag::Str:
      case ValueTag::Key: t.s = text(); break;
      case ValueTag::Array: t.index = raw<std::uint32_t>(); break;
      case ValueTag::Other: t.s = text(), t.repr = text(); break;
      default: break;
    }
    return t;
  }

 private:
  template <typename T>
  T raw() {
    T v;
    std::memcpy(&v, p_, sizeof(T));
    p_ += sizeof(T);
    return v;
  }
  std::string_view text() {
    const auto n = raw<std::uint32_t>();
    std::string_view s(reinterpret_cast<const char*>(p_), n);
    p_ += n;
    return s;
  }
  const std::uint8_t* p_;
  const std::uint8_t* end_;
};

}  // namespace ophook::core
