#include "compare/align/record_alignment.hpp"

#include <algorithm>
#include <limits>
#include <string_view>
#include <tuple>
#include <unordered_map>

namespace ophook::cli {

namespace {

/// The records of one thread at one level: their indices in the run and their interned op names.
struct LevelCalls {
  std::vector<std::int64_t> index;
  std::vector<std::uint32_t> ops;
};

/// The records of one thread, split by level (levels in the order of their first record): each
/// level is aligned on its own, so that calls of one level never shift the pairs of another.
struct ThreadCalls {
  std::vector<std::string_view> levels;
  std::vector<LevelCalls> calls;

  LevelCalls& at(std::string_view level) {
    const auto it = std::find(levels.begin(), levels.end(), level);
    if (it != levels.end()) return calls[static_cast<std::size_t>(it - levels.begin())];
    levels.push_back(level);
    return calls.emplace_back();
  }
  const LevelCalls* find(std::string_view level) const {
    const auto it = std::find(levels.begin(), levels.end(), level);
    return it == levels.end() ? nullptr : &calls[static_cast<std::size_t>(it - levels.begin())];
  }
};

class OpIds {
 public:
  std::uint32_t operator()(std::string_view op) {
    return ids_.emplace(op, static_cast<std::uint32_t>(ids_.size())).first->second;
  }

 private:
  std::unordered_map<std::string_view, std::uint32_t> ids_;
};

/// The records (with their interned op names) split by thread and level, threads in the order of
/// their first record.
std::vector<ThreadCalls> by_thread(const std::vector<TraceRecord>& records,
                                   const std::vector<std::uint32_t>& ops) {
  std::vector<ThreadCalls> threads;
  std::unordered_map<std::int64_t, std::size_t> slot;
  for (std::size_t i = 0; i < records.size(); ++i) {
    const auto [it, fresh] = slot.emplace(records[i].tid, threads.size());
    if (fresh) threads.emplace_back();
    LevelCalls& calls = threads[it->second].at(records[i].level);
    calls.index.push_back(static_cast<std::int64_t>(i));
    calls.ops.push_back(ops[i]);
  }
  return threads;
}

/// A step with where it goes: BASE's record index, or that of the next BASE call of its thread
/// and level (its stream).
struct KeyedStep {
  std::int64_t key;
  std::size_t stream, position;
  AlignStep step;
};

void add_stream_pair(const LevelCalls* base, const LevelCalls* other, std::size_t stream,
                     std::vector<KeyedStep>& out) {
  static const LevelCalls kNone;
  const LevelCalls& a = base ? *base : kNone;
  const LevelCalls& b = other ? *other : kNone;
  const std::vector<AlignStep> local = align_sequences(a.ops, b.ops);
  std::int64_t next_base = std::numeric_limits<std::int64_t>::max();
  std::vector<KeyedStep> steps(local.size());
  for (std::size_t k = local.size(); k-- > 0;) {
    const AlignStep& s = local[k];
    AlignStep step{s.base >= 0 ? a.index[s.base] : -1, s.other >= 0 ? b.index[s.other] : -1};
    if (step.base >= 0) next_base = step.base;
    steps[k] = {next_base, stream, k, step};
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
  std::size_t stream = 0;
  static const ThreadCalls kNoThread;
  for (std::size_t t = 0; t < std::max(base_threads.size(), new_threads.size()); ++t) {
    const ThreadCalls& base_thread = t < base_threads.size() ? base_threads[t] : kNoThread;
    const ThreadCalls& new_thread = t < new_threads.size() ? new_threads[t] : kNoThread;
    for (std::size_t l = 0; l < base_thread.levels.size(); ++l) {
      add_stream_pair(&base_thread.calls[l], new_thread.find(base_thread.levels[l]), stream++, keyed);
    }
    for (std::size_t l = 0; l < new_thread.levels.size(); ++l) {
      if (base_thread.find(new_thread.levels[l]) == nullptr) {
        add_stream_pair(nullptr, &new_thread.calls[l], stream++, keyed);
      }
    }
  }
  std::sort(keyed.begin(), keyed.end(), [](const KeyedStep& x, const KeyedStep& y) {
    return std::tie(x.key, x.stream, x.position) < std::tie(y.key, y.stream, y.position);
  });
  result.steps.reserve(keyed.size());
  for (const KeyedStep& k : keyed) result.steps.push_back(k.step);
  return result;
}

}  // namespace ophook::cli
