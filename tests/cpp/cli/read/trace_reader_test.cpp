// Reading trace.jsonl for `ophook compare` / `ophook report`.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "ophook/error.hpp"
#include "read/trace_reader.hpp"

namespace ophook::cli {
namespace {

namespace fs = std::filesystem;

const char* kLine =
    R"({"seq":%d,"op":"numpy.add","args":[{"kind":"array","shape":[2],"dtype":"float32","device":"cpu","file":"x.npy","stats":{"min":0.0,"max":1.0,"mean":0.5,"std":0.5,"nan":0,"inf":0,"xxh64":"00"}},[1,{"kind":"array","shape":[],"dtype":"int64","device":"cpu","file":null,"stats":null}]],"kwargs":{"out":{"kind":"array","shape":[2],"dtype":"float32","device":"cpu","file":null,"stats":null},"alpha":2.5},"outputs":[{"kind":"float","repr":"nan"}],"error":null,"t_ns":1,"dur_ns":2,"pid":3,"tid":4,"depth":0,"source":"a.py:1:f","module":null,"phase":null})";

std::string line(int seq) {
  char buffer[2048];
  std::snprintf(buffer, sizeof buffer, kLine, seq);
  return buffer;
}

class CliTraceReader : public ::testing::Test {
 protected:
  fs::path write(const std::string& text) {
    fs::path path =
        fs::temp_directory_path() /
        ("ophook_cli_trace_" + std::to_string(::getpid()) + "_" +
         ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".jsonl");
    std::ofstream(path) << text;
    paths_.push_back(path);
    return path;
  }
  void TearDown() override {
    for (const auto& p : paths_) fs::remove(p);
  }
  std::vector<fs::path> paths_;
};

TEST_F(CliTraceReader, FlattensValuesInCallOrder) {
  std::vector<std::string> warnings;
  const TraceFile trace = read_trace(write(line(0) + "\n"), warnings);
  ASSERT_EQ(trace.records.size(), 1u);
  const TraceRecord& r = trace.records[0];
  ASSERT_EQ(r.arrays.size(), 3u);
  EXPECT_EQ(r.arrays[0].path, "args[0]");
  EXPECT_EQ(r.arrays[0].file, "x.npy");
  ASSERT_TRUE(r.arrays[0].stats.has_value());
  EXPECT_EQ(r.arrays[0].stats->mean, 0.5);
  EXPECT_EQ(r.arrays[1].path, "args[1][1]");
  EXPECT_TRUE(r.arrays[1].shape.empty());
  EXPECT_EQ(r.arrays[2].path, "kwargs.out");
  ASSERT_EQ(r.scalars.size(), 3u);  // args[1][0], kwargs.alpha, outputs[0] (nan)
  EXPECT_EQ(r.scalars[1].path, "kwargs.alpha");
  EXPECT_EQ(r.scalars[2].path, "outputs[0]");
  EXPECT_EQ(r.source.value(), "a.py:1:f");
  EXPECT_FALSE(r.module.has_value());
  EXPECT_EQ(r.line, 1u);
  EXPECT_TRUE(warnings.empty());
}

TEST_F(CliTraceReader, TruncatedLastLineIsSkippedWithAWarning) {
  std::vector<std::string> warnings;
  const std::string truncated = line(2).substr(0, 50);
  const TraceFile trace = read_trace(write(line(0) + "\n" + line(1) + "\n" + truncated), warnings);
  EXPECT_EQ(trace.records.size(), 2u);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("line 3"), std::string::npos);
}

TEST_F(CliTraceReader, MalformedMiddleLineIsAnErrorNamingFileAndLine) {
  std::vector<std::string> warnings;
  const fs::path path = write(line(0) + "\n{\"seq\": 1, oops\n" + line(2) + "\n");
  try {
    read_trace(path, warnings);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(path.string()), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("line 2"), std::string::npos);
  }
}

TEST_F(CliTraceReader, RecordWithoutSeqIsAnError) {
  std::vector<std::string> warnings;
  EXPECT_THROW(read_trace(write("{\"op\":\"numpy.add\"}\n" + line(1) + "\n"), warnings), Error);
  EXPECT_THROW(read_trace("/nonexistent/trace.jsonl", warnings), Error);
}

}  // namespace
}  // namespace ophook::cli
