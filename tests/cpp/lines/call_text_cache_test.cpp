// The writer keeps the text of each distinct call (CallTextCache) and formats only what changes
// from one call to the next. Whatever the cache holds, every line must be the one that formatting
// the record afresh gives: calls that differ only in a scalar, a string, a keyword, a shape, a
// dtype, a device or the op, submitted in an order that repeats them, are compared byte for byte.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "lines/api_text.hpp"
#include "lines/call_text_cache.hpp"
#include "lines/line_buffer.hpp"
#include "lines/record_json.hpp"
#include "ophook/model/values.hpp"
#include "ophook/process/recorder.hpp"
#include "support/temp_files.hpp"

namespace ophook::core {
namespace {

namespace fs = std::filesystem;

struct CallShape {
  std::uint32_t op;
  std::vector<std::int64_t> shape;
  std::uint32_t dtype;
  std::uint32_t device;
  std::int64_t scalar;
  double real;
  std::string text;
  std::string keyword;
  std::uint32_t no_data_reason = 0;
  std::vector<std::int64_t> strides = {};
};

RecordPtr make_record(std::uint64_t seq, const CallShape& call) {
  auto record = std::make_unique<CallRecord>();
  record->seq = seq;
  record->op_id = call.op;
  record->t_ns = 1'700'000'000'000'000'000 + static_cast<std::int64_t>(seq) * 977;
  record->dur_ns = 100 + static_cast<std::int64_t>(seq % 7);
  record->tid = 42;
  for (int i = 0; i < 2; ++i) {
    auto& array = record->new_array();
    array.shape = call.shape;
    array.dtype_id = call.dtype;
    array.device_id = call.device;
    array.no_data_reason_id = call.no_data_reason;
    array.set_strides(call.strides);
  }
  ValueWriter values(record->values);
  values.array(0);
  values.integer(call.scalar);
  values.begin_list();
  values.real(call.real);
  values.str(call.text);
  values.end_list();
  record->kwargs_offset = static_cast<std::uint32_t>(record->values.size());
  values.key(call.keyword);
  values.boolean(true);
  record->outputs_offset = static_cast<std::uint32_t>(record->values.size());
  values.array(1);
  return record;
}

std::vector<std::string> lines_of(const fs::path& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

TEST(CallTextCache, EveryLineIsTheOneFormattedAfresh) {
  const fs::path dir = test::make_temp_dir("ophook-call-text-");
  Config config;
  config.output = dir.string();
  config.mode = Mode::Trace;
  Recorder& recorder = Recorder::start(config, WriterThread::Inline);
  const auto add = recorder.op_id("numpy.add", Level::Ufunc);
  const auto mul = recorder.op_id("numpy.multiply", Level::Ufunc);
  const auto f32 = recorder.intern_dtype({"float32", "<f4", ""});
  const auto f64 = recorder.intern_dtype({"float64", "<f8", ""});
  const auto meta = recorder.intern("meta");

  const CallShape base{add, {4, 3}, f32, 0, 7, 0.5, "same", "out", 0};
  std::vector<CallShape> calls(13, base);
  calls[1].scalar = 8;
  calls[2].real = 0.25;
  calls[3].text = "sam";  // with the shorter string, the key's bytes could shift into the next part
  calls[4].keyword = "where";
  calls[5].shape = {3, 4};
  calls[6].shape = {12};
  calls[7].device = meta;
  calls[8].dtype = f64;
  calls[9].op = mul;
  calls[10].no_data_reason = recorder.intern("a test's reason");
  calls[11].strides = {1, 4};  // the transposed layout of the same shape
  calls[12].strides = {3, 1};  // C order: not kept, the same line as the base call's

  RecordJson fresh_json(recorder);
  std::vector<std::string> expected_lines, expected_api;
  std::uint64_t seq = 0;
  for (int round = 0; round < 3; ++round) {
    for (std::size_t i = 0; i < calls.size(); ++i) {
      const auto& call = calls[(i * 4 + round) % calls.size()];  // a different order each round
      auto record = make_record(seq++, call);
      LineBuffer line;
      fresh_json.append(line, *record, std::vector<ArrayOutcome>(record->arrays.size()));
      expected_lines.emplace_back(line.view());
      std::string api;
      append_api_call_text(api, *record, recorder);
      expected_api.push_back(api);
      recorder.submit(std::move(record));
    }
  }
  recorder.finish();

  EXPECT_EQ(lines_of(dir / "trace.jsonl"), expected_lines);
  EXPECT_EQ(lines_of(dir / "api_trace.txt"), expected_api);
  // Each distinct call once in api_configs.txt (sorted), though most were never formatted again.
  const std::set<std::string> distinct_api(expected_api.begin(), expected_api.end());
  // The device, the reason and the layout are not in the API line.
  EXPECT_EQ(distinct_api.size(), calls.size() - 4);
  EXPECT_EQ(lines_of(dir / "api_configs.txt"), std::vector<std::string>(distinct_api.begin(), distinct_api.end()));
  fs::remove_all(dir);
}

TEST(CallTextCache, FindsOnlyTheCallItWasGivenAndStaysBounded) {
  CallTextCache cache;
  const CallShape call{1, {4}, 1, 0, 0, 0.5, "s", "k", 0};
  auto record = make_record(0, call);
  // Kept from the second sighting on: calls that never repeat cost no allocation.
  for (int sighting = 0; sighting < 2; ++sighting) {
    EXPECT_EQ(cache.find(*record), nullptr) << sighting;
    cache.remember("trace 0", "api 0");
  }
  EXPECT_GT(cache.footprint(), 0u);
  const auto* texts = cache.find(*record);
  ASSERT_NE(texts, nullptr);
  EXPECT_EQ(texts->trace_call, "trace 0");
  EXPECT_EQ(texts->api_line, "api 0");

  // A call too large for its share of the bound is not kept.
  auto big = call;
  big.text.assign(std::size_t{1} << 20, 'x');
  for (int sighting = 0; sighting < 3; ++sighting) {
    EXPECT_EQ(cache.find(*make_record(1, big)), nullptr);
    cache.remember(big.text, "api big");
  }

  // Many distinct calls: the cache is emptied on the way, never beyond its bound, and keeps working.
  const std::string text(1000, 't');
  auto distinct = call;
  for (std::int64_t i = 1; i <= 20'000; ++i) {
    distinct.scalar = i;
    for (int sighting = 0; sighting < 2; ++sighting) {
      ASSERT_EQ(cache.find(*make_record(2, distinct)), nullptr) << i;
      cache.remember(text, "api");
    }
    ASSERT_LE(cache.footprint(), CallTextCache::kMaxBytes);
  }
  EXPECT_EQ(cache.find(*record), nullptr);  // the first call went with an emptying
  ASSERT_NE(cache.find(*make_record(3, distinct)), nullptr);
}

}  // namespace
}  // namespace ophook::core
