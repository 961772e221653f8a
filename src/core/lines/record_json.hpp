#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "lines/line_buffer.hpp"
#include "ophook/model/record.hpp"
#include "writer/array_outcome.hpp"

namespace ophook::core {

class Recorder;

/// Formats the trace.jsonl object of one call (docs/outputs.md, "trace.jsonl"; without the newline). The
/// JSON text of the recorder's interned names (ops with their fixed fields, strings, dtypes) is
/// escaped once per id and kept: per record, those parts cost a copy. Writer thread only.
class RecordJson {
 public:
  explicit RecordJson(const Recorder& recorder) : recorder_(recorder) {}

  /// Appends the object, each array's file and stats taken from `outcomes` (indexed like
  /// record.arrays).
  void append(LineBuffer& out, const CallRecord& record, const std::vector<ArrayOutcome>& outcomes);

  /// The same object in three parts, so that the middle one can come from a cache: `{"seq":N`;
  /// what was called (`,"op":…` through `"outputs":[…]`); the rest, with the closing brace.
  void append_head(LineBuffer& out, const CallRecord& record);
  void append_call(LineBuffer& out, const CallRecord& record, const std::vector<ArrayOutcome>& outcomes);
  void append_tail(LineBuffer& out, const CallRecord& record);

 private:
  class Encoder;

  /// `,"op":"numpy.add","framework":"numpy","level":"ufunc","args":` of op `id`.
  const std::string& op_head(std::uint32_t id);
  /// `,"pid":P,"tid":T`, formatted again only when the thread (or process) changes.
  std::string_view process_and_thread(int pid, std::int32_t tid);
  /// Interned string `id`, JSON-escaped, without quotes.
  const std::string& text(std::uint32_t id);
  /// `,"dtype":"float64"` of dtype `id`, and `,"saved_dtype":"float32"` when it has one ("" if not).
  const std::string& dtype_field(std::uint32_t id);
  const std::string& saved_dtype_field(std::uint32_t id);

  /// Entries for ids 0..id made by `make(id)`, in id order: the recorder's tables are append-only
  /// with dense ids, so an id seen in a record has every smaller one published too.
  template <typename Make>
  static const std::string& cached(std::vector<std::string>& cache, std::uint32_t id, Make&& make) {
    while (cache.size() <= id) cache.push_back(make(static_cast<std::uint32_t>(cache.size())));
    return cache[id];
  }

  const Recorder& recorder_;
  std::vector<std::string> op_heads_, texts_, dtypes_, saved_dtypes_;
  std::string ids_;  // process_and_thread's last text
  int ids_pid_ = 0;
  std::int32_t ids_tid_ = 0;
};

/// "file.py:LINE:function", or "" when the record has no source.
std::string source_text(const CallRecord& record, const Recorder& recorder);

}  // namespace ophook::core
