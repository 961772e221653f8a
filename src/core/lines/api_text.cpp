#include "lines/api_text.hpp"

#include <fmt/compile.h>
#include <fmt/format.h>

#include "ophook/model/values.hpp"
#include "ophook/process/recorder.hpp"

namespace ophook::core {
namespace {

class ApiFormatter {
 public:
  ApiFormatter(std::string& out, const CallRecord& record, const Recorder& recorder, std::string_view array_word)
      : out_(out), record_(record), recorder_(recorder), array_word_(array_word) {}

  void section(std::uint32_t from, std::uint32_t to) {
    const auto* base = record_.values.data();
    ValueReader reader(base + from, base + to);
    for (bool first = true; !reader.done(); first = false) {
      auto token = reader.next();
      if (!first) out_ += ", ";
      if (token.tag == ValueTag::Key) {
        out_ += token.s;
        out_ += '=';
        token = reader.next();
      }
      value(reader, token);
    }
  }

 private:
  void integer(std::int64_t v) {
    const fmt::format_int digits(v);
    out_.append(digits.data(), digits.size());
  }

  void value(ValueReader& reader, const ValueReader::Token& token) {
    switch (token.tag) {
      case ValueTag::Null: out_ += "None"; break;
      case ValueTag::True: out_ += "True"; break;
      case ValueTag::False: out_ += "False"; break;
      case ValueTag::Int: integer(token.i); break;
      case ValueTag::Float: fmt::format_to(std::back_inserter(out_), FMT_COMPILE("{}"), token.f); break;
      case ValueTag::Str:
        out_ += '"';
        out_ += token.s;
        out_ += '"';
        break;
      case ValueTag::TupleBegin:
      case ValueTag::ListBegin: {
        const bool tuple = token.tag == ValueTag::TupleBegin;
        out_ += tuple ? '(' : '[';
        std::size_t count = 0;
        for (auto t = reader.next(); t.tag != ValueTag::ListEnd; t = reader.next(), ++count) {
          if (count) out_ += ", ";
          value(reader, t);
        }
        out_ += tuple ? (count == 1 ? ",)" : ")") : "]";
        break;
      }
      case ValueTag::Array: {
        const auto& a = record_.arrays[token.index];
        out_ += array_word_;
        out_ += "([";
        for (std::size_t i = 0; i < a.shape.size(); ++i) {
          if (i) out_ += ", ";
          integer(a.shape[i]);
        }
        out_ += "], \"";
        out_ += recorder_.dtype(a.dtype_id).name;
        out_ += "\")";
        break;
      }
      case ValueTag::Other: out_ += token.repr; break;
      case ValueTag::ListEnd:
      case ValueTag::Key: break;
    }
  }

  std::string& out_;
  const CallRecord& record_;
  const Recorder& recorder_;
  std::string_view array_word_;
};

}  // namespace

void append_api_call_text(std::string& out, const CallRecord& record, const Recorder& recorder) {
  const auto& op = recorder.op(record.op_id);
  ApiFormatter formatter(out, record, recorder, framework_of(op.level) == "torch" ? "Tensor" : "Array");
  out += op.name;
  out += '(';
  formatter.section(0, record.outputs_offset);
  out += ')';
}

}  // namespace ophook::core
