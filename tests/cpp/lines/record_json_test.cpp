// What `ophook replay` needs from a trace line to rebuild a call's arguments: a tuple is told from
// a list by the record's "tuples" field (JSON Pointers), and a float from an int by its text.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "lines/line_buffer.hpp"
#include "lines/record_json.hpp"
#include "ophook/model/values.hpp"
#include "ophook/process/recorder.hpp"
#include "support/temp_files.hpp"

namespace ophook::core {
namespace {

/// The trace line of `record` (op "numpy.add"), parsed. The recorder (one per process) is
/// finished again, so that the next test starts a run of its own.
nlohmann::json line_of(CallRecord& record) {
  const auto dir = test::make_temp_dir("ophook-record-json-");
  Config config;
  config.output = dir.string();
  config.mode = Mode::Trace;
  Recorder& recorder = Recorder::start(config, WriterThread::Inline);
  record.op_id = recorder.op_id("numpy.add", Level::Ufunc);
  const auto f32 = recorder.intern_dtype({"float32", "<f4", ""});
  for (auto& array : record.arrays) array.dtype_id = f32;
  RecordJson json(recorder);
  LineBuffer line;
  json.append(line, record, std::vector<ArrayOutcome>(record.arrays.size()));
  recorder.finish();
  std::filesystem::remove_all(dir);
  return nlohmann::json::parse(line.view());
}

TEST(RecordJson, TuplesAreArraysNamedByTheirJsonPointer) {
  CallRecord record;
  ValueWriter values(record.values);
  values.integer(1);
  values.begin_tuple();  // args[1] = (0, [2, (3,)])
  values.integer(0);
  values.begin_list();
  values.integer(2);
  values.begin_tuple();
  values.integer(3);
  values.end_list();
  values.end_list();
  values.end_list();
  record.kwargs_offset = static_cast<std::uint32_t>(record.values.size());
  values.key("a/b~c");  // RFC 6901 escapes '/' as ~1 and '~' as ~0
  values.begin_tuple();
  values.end_list();
  values.key("axis");
  values.begin_list();
  values.end_list();
  record.outputs_offset = static_cast<std::uint32_t>(record.values.size());
  values.begin_tuple();
  values.null();
  values.end_list();

  const auto line = line_of(record);
  EXPECT_EQ(line["args"], nlohmann::json::parse("[1, [0, [2, [3]]]]"));
  EXPECT_EQ(line["kwargs"], nlohmann::json::parse(R"({"a/b~c": [], "axis": []})"));
  EXPECT_EQ(line["tuples"], nlohmann::json::parse(R"(["/args/1", "/args/1/1/1", "/kwargs/a~1b~0c", "/outputs/0"])"));
}

TEST(RecordJson, ARecordWithoutTuplesHasNoTuplesField) {
  CallRecord record;
  ValueWriter values(record.values);
  values.begin_list();
  values.integer(1);
  values.end_list();
  record.kwargs_offset = record.outputs_offset = static_cast<std::uint32_t>(record.values.size());
  EXPECT_FALSE(line_of(record).contains("tuples"));
}

TEST(RecordJson, FloatsReadBackAsFloatsAndIntsAsInts) {
  CallRecord record;
  ValueWriter values(record.values);
  for (double v : {1.0, -0.0, 100.0, 1e16, 2.5, 1e-300}) values.real(v);
  values.integer(1);
  record.kwargs_offset = record.outputs_offset = static_cast<std::uint32_t>(record.values.size());
  const auto args = line_of(record)["args"];
  ASSERT_EQ(args.size(), 7u);
  const std::vector<double> expected{1.0, -0.0, 100.0, 1e16, 2.5, 1e-300};
  for (std::size_t i = 0; i < expected.size(); ++i) {
    EXPECT_TRUE(args[i].is_number_float()) << args[i].dump();
    EXPECT_EQ(args[i].get<double>(), expected[i]);
  }
  EXPECT_TRUE(std::signbit(args[1].get<double>()));
  EXPECT_TRUE(args[6].is_number_integer());
}

TEST(RecordJson, AnArrayKeepsItsStridesOnlyWhenNotInCOrder) {
  struct Case {
    std::vector<std::int64_t> shape, strides;
    bool kept;
  };
  const std::vector<Case> cases{{{2, 3}, {1, 2}, true},    // transposed
                                {{2, 3}, {6, 2}, true},    // every other column
                                {{3, 4}, {0, 1}, true},    // broadcast
                                {{2, 3}, {3, 1}, false},   // C order
                                {{1, 3}, {7, 1}, false},   // C order: a length-1 dimension's stride is free
                                {{2, 0}, {1, 2}, false},   // no element
                                {{2, 3}, {1}, false}};     // not one stride per dimension
  CallRecord record;
  ValueWriter values(record.values);
  for (std::uint32_t i = 0; i < cases.size(); ++i) {
    auto& array = record.new_array();
    array.shape = cases[i].shape;
    array.set_strides(cases[i].strides);
    values.array(i);
  }
  record.kwargs_offset = record.outputs_offset = static_cast<std::uint32_t>(record.values.size());
  const auto args = line_of(record)["args"];
  for (std::size_t i = 0; i < cases.size(); ++i) {
    EXPECT_EQ(args[i]["shape"], nlohmann::json(cases[i].shape)) << i;
    if (cases[i].kept) {
      EXPECT_EQ(args[i]["strides"], nlohmann::json(cases[i].strides)) << i;
    } else {
      EXPECT_FALSE(args[i].contains("strides")) << i;
    }
  }
}

TEST(RecordJson, AnArraysPythonTypeIsWrittenWhereTheCallsFrameworkDoesNotTellIt) {
  // The op is numpy.add: its arrays are ndarrays unless said otherwise.
  const std::vector<std::pair<ArrayType, const char*>> cases{{ArrayType::NumpyArray, nullptr},
                                                             {ArrayType::Unknown, nullptr},
                                                             {ArrayType::NumpyScalar, "numpy.generic"},
                                                             {ArrayType::TorchTensor, "torch.Tensor"}};
  CallRecord record;
  ValueWriter values(record.values);
  for (std::uint32_t i = 0; i < cases.size(); ++i) {
    auto& array = record.new_array();
    array.python_type = cases[i].first;
    values.array(i);
  }
  record.kwargs_offset = record.outputs_offset = static_cast<std::uint32_t>(record.values.size());
  const auto args = line_of(record)["args"];
  for (std::size_t i = 0; i < cases.size(); ++i) {
    if (cases[i].second == nullptr) {
      EXPECT_FALSE(args[i].contains("python_type")) << i;
    } else {
      EXPECT_EQ(args[i]["python_type"], cases[i].second) << i;
    }
  }
}

}  // namespace
}  // namespace ophook::core
