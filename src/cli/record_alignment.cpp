#include "record_alignment.hpp"

#include <algorithm>
#include <limits>
#include <string_view>
#include <tuple>
#include <unordered_map>

namespace ophook::cli {

namespace {

/// The records of one thread: their indices in the run and their interned op names.
struct ThreadCalls {
  std::vector<std::int64_t> index;
  std::vector<std::uint32_t> ops;
};

class OpIds {
 public:
  std::uint32_t operator()(std::string_view op) {
    return ids_.emplace(op, static_cast<std::uint32_t>(ids_.size())).first->second;
  }

 private:
  std::unordered_map<std::string_view, std::uint32_t> ids_;
};

/// The records (with their interned op names) split by thread, threads in the order of their
/// first record.
std::vector<ThreadCalls> by_thread(const std::vector<TraceRecord>& records,
                                   const std::vector<std::uint32_t>& ops) {
  std::vector<ThreadCalls> threads;
  std::unordered_map<std::int64_t, std::size_t> slot;
  for (std::size_t i = 0; i < records.size(); ++i) {
    const auto [it, fresh] = slot.emplace(records[i].tid, threads.size());
    if (fresh) threads.emplace_back();
    threads[it->second].index.push_back(static_cast<std::int64_t>(i));
    threads[it->second].ops.push_back(ops[i]);
  }
  return threads;
}

/// A step with where it goes: BASE's record index, or that of the next BASE call of its thread.
struct KeyedStep {
  std::int64_t key;
  std::size_t thread, position;
  AlignStep step;
};

void add_thread_pair(const ThreadCalls* base, const ThreadCalls* other, std::size_t thread,
                     std::vector<KeyedStep>& out) {
  static const ThreadCalls kNone;
  const ThreadCalls& a = base ? *base : kNone;
  const ThreadCalls& b = other ? *other : kNone;
  const std::vector<AlignStep> local = align_sequences(a.ops, b.ops);
  std::int64_t next_base = std::numeric_limits<std::int64_t>::max();
  std::vector<KeyedStep> steps(local.size());
  for (std::size_t k = local.size(); k-- > 0;) {
    const AlignStep& s = local[k];
    AlignStep step{s.base >= 0 ? a.index[s.base] : -1, s.other >= 0 ? b.index[s.other] : -1};
    if (step.base >= 0) next_base = step.base;
    steps[k] = {next_base, thread, k, step};
  }
  out.insert(out.end(), steps.begin(), steps.end());
}

}  // namespace

RecordAlignment align_records(const std::vector<TraceRecord>& base,
                              const std::vector<TraceRecord>& other) {
  RecordAlignment result;
  OpIds ids;
  std::vector<std::uint32_t> a, b;
  a.reserve(base.size());
  b.reserve(other.size());
  for (const TraceRecord& r : base) a.push_back(ids(r.op));
  for (const TraceRecord& r : other) b.push_back(ids(r.op));
  result.identical = a == b;
  if (result.identical) {
    for (std::size_t i = 0; i < a.size(); ++i) {
      result.steps.push_back({static_cast<std::int64_t>(i), static_cast<std::int64_t>(i)});
    }
    return result;
  }
  const auto base_threads = by_thread(base, a), new_threads = by_thread(other, b);
  std::vector<KeyedStep> keyed;
  for (std::size_t t = 0; t < std::max(base_threads.size(), new_threads.size()); ++t) {
    add_thread_pair(t < base_threads.size() ? &base_threads[t] : nullptr,
                    t < new_threads.size() ? &new_threads[t] : nullptr, t, keyed);
  }
  std::sort(keyed.begin(), keyed.end(), [](const KeyedStep& x, const KeyedStep& y) {
    return std::tie(x.key, x.thread, x.position) < std::tie(y.key, y.thread, y.position);
  });
  result.steps.reserve(keyed.size());
  for (const KeyedStep& k : keyed) result.steps.push_back(k.step);
  return result;
}

}  // namespace ophook::cli
