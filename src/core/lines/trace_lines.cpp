#include "lines/trace_lines.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "ophook/error.hpp"
#include "ophook/files/output_dir.hpp"
#include "ophook/log.hpp"
#include "writer/run_summary.hpp"

namespace ophook::core {
namespace {

constexpr std::size_t kFlushBytes = 1 << 16;

}  // namespace

TraceLines::TraceLines(OutputDir& dir, RunSummary& summary) : dir_(dir), summary_(summary) {
  trace_fd_ = dir_.open_fresh_for_append("trace.jsonl");
  if (trace_fd_ < 0) throw Error("cannot create " + dir_.path() + "/trace.jsonl: " + std::strerror(errno));
  api_fd_ = dir_.open_fresh_for_append("api_trace.txt");
  if (api_fd_ < 0) {
    const int error = errno;
    api_failed_ = true;
    summary_.count_write_error("api_trace.txt", error);
    log_error("cannot write {}/api_trace.txt: {}: this file is skipped", dir_.path(), std::strerror(error));
  }
}

TraceLines::~TraceLines() {
  if (trace_fd_ >= 0) ::close(trace_fd_);
  if (api_fd_ >= 0) ::close(api_fd_);
}

void TraceLines::emit(std::uint64_t seq, std::string_view line, std::string_view api_line) noexcept {
  if (seq != next_seq_) {
    try {
      waiting_.emplace(seq, std::make_pair(std::string(line), std::string(api_line)));
      waiting_bytes_ += line.size() + api_line.size();
    } catch (const std::bad_alloc&) {
      log_error("out of memory: the trace line of call {} is lost", seq);
    }
    return;
  }
  buffer(line, api_line);
  ++next_seq_;
  while (!waiting_.empty() && waiting_.begin()->first == next_seq_) {
    auto node = waiting_.extract(waiting_.begin());
    waiting_bytes_ -= node.mapped().first.size() + node.mapped().second.size();
    buffer(node.mapped().first, node.mapped().second);
    ++next_seq_;
  }
  if (trace_buffer_.view().size() > kFlushBytes) flush();
}

void TraceLines::emit_waiting() noexcept {
  for (auto& [seq, lines] : waiting_) buffer(lines.first, lines.second);
  waiting_.clear();
  waiting_bytes_ = 0;
}

void TraceLines::buffer(std::string_view line, std::string_view api_line) noexcept {
  trace_buffer_.append(line), trace_buffer_.push_back('\n');
  api_buffer_.append(api_line), api_buffer_.push_back('\n');
}

void TraceLines::flush() noexcept {
  trace_bytes_ += append(trace_fd_, trace_buffer_, trace_failed_, "trace.jsonl");
  append(api_fd_, api_buffer_, api_failed_, "api_trace.txt");
}

std::size_t TraceLines::append(int fd, LineBuffer& buffer, bool& failed, const char* what) noexcept {
  const auto text = buffer.view();
  if (text.empty()) return 0;
  std::size_t done = 0;
  while (!failed && done < text.size()) {
    const auto n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      failed = true;
      const int error = n < 0 ? errno : EIO;
      summary_.count_write_error(what, error);
      summary_.note_stopped(what, std::strerror(error));
      log_error("cannot write {}/{}: {}: no more lines are added to it", dir_.path(), what,
                     std::strerror(error));
      break;
    }
    done += static_cast<std::size_t>(n);
  }
  buffer.clear();
  return done;
}

}  // namespace ophook::core
