// The .npy header, byte for byte as numpy.lib.format writes and reads it.
#include "ophook/files/npy.hpp"

#include <algorithm>
#include <bit>
#include <charconv>
#include <cstring>
#include <limits>
#include <optional>

#include "ophook/error.hpp"

namespace ophook::core {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr std::size_t kMagicLen = 6;
constexpr std::size_t kAlign = 64;
// numpy leaves room for the growth axis to reach 21 digits so a header can be rewritten in place.
constexpr std::size_t kGrowthAxisMaxDigits = 21;
// numpy.load refuses longer header dicts unless allow_pickle=True (numpy.lib.format).
constexpr std::size_t kMaxHeaderSize = 10000;
// NPY_MAXDIMS of NumPy 2.
constexpr std::size_t kMaxDims = 64;
constexpr char kNativeOrder = std::endian::native == std::endian::little ? '<' : '>';

[[noreturn]] void fail(const std::string& what) {
  throw Error("invalid .npy header: " + what);
}

std::string quoted(std::string_view s) {
  // Hostile input may hold anything; show it printable and bounded.
  std::string out = "'";
  for (const char ch : s.substr(0, 40)) {
    const auto c = static_cast<unsigned char>(ch);
    out += (c >= 0x20 && c < 0x7f) ? ch : '?';
  }
  if (s.size() > 40) out += "...";
  return out + "'";
}

// A simple (non-structured, non-object) numpy descr, split into its parts.
struct Descr {
  char order = '|';
  char kind = 0;
  std::size_t item_size = 0;
  std::string suffix;  // datetime unit such as "[ns]", else empty
  std::string canonical() const {
    std::string out{order, kind};
    out += std::to_string(kind == 'U' ? item_size / 4 : item_size);
    return out + suffix;
  }
};

bool is_digit(char c) { return c >= '0' && c <= '9'; }

bool valid_datetime_unit(std::string_view unit) {
  while (!unit.empty() && is_digit(unit.front())) unit.remove_prefix(1);  // "[10ms]"
  for (const std::string_view u :
       {"Y", "M", "W", "D", "h", "m", "s", "ms", "us", "ns", "ps", "fs", "as", "generic"}) {
    if (unit == u) return true;
  }
  return false;
}

// Parses "<f4", "|S5", ">U3", "<M8[ns]" (byte order optional, as numpy.dtype allows); the order
// is canonicalised the way dtype.str spells it. Returns an error text instead of throwing so that
// npy_item_size can share it.
std::optional<Descr> parse_descr(std::string_view text, std::string* error) {
  auto bad = [&](std::string why) -> std::optional<Descr> {
    if (error) *error = std::move(why);
    return std::nullopt;
  };
  std::string_view s = text;
  Descr d;
  char order = '=';
  if (!s.empty() && (s[0] == '<' || s[0] == '>' || s[0] == '|' || s[0] == '=')) {
    order = s[0];
    s.remove_prefix(1);
  }
  if (s.empty()) return bad("descr " + quoted(text) + " has no type code");
  d.kind = s[0];
  s.remove_prefix(1);
  if (d.kind == 'O') return bad("object arrays (descr " + quoted(text) + ") need pickle");
  if (std::string_view("biufcMmSUV").find(d.kind) == std::string_view::npos) {
    return bad("unsupported dtype descr " + quoted(text));
  }
  std::size_t size = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), size);
  if (ec != std::errc() || end == s.data()) {
    return bad("descr " + quoted(text) + " lacks a valid item size");
  }
  s.remove_prefix(static_cast<std::size_t>(end - s.data()));
  auto size_ok = [&]() {
    switch (d.kind) {
      case 'b': return size == 1;
      case 'i': case 'u': return size == 1 || size == 2 || size == 4 || size == 8;
      case 'f': return size == 2 || size == 4 || size == 8 || size == 16;
      case 'c': return size == 8 || size == 16 || size == 32;
      case 'M': case 'm': return size == 8;
      default: return size >= 1 && size <= (std::size_t{1} << 30);  // S, U, V
    }
  };
  if (!size_ok()) return bad("descr " + quoted(text) + " has an invalid item size");
  d.item_size = d.kind == 'U' ? size * 4 : size;
  if ((d.kind == 'M' || d.kind == 'm') && !s.empty()) {
    if (s.size() < 3 || s.front() != '[' || s.back() != ']' ||
        !valid_datetime_unit(s.substr(1, s.size() - 2))) {
      return bad("descr " + quoted(text) + " has an invalid datetime unit");
    }
    d.suffix = std::string(s);
    s = {};
  }
  if (!s.empty()) return bad("descr " + quoted(text) + " has trailing characters");
  const bool no_order = d.kind == 'b' || d.kind == 'S' || d.kind == 'V' ||
                        ((d.kind == 'i' || d.kind == 'u') && size == 1);
  d.order = no_order ? '|' : (order == '>' || order == '<') ? order : kNativeOrder;
  return d;
}

// A cursor over the header dict text: a tiny reader for exactly the Python literal numpy writes
// ({'descr': str, 'fortran_order': bool, 'shape': tuple of int}). Every read is bounds-checked.
class DictReader {
  static constexpr int kMaxNesting = 32;
  static void multiply(std::size_t& size, std::int64_t dim) {
    if (__builtin_mul_overflow(size, static_cast<std::size_t>(dim), &size)) {
      fail("the structured dtype's item size overflows");
    }
  }

 public:
  explicit DictReader(std::string_view text) : text_(text) {}

  void skip_blanks() {
    while (pos_ < text_.size() &&
           (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' ||
            text_[pos_] == '\r' || text_[pos_] == '\f')) {
      ++pos_;
    }
  }
  bool at_end() const { return pos_ >= text_.size(); }
  char peek() const { return at_end() ? '\0' : text_[pos_]; }
  bool accept(char c) {
    skip_blanks();
    if (peek() != c) return false;
    ++pos_;
    return true;
  }
  void expect(char c, const char* where) {
    if (!accept(c)) fail(std::string("expected '") + c + "' " + where + at());
  }
  std::string at() const {
    if (at_end()) return " but the header ends";
    return " at offset " + std::to_string(pos_) + " (found " + quoted(text_.substr(pos_, 1)) + ")";
  }

  std::string_view string(const char* what) {
    skip_blanks();
    const char quote = peek();
    if (quote != '\'' && quote != '"') fail(std::string("expected a string for ") + what + at());
    const std::size_t start = ++pos_;
    while (pos_ < text_.size() && text_[pos_] != quote) {
      if (text_[pos_] == '\\' || text_[pos_] == '\n') {
        fail(std::string("unsupported character in the string for ") + what + at());
      }
      ++pos_;
    }
    if (at_end()) fail(std::string("unterminated string for ") + what);
    return text_.substr(start, pos_++ - start);
  }

  bool boolean() {
    skip_blanks();
    for (const auto& [word, value] : {std::pair{std::string_view("True"), true},
                                      std::pair{std::string_view("False"), false}}) {
      if (text_.substr(pos_, word.size()) == word) {
        pos_ += word.size();
        return value;
      }
    }
    fail("fortran_order is not True or False" + at());
  }

  std::int64_t dimension() {
    skip_blanks();
    if (peek() == '-') fail("shape has a negative dimension" + at());
    std::int64_t value = 0;
    const char* first = text_.data() + pos_;
    const auto [end, ec] = std::from_chars(first, text_.data() + text_.size(), value);
    if (ec == std::errc::result_out_of_range) fail("shape has a dimension too large" + at());
    if (ec != std::errc() || end == first) fail("shape holds something other than an integer" + at());
    pos_ += static_cast<std::size_t>(end - first);
    if (peek() == 'L') ++pos_;  // written by Python 2 (numpy filters these for versions <= 2.0)
    return value;
  }

  std::size_t position() const { return pos_; }
  std::string_view since(std::size_t start) const { return text_.substr(start, pos_ - start); }

  /// A structured dtype's descr list as numpy.save writes it ([('x', '<i4'), ('pos', [...]),
  /// ('m', '<f8', (2, 2)), (('title', 'name'), '|u1')]); returns its item size.
  std::size_t structured_item_size(int depth) {
    if (depth > kMaxNesting) fail("structured dtype nested more than 32 levels deep");
    expect('[', "to open a structured descr");
    std::size_t total = 0;
    while (!accept(']')) {
      expect('(', "to open a field");
      skip_blanks();
      if (accept('(')) {  // (title, name)
        string("a field title");
        expect(',', "after a field title");
        string("a field name");
        expect(')', "to close a field's (title, name)");
      } else {
        string("a field name");
      }
      expect(',', "after a field name");
      skip_blanks();
      std::size_t size = 0;
      if (peek() == '[') {
        size = structured_item_size(depth + 1);
      } else {
        std::string why;
        const auto d = parse_descr(string("a field format"), &why);
        if (!d) fail(why);
        size = d->item_size;
      }
      if (accept(',')) {
        skip_blanks();
        if (peek() == '(') {
          for (const std::int64_t dim : shape()) multiply(size, dim);
        } else if (peek() != ')') {
          multiply(size, dimension());
        }
      }
      expect(')', "to close a field");
      if (__builtin_add_overflow(total, size, &total)) fail("the structured dtype's item size overflows");
      if (!accept(',')) {
        expect(']', "to close a structured descr");
        break;
      }
    }
    return total;
  }

  std::vector<std::int64_t> shape() {
    skip_blanks();
    if (peek() == '[') fail("shape is a list, not a tuple" + at());
    expect('(', "to open the shape tuple");
    std::vector<std::int64_t> dims;
    bool comma = false;
    while (!accept(')')) {
      if (!dims.empty() && !comma) fail("expected ',' or ')' in the shape" + at());
      if (dims.size() == kMaxDims) fail("shape has more than 64 dimensions");
      dims.push_back(dimension());
      comma = accept(',');
    }
    if (dims.size() == 1 && !comma) fail("shape is a parenthesised integer, not a tuple");
    return dims;
  }

 private:
  std::string_view text_;
  std::size_t pos_ = 0;
};

void parse_dict(std::string_view text, NpyHeader& out) {
  DictReader r(text);
  r.expect('{', "at the start of the header dict");
  bool seen_descr = false, seen_order = false, seen_shape = false, structured = false;
  std::string descr_text;
  std::size_t structured_size = 0;
  while (!r.accept('}')) {
    const std::string_view key = r.string("a key");
    r.expect(':', "after a key");
    // A repeated key is legal in a Python dict literal: the last one wins, as in numpy.
    if (key == "descr") {
      r.skip_blanks();
      if (r.peek() == '(') fail("sub-array dtypes (a tuple descr) are not supported");
      structured = r.peek() == '[';
      if (structured) {
        const auto start = r.position();
        structured_size = r.structured_item_size(0);
        descr_text = std::string(r.since(start));
      } else {
        descr_text = std::string(r.string("descr"));
      }
      seen_descr = true;
    } else if (key == "fortran_order") {
      out.fortran_order = r.boolean();
      seen_order = true;
    } else if (key == "shape") {
      out.shape = r.shape();
      seen_shape = true;
    } else {
      fail("unexpected key " + quoted(key) + " (expected exactly descr, fortran_order, shape)");
    }
    if (!r.accept(',')) {
      r.expect('}', "to close the header dict");
      break;
    }
  }
  r.skip_blanks();
  if (!r.at_end()) fail("trailing characters after the header dict" + r.at());
  if (!seen_descr) fail("the header dict lacks 'descr'");
  if (!seen_order) fail("the header dict lacks 'fortran_order'");
  if (!seen_shape) fail("the header dict lacks 'shape'");
  if (structured) {
    out.descr = descr_text;  // the literal as written: two files of one dtype compare equal
    out.item_size = structured_size;
    return;
  }
  std::string why;
  const auto descr = parse_descr(descr_text, &why);
  if (!descr) fail(why);
  out.descr = descr->canonical();
  out.item_size = descr->item_size;
}

void append_int(std::string& out, std::int64_t value) {
  char buf[24];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, value);
  out.append(buf, ec == std::errc() ? end : buf);
}

std::size_t decimal_digits(std::int64_t value) {
  char buf[24];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, value);
  return ec == std::errc() ? static_cast<std::size_t>(end - buf) : 0;
}

}  // namespace

std::size_t NpyHeader::data_bytes() const {
  std::size_t total = item_size;
  for (const std::int64_t dim : shape) {
    if (dim <= 0) return 0;
    if (__builtin_mul_overflow(total, static_cast<std::size_t>(dim), &total)) {
      return std::numeric_limits<std::size_t>::max();  // saturate: never a small wrapped size
    }
  }
  return total;
}

std::size_t npy_item_size(std::string_view descr) {
  const auto parsed = parse_descr(descr, nullptr);
  return parsed ? parsed->item_size : 0;
}

std::string encode_npy_header(std::string_view descr, std::span<const std::int64_t> shape,
                              bool fortran_order) {
  // Built in place in one buffer (one allocation per header): magic, version and a 2-byte length
  // field, the dict, then the padding; the fields are filled in once the dict's length is known.
  std::string out;
  out.reserve(kMagicLen + 4 + 96 + descr.size() + shape.size() * 22 + kAlign);
  out.append(kMagic, kMagicLen);
  out.append(4, '\0');
  const std::size_t dict_start = out.size();
  // numpy: "{" + "'key': repr(value), " for the sorted keys + "}" + growth-axis spaces.
  // A structured dtype's descr is already the Python literal of its field list.
  const bool literal = descr.starts_with('[');
  out += literal ? "{'descr': " : "{'descr': '";
  out += descr;
  out += literal ? ", 'fortran_order': " : "', 'fortran_order': ";
  out += fortran_order ? "True" : "False";
  out += ", 'shape': (";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i != 0) out += ", ";
    append_int(out, shape[i]);
  }
  if (shape.size() == 1) out += ',';
  out += "), }";
  if (!shape.empty()) {
    const std::size_t digits = decimal_digits(fortran_order ? shape.back() : shape.front());
    if (digits < kGrowthAxisMaxDigits) out.append(kGrowthAxisMaxDigits - digits, ' ');
  }

  // Pad with spaces and a final newline so that the data starts at a multiple of 64; a header
  // already aligned still gets 64 spaces, as in numpy's _wrap_header.
  const std::size_t hlen = out.size() - dict_start + 1;
  // Format 3.0 is 2.0 with a UTF-8 dict (non-ASCII field names); 1.0 and 2.0 are read as latin-1.
  const bool utf8 = std::any_of(out.begin() + static_cast<std::ptrdiff_t>(dict_start), out.end(),
                                [](char c) { return static_cast<unsigned char>(c) >= 0x80; });
  std::size_t length_field = utf8 ? 4 : 2;
  std::size_t padlen = kAlign - (kMagicLen + 2 + length_field + hlen) % kAlign;
  if (hlen + padlen > 0xFFFF && length_field == 2) {
    length_field = 4;  // format 2.0: the dict does not fit a uint16 length
    padlen = kAlign - (kMagicLen + 2 + length_field + hlen) % kAlign;
  }
  if (length_field == 4) out.insert(dict_start, 2, '\0');
  out.append(padlen, ' ');
  out += '\n';
  const std::uint64_t total = hlen + padlen;
  out[kMagicLen] = static_cast<char>(utf8 ? 3 : length_field == 2 ? 1 : 2);
  out[kMagicLen + 1] = '\0';
  for (std::size_t i = 0; i < length_field; ++i) {
    out[kMagicLen + 2 + i] = static_cast<char>((total >> (8 * i)) & 0xFF);
  }
  return out;
}

NpyHeader parse_npy_header(std::span<const std::byte> bytes) {
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  const std::size_t n = bytes.size();
  if (n < kMagicLen + 2) {
    fail("truncated: " + std::to_string(n) + " bytes, the magic string and version need 8");
  }
  if (std::memcmp(p, kMagic, kMagicLen) != 0) fail("not a .npy file (bad magic string)");
  const unsigned major = p[6], minor = p[7];
  if (major < 1 || major > 3 || minor != 0) {
    fail("unsupported format version " + std::to_string(major) + "." + std::to_string(minor));
  }
  const std::size_t length_field = major == 1 ? 2 : 4;
  const std::size_t prefix = kMagicLen + 2 + length_field;
  if (n < prefix) fail("truncated: the header length field is incomplete");
  std::uint64_t hlen = 0;
  for (std::size_t i = 0; i < length_field; ++i) hlen |= std::uint64_t{p[8 + i]} << (8 * i);
  if (hlen > kMaxHeaderSize) {
    fail("header dict of " + std::to_string(hlen) + " bytes exceeds numpy.load's limit of " +
         std::to_string(kMaxHeaderSize));
  }
  if (hlen > n - prefix) {
    fail("truncated: the header says " + std::to_string(hlen) + " bytes, only " +
         std::to_string(n - prefix) + " follow");
  }
  const std::string_view text(reinterpret_cast<const char*>(p + prefix), hlen);

  NpyHeader header;
  parse_dict(text, header);
  header.header_bytes = prefix + hlen;
  std::size_t elements = 1;
  for (const std::int64_t dim : header.shape) {
    if (dim != 0 && __builtin_mul_overflow(elements, static_cast<std::size_t>(dim), &elements)) {
      fail("the shape's element count overflows");
    }
  }
  std::size_t data = 0;
  if (__builtin_mul_overflow(elements, header.item_size, &data) ||
      data > static_cast<std::size_t>(std::numeric_limits<std::int64_t>::max())) {
    fail("the array would need more bytes than numpy can address");
  }
  return header;
}

}  // namespace ophook::core
