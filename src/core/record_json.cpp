#include "record_json.hpp"

#include <cmath>

#include "json_line.hpp"
#include "ophook/recorder.hpp"
#include "ophook/values.hpp"

namespace ophook::core {
namespace {

class RecordEncoder {
 public:
  RecordEncoder(fmt::memory_buffer& out, const CallRecord& record, const Recorder& recorder,
                const std::vector<ArrayOutcome>& outcomes)
      : json_(out), record_(record), recorder_(recorder), outcomes_(outcomes) {}

  /// The values in [from, to) as a JSON array, or as an object of Key/value pairs.
  void section(std::uint32_t from, std::uint32_t to, bool keyed) {
    const auto* base = record_.values.data();
    ValueReader reader(base + from, base + to);
    json_.raw(keyed ? "{" : "[");
    for (bool first = true; !reader.done(); first = false) {
      if (!first) json_.sep();
      auto token = reader.next();
      if (keyed && token.tag == ValueTag::Key) {
        json_.key(token.s);
        token = reader.next();
      }
      value(reader, token);
    }
    json_.raw(keyed ? "}" : "]");
  }

  void text_or_null(std::uint32_t id) {
    if (id) {
      json_.string(recorder_.text(id));
    } else {
      json_.null();
    }
  }

 private:
  void value(ValueReader& reader, const ValueReader::Token& token) {
    switch (token.tag) {
      case ValueTag::Null: return json_.null();
      case ValueTag::True: return json_.boolean(true);
      case ValueTag::False: return json_.boolean(false);
      case ValueTag::Int: return json_.integer(token.i);
      case ValueTag::Float:
        if (std::isfinite(token.f)) return json_.real(token.f);
        return json_.raw(std::isnan(token.f) ? R"({"kind":"float","repr":"nan"})"
                         : token.f > 0      ? R"({"kind":"float","repr":"inf"})"
                                            : R"({"kind":"float","repr":"-inf"})");
      case ValueTag::Str: return json_.string(token.s);
      case ValueTag::ListBegin: {
        json_.raw("[");
        bool first = true;
        for (auto t = reader.next(); t.tag != ValueTag::ListEnd; t = reader.next(), first = false) {
          if (!first) json_.sep();
          value(reader, t);
        }
        return json_.raw("]");
      }
      case ValueTag::Array: return array(token.index);
      case ValueTag::Other:
        json_.raw(R"({"kind":)");
        json_.string(token.s);
        json_.raw(R"(,"repr":)");
        json_.string(token.repr);
        return json_.raw("}");
      case ValueTag::ListEnd:
      case ValueTag::Key: break;
    }
    json_.null();
  }

  void array(std::uint32_t index) {
    const auto& a = record_.arrays[index];
    const auto& outcome = outcomes_[index];
    const auto& dtype = recorder_.dtype(a.dtype_id);
    json_.raw(R"({"kind":"array","shape":[)");
    for (std::size_t i = 0; i < a.shape.size(); ++i) {
      if (i) json_.sep();
      json_.integer(a.shape[i]);
    }
    json_.raw(R"(],"dtype":)");
    json_.string(dtype.name);
    json_.raw(R"(,"device":)");
    json_.string(a.device_id ? std::string_view(recorder_.text(a.device_id)) : "cpu");
    json_.raw(R"(,"file":)");
    if (outcome.file.empty()) {
      json_.null();
    } else {
      json_.string(outcome.file);
    }
    json_.raw(R"(,"stats":)");
    if (outcome.stats) {
      stats(*outcome.stats);
    } else {
      json_.null();
    }
    if (!dtype.saved_name.empty()) {
      json_.raw(R"(,"saved_dtype":)");
      json_.string(dtype.saved_name);
    }
    if (a.no_data_reason_id) {
      json_.raw(R"(,"reason":)");
      json_.string(recorder_.text(a.no_data_reason_id));
    }
    json_.raw("}");
  }

  void stats(const ArrayStats& s) {
    const bool values = s.numeric && s.has_finite;
    auto number = [&](const char* name, double v) {
      json_.key(name);
      if (values && std::isfinite(v)) {
        json_.real(v);
      } else {
        json_.null();
      }
      json_.sep();
    };
    json_.raw("{");
    number("min", s.min);
    number("max", s.max);
    number("mean", s.mean);
    number("std", s.std);
    json_.key("nan");
    json_.unsigned_integer(s.nan);
    json_.raw(R"(,"inf":)");
    json_.unsigned_integer(s.inf);
    json_.raw(fmt::format(R"(,"xxh64":"{:016x}"}})", s.xxh64));
  }

  JsonLine json_;
  const CallRecord& record_;
  const Recorder& recorder_;
  const std::vector<ArrayOutcome>& outcomes_;
};

}  // namespace

std::string source_text(const CallRecord& record, const Recorder& recorder) {
  if (!record.source_file_id) return {};
  return fmt::format("{}:{}:{}", recorder.text(record.source_file_id), record.source_line,
                     recorder.text(record.source_func_id));
}

void append_record_json(fmt::memory_buffer& out, const CallRecord& record, const Recorder& recorder,
                        const std::vector<ArrayOutcome>& outcomes) {
  const auto& op = recorder.op(record.op_id);
  RecordEncoder encoder(out, record, recorder, outcomes);
  JsonLine json(out);
  json.raw(R"({"seq":)");
  json.unsigned_integer(record.seq);
  json.raw(R"(,"op":)");
  json.string(op.name);
  json.raw(fmt::format(R"(,"framework":"{}","level":"{}","args":)", framework_of(op.level), to_string(op.level)));
  encoder.section(0, record.kwargs_offset, false);
  json.raw(R"(,"kwargs":)");
  encoder.section(record.kwargs_offset, record.outputs_offset, true);
  json.raw(R"(,"outputs":)");
  encoder.section(record.outputs_offset, static_cast<std::uint32_t>(record.values.size()), false);
  json.raw(R"(,"error":)");
  if (record.has_error) {
    json.string(record.error);
  } else {
    json.null();
  }
  json.raw(fmt::format(R"(,"t_ns":{},"dur_ns":{},"pid":{},"tid":{},"depth":{},"source":)", record.t_ns,
                       record.dur_ns, recorder.owner_pid(), record.tid, record.depth));
  if (record.source_file_id) {
    json.string(source_text(record, recorder));
  } else {
    json.null();
  }
  json.raw(R"(,"module":)");
  encoder.text_or_null(record.module_id);
  json.raw(R"(,"phase":)");
  if (record.phase == Phase::None) {
    json.null();
  } else {
    json.raw(fmt::format("\"{}\"", to_string(record.phase)));
  }
  if (record.overridden) json.raw(R"(,"overridden":true)");
  json.raw("}");
}

}  // namespace ophook::core
