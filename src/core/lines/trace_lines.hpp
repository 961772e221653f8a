#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>

#include "lines/line_buffer.hpp"

namespace ophook::core {

class OutputDir;
class RunSummary;

/// trace.jsonl and api_trace.txt, appended in seq order: a record's lines wait here until every
/// call before it has its lines (calls of several threads finish out of order; dump mode's ring
/// holds calls back), then go out in buffered writes. A failed write stops that file for the rest
/// of the run, with one line on stderr and an entry in summary.json. Writer thread only.
class TraceLines {
 public:
  /// Opens both files afresh in `dir`; throws ophook::Error when trace.jsonl cannot be created.
  TraceLines(OutputDir& dir, RunSummary& summary);
  ~TraceLines();
  TraceLines(const TraceLines&) = delete;
  TraceLines& operator=(const TraceLines&) = delete;

  /// The lines of call `seq`; written once every earlier seq has been emitted.
  void emit(std::uint64_t seq, std::string_view line, std::string_view api_line) noexcept;
  /// Writes the lines still waiting for a call that never finished (a thread inside one at exit).
  void emit_waiting() noexcept;
  /// Writes the buffered lines to the files.
  void flush() noexcept;

  /// The first seq whose lines have not been emitted.
  std::uint64_t next_seq() const noexcept { return next_seq_; }
  /// Bytes written to trace.jsonl so far.
  std::uint64_t trace_bytes() const noexcept { return trace_bytes_; }
  /// Bytes of lines waiting for an earlier call.
  std::size_t waiting_bytes() const noexcept { return waiting_bytes_; }

  /// For the child after fork(): the descriptors are the parent's; leave them to it.
  void abandon_after_fork() noexcept { trace_fd_ = api_fd_ = -1; }

 private:
  void buffer(std::string_view line, std::string_view api_line) noexcept;
  /// Writes the buffer out unless `failed`; the bytes written.
  std::size_t append(int fd, LineBuffer& buffer, bool& failed, const char* what) noexcept;

  OutputDir& dir_;
  RunSummary& summary_;
  int trace_fd_ = -1, api_fd_ = -1;
  std::uint64_t trace_bytes_ = 0;
  bool trace_failed_ = false, api_failed_ = false;
  LineBuffer trace_buffer_, api_buffer_;  // lines in seq order, not yet written
  std::uint64_t next_seq_ = 0;
  std::map<std::uint64_t, std::pair<std::string, std::string>> waiting_;  // seq → lines
  std::size_t waiting_bytes_ = 0;
};

}  // namespace ophook::core
