// Dump mode's ring (OPHOOK_RING_BYTES) through the recorder, without Python: calls are held
// instead of written, the oldest leave unwritten when the ring is full, a trigger writes the ones
// held then, and every call still gets its trace line, in seq order, saying why it has no file.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ophook/model/values.hpp"
#include "ophook/process/recorder.hpp"
#include "support/temp_files.hpp"

namespace ophook::core {
namespace {

namespace fs = std::filesystem;

constexpr std::int64_t kArrayElements = 64;  // of each call's array
constexpr std::size_t kHeld = 5;  // calls the ring holds

// numpy.negative(x) whose input holds `value` in every element.
RecordPtr make_call(std::uint64_t seq, std::uint32_t op, std::uint32_t dtype, float value) {
  auto record = std::make_unique<CallRecord>();
  record->seq = seq;
  record->op_id = op;
  auto& array = record->new_array();
  array.shape = {kArrayElements};
  array.dtype_id = dtype;
  auto* data = array.reserve_data(kArrayElements * sizeof(float));
  for (std::int64_t i = 0; i < kArrayElements; ++i) std::memcpy(data + i * sizeof(float), &value, sizeof(float));
  array.captured = true;
  ValueWriter(record->values).array(0);
  record->kwargs_offset = record->outputs_offset = static_cast<std::uint32_t>(record->values.size());
  return record;
}

struct RingRun {
  fs::path dir = test::make_temp_dir("ophook-ring-");
  Recorder* recorder = nullptr;
  std::uint32_t op = 0, dtype = 0;

  /// `steps` 0: the ring holds kHeld calls; > 0, OPHOOK_RING_STEPS=steps with room for all.
  explicit RingRun(std::uint64_t steps = 0) {
    Config config;
    config.output = dir.string();
    config.mode = Mode::Dump;
    // Room for kHeld calls and half of another: every call's record holds the same bytes.
    const auto footprint = make_call(0, 0, 0, 0)->footprint();
    config.ring_bytes = steps > 0 ? 1000 * footprint : kHeld * footprint + footprint / 2;
    config.ring_steps = steps;
    recorder = &Recorder::start(config);
    op = recorder->op_id("numpy.negative", Level::Ufunc);
    dtype = recorder->intern_dtype({"float32", "<f4", ""});
  }
  ~RingRun() { fs::remove_all(dir); }

  void calls(int n, std::uint64_t step = 0) {
    for (int i = 0; i < n; ++i) {
      const auto seq = recorder->next_seq();
      auto call = make_call(seq, op, dtype, static_cast<float>(seq));
      call->step = step;
      recorder->submit(std::move(call));
    }
  }
  std::vector<nlohmann::json> args() const {
    std::vector<nlohmann::json> out;
    for (const auto& line : split(test::slurp(dir / "trace.jsonl"))) out.push_back(nlohmann::json::parse(line).at("args").at(0));
    return out;
  }
  nlohmann::json summary() const { return nlohmann::json::parse(test::slurp(dir / "summary.json")); }
  static std::vector<std::string> split(const std::string& text) {
    std::vector<std::string> lines;
    for (std::size_t start = 0, end; (end = text.find('\n', start)) != std::string::npos; start = end + 1) {
      lines.push_back(text.substr(start, end - start));
    }
    return lines;
  }
};

TEST(RecorderRing, ATriggerWritesTheCallsHeldThenAndEveryOtherCallSaysWhy) {
  RingRun run;
  run.calls(20);
  ASSERT_TRUE(run.recorder->dump_ring("a test's trigger"));
  run.calls(3);
  run.recorder->finish();

  const auto args = run.args();
  ASSERT_EQ(args.size(), 23u);
  for (std::size_t seq = 0; seq < args.size(); ++seq) {
    const auto& arg = args[seq];
    EXPECT_EQ(arg.at("stats").at("max").get<double>(), static_cast<double>(seq));  // statistics for all
    if (seq >= 20 - kHeld && seq < 20) {
      const auto name = arg.at("file").get<std::string>();
      EXPECT_EQ(fs::file_size(run.dir / name), 128 + kArrayElements * sizeof(float)) << seq;
      continue;
    }
    EXPECT_TRUE(arg.at("file").is_null()) << seq;
    const auto reason = arg.at("reason").get<std::string>();
    EXPECT_NE(reason.find(seq < 20 ? "left the OPHOOK_RING_BYTES ring unwritten" : "ended without a trigger"),
              std::string::npos) << seq << ": " << reason;
  }
  const auto ring = run.summary().at("ring");
  EXPECT_EQ(ring.at("calls_evicted"), 20 - kHeld);
  EXPECT_EQ(ring.at("calls_held_at_end"), 3);
  EXPECT_EQ(ring.at("nan_hunt_default"), false);
  ASSERT_EQ(ring.at("triggers").size(), 1u);
  const auto trigger = ring.at("triggers").at(0);
  EXPECT_EQ(trigger.at("why"), "a test's trigger");
  EXPECT_EQ(trigger.at("after_seq"), 19);
  EXPECT_EQ(trigger.at("first_seq"), 20 - kHeld);
  EXPECT_EQ(trigger.at("last_seq"), 19);
  EXPECT_EQ(trigger.at("calls"), kHeld);
  EXPECT_EQ(trigger.at("files"), kHeld);
  EXPECT_EQ(run.summary().at("totals").at("files"), kHeld);
}

TEST(RecorderRing, ByStepsACallThatComesAfterItsStepLeftTheWindowLeavesUnwritten) {
  RingRun run(/*steps=*/2);
  for (std::uint64_t step = 0; step <= 4; ++step) run.calls(2, step);
  run.calls(1, /*step=*/1);  // a collective of step 1 read at its completion, after step 4's calls
  run.calls(1, /*step=*/2);  // one of step 2: still in the window of steps 2 to 4
  ASSERT_TRUE(run.recorder->dump_ring("a test's trigger"));
  run.recorder->finish();

  const auto args = run.args();
  ASSERT_EQ(args.size(), 12u);
  std::vector<std::size_t> with_files;
  for (std::size_t seq = 0; seq < args.size(); ++seq) {
    if (args[seq].at("file").is_string()) with_files.push_back(seq);
  }
  EXPECT_EQ(with_files, (std::vector<std::size_t>{4, 5, 6, 7, 8, 9, 11}));  // steps 2-4, then the late step 2
  EXPECT_NE(args[10].at("reason").get<std::string>().find("ring unwritten"), std::string::npos);
  EXPECT_EQ(run.summary().at("ring").at("calls_evicted"), 5);  // steps 0 and 1, and the late call
}

TEST(RecorderRing, ByStepsACallThatCameLateBehindItsNextStepLeavesUnwrittenAtATrigger) {
  RingRun run(/*steps=*/2);
  run.calls(2, /*step=*/10);
  run.calls(2, /*step=*/11);
  run.calls(1, /*step=*/9);  // late, but within the window of step 11: held behind step 11's calls
  run.calls(2, /*step=*/12);  // the oldest held is of step 10: nothing leaves
  ASSERT_TRUE(run.recorder->dump_ring("a test's trigger"));
  run.recorder->finish();

  const auto args = run.args();
  ASSERT_EQ(args.size(), 7u);
  for (std::size_t seq = 0; seq < args.size(); ++seq) EXPECT_EQ(args[seq].at("file").is_string(), seq != 4) << seq;
  EXPECT_EQ(run.summary().at("ring").at("calls_evicted"), 1);
  EXPECT_EQ(run.summary().at("ring").at("triggers").at(0).at("calls"), 6);
}

TEST(RecorderRing, ATerminationSignalWritesTheRingAtTheEnd) {
  RingRun run;
  run.calls(12);
  Recorder::finish_on_termination("SIGTERM", std::chrono::steady_clock::now() + std::chrono::seconds(30));
  ASSERT_TRUE(run.recorder->finished());
  const auto args = run.args();
  ASSERT_EQ(args.size(), 12u);
  for (std::size_t seq = 0; seq < args.size(); ++seq) EXPECT_EQ(args[seq].at("file").is_string(), seq >= 12 - kHeld) << seq;
  const auto ring = run.summary().at("ring");
  ASSERT_EQ(ring.at("triggers").size(), 1u);
  EXPECT_EQ(ring.at("triggers").at(0).at("why"), "termination signal SIGTERM");
  EXPECT_EQ(ring.at("calls_held_at_end"), 0);
}

TEST(RecorderRing, WithoutARingThereIsNothingToDump) {
  const fs::path dir = test::make_temp_dir("ophook-ring-");
  Config config;
  config.output = dir.string();
  config.mode = Mode::Dump;
  Recorder& recorder = Recorder::start(config);
  EXPECT_FALSE(recorder.dump_ring("nothing held"));
  recorder.finish();
  EXPECT_TRUE(nlohmann::json::parse(test::slurp(dir / "summary.json")).at("ring").is_null());
  fs::remove_all(dir);
}

}  // namespace
}  // namespace ophook::core
