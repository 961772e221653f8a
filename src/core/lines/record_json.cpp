#include "lines/record_json.hpp"

#include <fmt/compile.h>

#include <array>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "lines/json_line.hpp"
#include "ophook/model/values.hpp"
#include "ophook/process/recorder.hpp"

namespace ophook::core {

namespace {

std::string escaped(std::string_view text, bool quoted) {
  LineBuffer out;
  JsonLine json(out);
  if (quoted) {
    json.string(text);
  } else {
    json.string_content(text);
  }
  return std::string(out.view());
}

}  // namespace

/// One record's object: the values walked token by token, interned names from the caches.
class RecordJson::Encoder {
 public:
  Encoder(RecordJson& names, LineBuffer& out, const CallRecord& record,
          const std::vector<ArrayOutcome>& outcomes)
      : names_(names), out_(out), json_(out), record_(record), outcomes_(outcomes),
        torch_call_(framework_of(names.recorder_.op(record.op_id).level) == "torch") {}

  void head() {
    json_.raw(R"({"seq":)");
    json_.unsigned_integer(record_.seq);
  }

  void call() {
    json_.raw(names_.op_head(record_.op_id));
    section(0, record_.kwargs_offset, "args");
    json_.raw(R"(,"kwargs":)");
    section(record_.kwargs_offset, record_.outputs_offset, "kwargs");
    json_.raw(R"(,"outputs":)");
    section(record_.outputs_offset, static_cast<std::uint32_t>(record_.values.size()), "outputs");
    if (!tuples_.empty()) {
      json_.raw(R"(,"tuples":[)");
      json_.raw(tuples_);
      out_.push_back(']');
    }
  }

  void tail() {
    // Constant pieces are joined ("...":null) so that each costs one copy.
    if (record_.has_error) {
      json_.raw(R"(,"error":)");
      json_.string(record_.error);
    } else {
      json_.raw(R"(,"error":null)");
    }
    json_.raw(R"(,"t_ns":)");
    json_.integer(record_.t_ns);
    json_.raw(R"(,"dur_ns":)");
    json_.integer(record_.dur_ns);
    json_.raw(names_.process_and_thread(names_.recorder_.owner_pid(), record_.tid));
    json_.raw(R"(,"depth":)");
    json_.unsigned_integer(record_.depth);
    if (record_.parent == CallRecord::kNoParent) {
      json_.raw(R"(,"parent":null,"step":)");
    } else {
      json_.raw(R"(,"parent":)");
      json_.unsigned_integer(record_.parent);
      json_.raw(R"(,"step":)");
    }
    json_.unsigned_integer(record_.step);
    if (record_.source_file_id) {
      // Escaping works byte by byte, so the parts' escaped texts make the whole's.
      json_.raw(R"(,"source":")");
      json_.raw(names_.text(record_.source_file_id));
      out_.push_back(':');
      json_.integer(record_.source_line);
      out_.push_back(':');
      json_.raw(names_.text(record_.source_func_id));
      out_.push_back('"');
    } else {
      json_.raw(R"(,"source":null)");
    }
    if (record_.module_id) {
      json_.raw(R"(,"module":)");
      quoted_text(record_.module_id);
    } else {
      json_.raw(R"(,"module":null)");
    }
    if (record_.phase == Phase::None) {
      json_.raw(R"(,"phase":null)");
    } else {
      json_.raw(R"(,"phase":)");
      json_.string(to_string(record_.phase));
    }
    if (record_.overridden) json_.raw(R"(,"overridden":true)");
    if (record_.grad_disabled) json_.raw(R"(,"grad_enabled":false)");
    if (record_.forward_file_id) {
      json_.raw(R"(,"forward_source":")");
      json_.raw(names_.text(record_.forward_file_id));
      out_.push_back(':');
      json_.integer(record_.forward_line);
      out_.push_back(':');
      json_.raw(names_.text(record_.forward_func_id));
      out_.push_back('"');
    }
    if (record_.collective.group_id) collective();
    out_.push_back('}');
  }

 private:
  /// The values in [from, to) as a JSON array, or (kwargs) as an object of Key/value pairs.
  void section(std::uint32_t from, std::uint32_t to, std::string_view name) {
    const bool keyed = name == "kwargs";
    const auto* base = record_.values.data();
    ValueReader reader(base + from, base + to);
    out_.push_back(keyed ? '{' : '[');
    path_[0] = {name, 0, true};
    for (std::uint32_t i = 0; !reader.done(); ++i) {
      if (i) json_.sep();
      auto token = reader.next();
      path_[1] = {{}, i, false};
      if (keyed && token.tag == ValueTag::Key) {
        json_.key(token.s);
        path_[1] = {token.s, 0, true};
        token = reader.next();
      }
      depth_ = 2;
      value(reader, token);
    }
    out_.push_back(keyed ? '}' : ']');
  }

  /// The JSON Pointer (RFC 6901) of the value being written, its text escaped for a JSON string.
  std::string pointer() const {
    std::string out;
    for (std::size_t i = 0; i < depth_; ++i) {
      out += '/';
      if (!path_[i].is_key) {
        out += fmt::format_int(path_[i].index).c_str();
        continue;
      }
      std::string key;
      for (char c : path_[i].key) key += c == '~' ? "~0" : c == '/' ? "~1" : std::string(1, c);
      out += escaped(key, false);
    }
    return out;
  }

  /// Adds the pointer of the value being written to the "tuples" field.
  void note_tuple() {
    tuples_ += tuples_.empty() ? "\"" : ",\"";
    tuples_ += pointer();
    tuples_ += '"';
  }

  void quoted_text(std::uint32_t id) {
    out_.push_back('"');
    json_.raw(names_.text(id));
    out_.push_back('"');
  }

  void value(ValueReader& reader, const ValueReader::Token& token) {
    switch (token.tag) {
      case ValueTag::Null: return json_.null();
      case ValueTag::True: return json_.boolean(true);
      case ValueTag::False: return json_.boolean(false);
      case ValueTag::Int: return json_.integer(token.i);
      case ValueTag::Float:
        if (std::isfinite(token.f)) return json_.python_float(token.f);
        return json_.raw(std::isnan(token.f) ? R"({"kind":"float","repr":"nan"})"
                         : token.f > 0      ? R"({"kind":"float","repr":"inf"})"
                                            : R"({"kind":"float","repr":"-inf"})");
      case ValueTag::Str: return json_.string(token.s);
      case ValueTag::TupleBegin:
      case ValueTag::ListBegin: {
        // ValueCapture nests at most 8 deep, well within path_; a deeper tuple would go unnamed.
        const bool tracked = depth_ < path_.size();
        if (token.tag == ValueTag::TupleBegin && tracked) note_tuple();
        out_.push_back('[');
        std::uint32_t index = 0;
        for (auto t = reader.next(); t.tag != ValueTag::ListEnd; t = reader.next(), ++index) {
          if (index) json_.sep();
          if (tracked) path_[depth_++] = {{}, index, false};
          value(reader, t);
          if (tracked) --depth_;
        }
        out_.push_back(']');
        return;
      }
      case ValueTag::Array: return array(token.index);
      case ValueTag::Other:
        json_.raw(R"({"kind":)");
        json_.string(token.s);
        json_.raw(R"(,"repr":)");
        json_.string(token.repr);
        out_.push_back('}');
        return;
      case ValueTag::ListEnd:
      case ValueTag::Key: break;
    }
    json_.null();
  }

  void array(std::uint32_t index) {
    const auto& a = record_.arrays[index];
    const auto& outcome = outcomes_[index];
    json_.raw(R"({"kind":"array","shape":)");
    integers(a.shape);
    if (!a.strides.empty()) {
      json_.raw(R"(,"strides":)");
      integers(a.strides);
    }
    json_.raw(names_.dtype_field(a.dtype_id));
    if (a.device_id) {
      json_.raw(R"(,"device":)");
      quoted_text(a.device_id);
    } else {
      json_.raw(R"(,"device":"cpu")");
    }
    if (outcome.file.empty()) {
      json_.raw(R"(,"file":null)");
    } else {
      json_.raw(R"(,"file":)");
      json_.string(outcome.file);
      if (!outcome.same_as.empty()) {
        json_.raw(R"(,"same_as":)");
        json_.string(outcome.same_as);
      }
    }
    if (outcome.stats) {
      json_.raw(R"(,"stats":)");
      stats(*outcome.stats);
    } else {
      json_.raw(R"(,"stats":null)");
    }
    if (const auto& saved = names_.saved_dtype_field(a.dtype_id); !saved.empty()) json_.raw(saved);
    if (a.no_data_reason_id) {
      json_.raw(R"(,"reason":)");
      quoted_text(a.no_data_reason_id);
    } else if (outcome.no_file != NoFileReason::None) {
      json_.raw(R"(,"reason":)");
      json_.string(to_string(outcome.no_file));
    }
    python_type(a.python_type);
    if (a.requires_grad) json_.raw(R"(,"requires_grad":true)");
    if (a.viewed) viewed_.emplace_back(index, pointer());
    if (a.view_of >= 0) view(a);
    out_.push_back('}');
  }

  /// "view_of" (the pointer of the array whose memory this one views) and "view_offset".
  void view(const ArrayCapture& a) {
    for (const auto& [index, where] : viewed_) {
      if (index != static_cast<std::uint32_t>(a.view_of)) continue;
      json_.raw(R"(,"view_of":")");
      json_.raw(where);
      json_.raw(R"(","view_offset":)");
      json_.integer(a.view_offset);
      return;
    }
  }

  /// What the array was in Python, where replay cannot assume it: a NumPy array in a torch call
  /// (torch.from_numpy), a tensor in a NumPy call, every NumPy scalar and buffer exporter.
  void python_type(ArrayType type) {
    if (type == ArrayType::NumpyScalar) {
      json_.raw(R"(,"python_type":"numpy.generic")");
    } else if (type == ArrayType::Buffer) {
      json_.raw(R"(,"python_type":"buffer")");
    } else if (type == ArrayType::NumpyArray && torch_call_) {
      json_.raw(R"(,"python_type":"numpy.ndarray")");
    } else if (type == ArrayType::TorchTensor && !torch_call_) {
      json_.raw(R"(,"python_type":"torch.Tensor")");
    }
  }

  void integers(const std::vector<std::int64_t>& values) {
    out_.push_back('[');
    for (std::size_t i = 0; i < values.size(); ++i) {
      if (i) json_.sep();
      json_.integer(values[i]);
    }
    out_.push_back(']');
  }

  /// A collective's place in its group (docs/outputs.md, "Collectives").
  void collective() {
    const auto& c = record_.collective;
    json_.raw(R"(,"collective":{"group":)");
    quoted_text(c.group_id);
    json_.raw(R"(,"ranks":)");
    json_.raw(names_.recorder_.text(c.ranks_id));
    json_.raw(R"(,"group_seq":)");
    json_.unsigned_integer(c.group_seq);
    if (c.peer == CollectiveFacts::kNoPeer) {
      json_.raw(R"(,"peer":null)");
    } else {
      json_.raw(R"(,"peer":)");
      json_.integer(c.peer);
    }
    json_.raw(c.async ? R"(,"async":true)" : R"(,"async":false)");
    json_.raw(c.completed ? R"(,"completed":true)" : R"(,"completed":false)");
    json_.raw(c.received_nonfinite ? R"(,"received_nonfinite":true})" : R"(,"received_nonfinite":false})");
  }

  void stats(const ArrayStats& s) {
    const bool values = s.numeric && s.has_finite;
    auto number = [&](std::string_view key, double v) {
      json_.raw(key);
      if (values && std::isfinite(v)) {
        json_.real(v);
      } else {
        json_.null();
      }
    };
    number(R"({"min":)", s.min);
    number(R"(,"max":)", s.max);
    number(R"(,"mean":)", s.mean);
    number(R"(,"std":)", s.std);
    json_.raw(R"(,"nan":)");
    json_.unsigned_integer(s.nan);
    json_.raw(R"(,"inf":)");
    json_.unsigned_integer(s.inf);
    fmt::format_to(std::back_inserter(out_), FMT_COMPILE(R"(,"xxh64":"{:016x}"}})"), s.xxh64);
  }

  /// One step of a JSON Pointer: a keyword's (or the section's) name, or an index.
  struct Segment {
    std::string_view key;
    std::uint32_t index = 0;
    bool is_key = false;
  };

  RecordJson& names_;
  LineBuffer& out_;
  JsonLine json_;
  const CallRecord& record_;
  const std::vector<ArrayOutcome>& outcomes_;
  const bool torch_call_;  // the op is a torch one: its arrays are tensors unless said otherwise
  std::array<Segment, 16> path_{};  // where the value being written sits: path_[0..depth_)
  std::size_t depth_ = 0;
  std::string tuples_;  // the "tuples" field's items, empty while the record has none
  std::vector<std::pair<std::uint32_t, std::string>> viewed_;  // arrays others view: index, pointer
};

void RecordJson::append(LineBuffer& out, const CallRecord& record,
                        const std::vector<ArrayOutcome>& outcomes) {
  Encoder encoder(*this, out, record, outcomes);
  encoder.head();
  encoder.call();
  encoder.tail();
}

void RecordJson::append_head(LineBuffer& out, const CallRecord& record) {
  Encoder(*this, out, record, {}).head();
}

void RecordJson::append_call(LineBuffer& out, const CallRecord& record,
                             const std::vector<ArrayOutcome>& outcomes) {
  Encoder(*this, out, record, outcomes).call();
}

void RecordJson::append_tail(LineBuffer& out, const CallRecord& record) {
  Encoder(*this, out, record, {}).tail();
}

const std::string& RecordJson::op_head(std::uint32_t id) {
  return cached(op_heads_, id, [&](std::uint32_t k) {
    const auto& op = recorder_.op(k);
    return fmt::format(R"(,"op":{},"framework":"{}","level":"{}"{}{},"args":)", escaped(op.name, true),
                       framework_of(op.level), to_string(op.level), op.annotation.empty() ? "" : ",", op.annotation);
  });
}

std::string_view RecordJson::process_and_thread(int pid, std::int32_t tid) {
  if (ids_.empty() || pid != ids_pid_ || tid != ids_tid_) {
    ids_pid_ = pid, ids_tid_ = tid;
    ids_ = fmt::format(R"(,"pid":{},"tid":{})", pid, tid);
  }
  return ids_;
}

const std::string& RecordJson::text(std::uint32_t id) {
  return cached(texts_, id, [&](std::uint32_t k) { return escaped(recorder_.text(k), false); });
}

const std::string& RecordJson::dtype_field(std::uint32_t id) {
  return cached(dtypes_, id,
                [&](std::uint32_t k) { return R"(,"dtype":)" + escaped(recorder_.dtype(k).name, true); });
}

const std::string& RecordJson::saved_dtype_field(std::uint32_t id) {
  return cached(saved_dtypes_, id, [&](std::uint32_t k) {
    const auto& saved = recorder_.dtype(k).saved_name;
    return saved.empty() ? std::string() : R"(,"saved_dtype":)" + escaped(saved, true);
  });
}

std::string source_text(const CallRecord& record, const Recorder& recorder) {
  if (!record.source_file_id) return {};
  return fmt::format("{}:{}:{}", recorder.text(record.source_file_id), record.source_line,
                     recorder.text(record.source_func_id));
}

}  // namespace ophook::core
