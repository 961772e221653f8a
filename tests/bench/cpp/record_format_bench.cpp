// The writer thread's formatting of one recorded np.add(a, b) on 16 float64 (its trace.jsonl
// object and its api_trace.txt line), against the floor: one snprintf of the same text with every
// field's value already in hand and nothing to escape.
#include <benchmark/benchmark.h>
#include <stdlib.h>

#include <cstdio>
#include <string>
#include <vector>

#include "bench_pairs.hpp"
#include "lines/api_text.hpp"
#include "lines/record_json.hpp"
#include "ophook/model/values.hpp"
#include "ophook/process/recorder.hpp"

namespace {

using namespace ophook::core;

/// The process's recorder (its tables intern the names), writing into a scratch directory.
Recorder& recorder() {
  static Recorder& r = [] () -> Recorder& {
    const char* base = std::getenv("OPHOOK_BENCH_SCRATCH");
    std::string path = std::string(base ? base : "/tmp") + "/record_format_bench.XXXXXX";
    if (mkdtemp(path.data()) == nullptr) std::abort();
    Config config;
    config.output = path;
    config.mode = Mode::Trace;
    return Recorder::start(config);
  }();
  return r;
}

/// np.add(a, b) called from /home/user/train.py:42 in step(), as the numpy hook records it.
CallRecord add_record() {
  auto& r = recorder();
  CallRecord record;
  record.seq = 123456;
  record.op_id = r.op_id("numpy.add", Level::Ufunc);
  record.t_ns = 1763791234567890123;
  record.dur_ns = 1234;
  record.tid = 4242;
  record.source_file_id = r.intern("/home/user/train.py");
  record.source_func_id = r.intern("step");
  record.source_line = 42;
  const auto float64 = r.intern_dtype({"float64", "<f8", ""});
  ValueWriter values(record.values);
  for (std::uint32_t i = 0; i < 3; ++i) {
    auto& a = record.new_array();
    a.shape = {16};
    a.dtype_id = float64;
    if (i == 2) record.kwargs_offset = record.outputs_offset = static_cast<std::uint32_t>(record.values.size());
    values.array(i);
  }
  return record;
}

const char kLineFormat[] =
    R"({"seq":%llu,"op":"%s","framework":"%s","level":"%s","args":[)"
    R"({"kind":"array","shape":[%lld],"dtype":"%s","device":"%s","file":null,"stats":null},)"
    R"({"kind":"array","shape":[%lld],"dtype":"%s","device":"%s","file":null,"stats":null}],)"
    R"("kwargs":{},"outputs":[{"kind":"array","shape":[%lld],"dtype":"%s","device":"%s","file":null,"stats":null}],)"
    R"("error":null,"t_ns":%lld,"dur_ns":%lld,"pid":%d,"tid":%d,"depth":%d,"source":"%s:%d:%s","module":null,)"
    R"("phase":null})";

void trace_line_ours(benchmark::State& state) {
  const auto record = add_record();
  const std::vector<ArrayOutcome> outcomes(record.arrays.size());
  RecordJson json(recorder());
  LineBuffer line;
  for (auto _ : state) {
    line.clear();
    json.append(line, record, outcomes);
    benchmark::DoNotOptimize(line.view().data());
  }
}

void trace_line_baseline(benchmark::State& state) {
  const auto record = add_record();
  char line[1024];
  for (auto _ : state) {
    const int n = std::snprintf(line, sizeof line, kLineFormat, 123456ULL, "numpy.add", "numpy", "ufunc", 16LL,
                                "float64", "cpu", 16LL, "float64", "cpu", 16LL, "float64", "cpu",
                                static_cast<long long>(record.t_ns), static_cast<long long>(record.dur_ns), 1000,
                                record.tid, 0, "/home/user/train.py", 42, "step");
    benchmark::DoNotOptimize(n);
    benchmark::DoNotOptimize(line);
  }
}

void api_line_ours(benchmark::State& state) {
  const auto record = add_record();
  std::string line;
  for (auto _ : state) {
    line.clear();
    append_api_call_text(line, record, recorder());
    benchmark::DoNotOptimize(line.data());
  }
}

void api_line_baseline(benchmark::State& state) {
  char line[256];
  for (auto _ : state) {
    const int n = std::snprintf(line, sizeof line, R"(%s(%s([%lld], "%s"), %s([%lld], "%s")))", "numpy.add", "Array",
                                16LL, "float64", "Array", 16LL, "float64");
    benchmark::DoNotOptimize(n);
    benchmark::DoNotOptimize(line);
  }
}

}  // namespace

OPHOOK_BENCH_PAIR("trace_line", trace_line_ours, trace_line_baseline);
OPHOOK_BENCH_PAIR("api_line", api_line_ours, api_line_baseline);
