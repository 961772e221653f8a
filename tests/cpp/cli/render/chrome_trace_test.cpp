// The Chrome Trace Event output of `ophook report --chrome-trace`.
#include <gtest/gtest.h>

#include <sstream>

#include "read/trace_reader.hpp"
#include "render/chrome_trace.hpp"

namespace ophook::cli {
namespace {

using nlohmann::json;

TraceRecord sample_record(std::int64_t seq, std::int64_t tid) {
  const json line = json::parse(R"({"seq":0,"op":"numpy.add","framework":"numpy","level":"ufunc",
    "args":[{"kind":"array","shape":[2,3],"dtype":"float64","device":"cpu","file":null,"stats":null},2.0],
    "kwargs":{},"outputs":[{"kind":"array","shape":[2,3],"dtype":"float64","device":"cpu","file":null,"stats":null}],
    "error":null,"t_ns":1500000,"dur_ns":2500,"pid":42,"tid":1,"depth":0,
    "source":"script.py:12:main","module":null,"phase":null})");
  TraceRecord r = record_from_json(line);
  r.seq = seq;
  r.tid = tid;
  r.t_ns += seq * 10'000;
  return r;
}

TEST(CliChromeTrace, CompleteEventCarriesTheRecord) {
  const json e = chrome_event(sample_record(3, 1), 0);
  EXPECT_EQ(e["ph"], "X");
  EXPECT_EQ(e["name"], "numpy.add");
  EXPECT_DOUBLE_EQ(e["ts"].get<double>(), 1530.0);  // (1'500'000 + 30'000) ns in us
  EXPECT_DOUBLE_EQ(e["dur"].get<double>(), 2.5);
  EXPECT_EQ(e["pid"], 42);
  EXPECT_EQ(e["tid"], 1);
  EXPECT_EQ(e["args"]["seq"], 3);
  EXPECT_EQ(e["args"]["source"], "script.py:12:main");
  EXPECT_TRUE(e["args"]["module"].is_null());
  EXPECT_TRUE(e["args"]["phase"].is_null());
  EXPECT_EQ(e["args"]["shapes"], json::parse("[[2,3]]"));
  EXPECT_EQ(e["args"]["output_shapes"], json::parse("[[2,3]]"));
}

TEST(CliChromeTrace, DocumentHasOneCompleteEventPerRecordAndMetadata) {
  RunReport report;
  ProcessRun root;
  root.label = "root";
  root.has_trace = true;
  root.records = {sample_record(0, 1), sample_record(1, 1), sample_record(2, 7)};
  report.processes.push_back(root);
  ProcessRun child;
  child.label = "pid43";
  child.has_trace = true;
  child.records = {sample_record(0, 1)};
  child.records[0].pid = 43;
  report.processes.push_back(child);

  std::ostringstream out;
  write_chrome_trace(report, out);
  const json doc = json::parse(out.str());
  ASSERT_TRUE(doc["traceEvents"].is_array());
  std::size_t complete = 0, process_names = 0, thread_names = 0;
  for (const json& e : doc["traceEvents"]) {
    if (e["ph"] == "X") ++complete;
    if (e["ph"] == "M" && e["name"] == "process_name") ++process_names;
    if (e["ph"] == "M" && e["name"] == "thread_name") ++thread_names;
  }
  EXPECT_EQ(complete, 4u);
  EXPECT_EQ(process_names, 2u);
  EXPECT_EQ(thread_names, 3u);  // (42,1), (42,7), (43,1)
}

}  // namespace
}  // namespace ophook::cli
