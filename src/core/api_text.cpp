#include "api_text.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "ophook/recorder.hpp"
#include "ophook/values.hpp"

namespace ophook::core {
namespace {

class ApiFormatter {
 public:
  ApiFormatter(const CallRecord& record, const Recorder& recorder, std::string_view array_word)
      : record_(record), recorder_(recorder), array_word_(array_word) {}

  void section(std::string& out, std::uint32_t from, std::uint32_t to, bool& first) {
    const auto* base = record_.values.data();
    ValueReader reader(base + from, base + to);
    while (!reader.done()) {
      auto token = reader.next();
      out += first ? "" : ", ";
      first = false;
      if (token.tag == ValueTag::Key) {
        out += token.s;
        out += '=';
        token = reader.next();
      }
      value(out, reader, token);
    }
  }

 private:
  void value(std::string& out, ValueReader& reader, const ValueReader::Token& token) {
    switch (token.tag) {
      case ValueTag::Null: out += "None"; break;
      case ValueTag::True: out += "True"; break;
      case ValueTag::False: out += "False"; break;
      case ValueTag::Int: out += fmt::to_string(token.i); break;
      case ValueTag::Float: out += fmt::format("{}", token.f); break;
      case ValueTag::Str: out += fmt::format("\"{}\"", token.s); break;
      case ValueTag::ListBegin: {
        out += '[';
        bool first = true;
        for (auto t = reader.next(); t.tag != ValueTag::ListEnd; t = reader.next()) {
          out += first ? "" : ", ";
          first = false;
          value(out, reader, t);
        }
        out += ']';
        break;
      }
      case ValueTag::Array: {
        const auto& a = record_.arrays[token.index];
        out += fmt::format("{}([{}], \"{}\")", array_word_, fmt::join(a.shape, ", "),
                           recorder_.dtype(a.dtype_id).name);
        break;
      }
      case ValueTag::Other: out += token.repr; break;
      case ValueTag::ListEnd:
      case ValueTag::Key: break;
    }
  }

  const CallRecord& record_;
  const Recorder& recorder_;
  std::string_view array_word_;
};

}  // namespace

std::string api_call_text(const CallRecord& record, const Recorder& recorder) {
  const auto& op = recorder.op(record.op_id);
  ApiFormatter formatter(record, recorder, framework_of(op.level) == "torch" ? "Tensor" : "Array");
  std::string out = op.name;
  out += '(';
  bool first = true;
  formatter.section(out, 0, record.outputs_offset, first);
  out += ')';
  return out;
}

}  // namespace ophook::core
