// The recorder end to end, without Python. Its hand-off under real concurrency: several program
// threads submit records (with array bytes, dump mode) through a small queue to the writer thread
// at once; everything must arrive once, in seq order, with the bytes each thread captured. Run
// under ThreadSanitizer by `scripts/test.sh --sanitize` (CMakePresets.json, preset "tsan"). And
// its end after a termination signal, when files stop at a deadline but nothing else does. And a
// run written inline (no thread), as the root of a run that imported no framework writes its own.
// And runs one after another, each with its own notes; and an op named again with other fields (a
// compiled kernel launched from several sites), counted under its name.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "ophook/files/naming.hpp"
#include "ophook/model/values.hpp"
#include "ophook/process/recorder.hpp"
#include "ophook/process/run_facts.hpp"
#include "read/arrays/mapped_npy.hpp"
#include "support/temp_files.hpp"

namespace ophook::core {
namespace {

namespace fs = std::filesystem;

fs::path make_temp_dir() { return test::make_temp_dir("ophook-recorder-"); }

constexpr int kThreads = 8;
constexpr int kCallsPerThread = 300;
constexpr std::int64_t kElements = 64;

// One call of numpy.negative(x) whose input holds `thread` * 1000 + `call` in every element.
RecordPtr make_call(Recorder& recorder, std::uint32_t op, std::uint32_t dtype, int thread, int call) {
  auto record = std::make_unique<CallRecord>();
  record->seq = recorder.next_seq();
  record->op_id = op;
  record->tid = thread + 1;
  ArrayCapture array;
  array.shape = {kElements};
  array.dtype_id = dtype;
  array.nbytes = kElements * sizeof(float);
  array.data = std::make_unique<std::byte[]>(array.nbytes);
  const float value = static_cast<float>(thread * 1000 + call);
  for (std::int64_t i = 0; i < kElements; ++i) {
    std::memcpy(array.data.get() + i * sizeof(float), &value, sizeof(float));
  }
  array.captured = true;
  record->arrays.push_back(std::move(array));
  ValueWriter values(record->values);
  values.array(0);
  record->kwargs_offset = record->outputs_offset = static_cast<std::uint32_t>(record->values.size());
  return record;
}

TEST(RecorderThreads, EveryCallFromEveryThreadIsWrittenOnceInSeqOrder) {
  const fs::path dir = make_temp_dir();
  Config config;
  config.output = dir.string();
  config.mode = Mode::Dump;
  config.queue_bytes = std::uint64_t{64} << 10;  // a few dozen records: producers must wait for the writer
  Recorder& recorder = Recorder::start(config);
  const std::uint32_t op = recorder.op_id("numpy.negative", Level::Ufunc);
  const std::uint32_t dtype = recorder.intern_dtype({"float32", "<f4", ""});

  std::vector<std::thread> threads;
  threads.reserve(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int c = 0; c < kCallsPerThread; ++c) {
        RecordPtr record = make_call(recorder, op, dtype, t, c);
        if (!recorder.try_submit(record)) recorder.submit(std::move(record));
        if (c % 100 == 0) recorder.flush();  // flushes racing with other threads' submits
      }
    });
  }
  for (auto& thread : threads) thread.join();
  recorder.finish();

  std::ifstream trace(dir / "trace.jsonl");
  std::string line;
  std::uint64_t expected_seq = 0;
  std::set<std::int64_t> tids;
  while (std::getline(trace, line)) {
    const auto record = nlohmann::json::parse(line);
    ASSERT_EQ(record.at("seq").get<std::uint64_t>(), expected_seq) << line;
    const std::string file = record.at("args").at(0).at("file").get<std::string>();
    EXPECT_EQ(file, input_file_name("numpy.negative", 1, expected_seq));
    const cli::MappedNpy npy(dir / file);
    ASSERT_EQ(npy.elements(), static_cast<std::uint64_t>(kElements));
    float first = 0, last = 0;
    std::memcpy(&first, npy.data().data(), sizeof first);
    std::memcpy(&last, npy.data().data() + npy.data().size() - sizeof last, sizeof last);
    EXPECT_EQ(first, last);
    EXPECT_EQ(static_cast<int>(first) / 1000 + 1, record.at("tid").get<int>()) << line;
    tids.insert(record.at("tid").get<std::int64_t>());
    ++expected_seq;
  }
  EXPECT_EQ(expected_seq, static_cast<std::uint64_t>(kThreads * kCallsPerThread));
  EXPECT_EQ(tids.size(), static_cast<std::size_t>(kThreads));
  fs::remove_all(dir);
}

TEST(RecorderTermination, ArraysQueuedPastTheFilesDeadlineGetStatisticsButNoFile) {
  const fs::path dir = make_temp_dir();
  Config config;
  config.output = dir.string();
  config.mode = Mode::Dump;
  Recorder& recorder = Recorder::start(config);
  const std::uint32_t op = recorder.op_id("numpy.negative", Level::Ufunc);
  const std::uint32_t dtype = recorder.intern_dtype({"float32", "<f4", ""});
  constexpr int kLate = 5;

  recorder.submit(make_call(recorder, op, dtype, 0, 0));
  recorder.flush();  // on disk before the deadline
  recorder.stop_files_at(std::chrono::steady_clock::now());
  for (int c = 1; c <= kLate; ++c) recorder.submit(make_call(recorder, op, dtype, 0, c));
  recorder.finish();

  std::ifstream trace(dir / "trace.jsonl");
  std::string line;
  int lines = 0;
  while (std::getline(trace, line)) {
    const auto arg = nlohmann::json::parse(line).at("args").at(0);
    EXPECT_EQ(arg.at("file").is_string(), lines == 0) << line;
    EXPECT_EQ(arg.at("stats").at("max").get<double>(), lines) << line;  // statistics for every call
    ++lines;
  }
  EXPECT_EQ(lines, kLate + 1);
  std::ifstream summary_file(dir / "summary.json");
  const auto summary = nlohmann::json::parse(summary_file);
  EXPECT_EQ(summary.at("totals").at("files"), 1);
  EXPECT_EQ(summary.at("totals").at("files_not_written_at_termination"), kLate);
  EXPECT_NE(summary.at("write_errors").at("stopped").at(".npy files").get<std::string>().find("termination"),
            std::string::npos);
  fs::remove_all(dir);
}

std::size_t thread_count() {
  return static_cast<std::size_t>(std::distance(fs::directory_iterator("/proc/self/task"), fs::directory_iterator{}));
}

TEST(RecorderInline, StartsNoThreadAndWritesWhatWasSubmittedAtFinish) {
  const fs::path dir = make_temp_dir();
  Config config;
  config.output = dir.string();
  config.mode = Mode::Stats;
  const auto threads_before = thread_count();
  Recorder& recorder = Recorder::start(config, WriterThread::Inline);
  const std::uint32_t op = recorder.op_id("numpy.negative", Level::Ufunc);
  const std::uint32_t dtype = recorder.intern_dtype({"float32", "<f4", ""});
  for (int c = 0; c < 3; ++c) recorder.submit(make_call(recorder, op, dtype, 0, c));
  EXPECT_EQ(thread_count(), threads_before);
  EXPECT_FALSE(fs::exists(dir / "summary.json"));
  recorder.finish();
  EXPECT_EQ(thread_count(), threads_before);

  std::ifstream trace(dir / "trace.jsonl");
  std::string line;
  std::uint64_t seq = 0;
  while (std::getline(trace, line)) {
    const auto record = nlohmann::json::parse(line);
    EXPECT_EQ(record.at("seq").get<std::uint64_t>(), seq++);
    EXPECT_EQ(record.at("args").at(0).at("stats").at("max").get<double>(), static_cast<double>(record.at("seq")));
  }
  EXPECT_EQ(seq, 3u);
  std::ifstream summary_file(dir / "summary.json");
  EXPECT_EQ(nlohmann::json::parse(summary_file).at("totals").at("calls").get<int>(), 3);
  fs::remove_all(dir);
}


nlohmann::json summary_in(const fs::path& dir) {
  std::ifstream file(dir / "summary.json");
  return nlohmann::json::parse(file);
}

// A compiled kernel launched from two sites: one name, an op entry per site with its own fields,
// counted under the name.
TEST(RecorderOps, AnOpNamedAgainWithOtherFieldsKeepsThemAndIsCountedUnderItsName) {
  const fs::path dir = make_temp_dir();
  Config config;
  config.output = dir.string();
  config.mode = Mode::Trace;
  Recorder& recorder = Recorder::start(config, WriterThread::Inline);
  const std::string name = "inductor.0_forward.extern_kernels.mm";
  const auto first = recorder.op_id(name, Level::Compiled, R"("modules":["0.linear"])");
  const auto second = recorder.op_id(name, Level::Compiled, R"("modules":["1.linear"])");
  EXPECT_EQ(recorder.op_id(name, Level::Compiled, R"("modules":["0.linear"])"), first);
  EXPECT_EQ(recorder.op_id(name, Level::Compiled, R"("modules":["1.linear"])"), second);
  EXPECT_NE(first, second);
  EXPECT_EQ(recorder.op(second).name, name);
  EXPECT_EQ(recorder.op(first).same_name_as, 0u);
  EXPECT_EQ(recorder.op(second).same_name_as, first);
  for (const auto op : {first, second, second}) {
    auto record = std::make_unique<CallRecord>();
    record->seq = recorder.next_seq();
    record->op_id = op;
    recorder.submit(std::move(record));
  }
  recorder.finish();
  std::ifstream trace(dir / "trace.jsonl");
  std::vector<std::string> modules;
  for (std::string line; std::getline(trace, line);) {
    const auto record = nlohmann::json::parse(line);
    EXPECT_EQ(record.at("op"), name);
    modules.push_back(record.at("modules").at(0));
  }
  EXPECT_EQ(modules, (std::vector<std::string>{"0.linear", "1.linear", "1.linear"}));
  const auto summary = summary_in(dir);
  EXPECT_EQ(summary.at("totals").at("ops"), 1);
  EXPECT_EQ(summary.at("ops").at(name).at("count"), 3);
  fs::remove_all(dir);
}

// One Tracer after another in one process (the pytest plugin's way): a note counts within its run
// and a later run starts without the earlier run's notes.
TEST(RecorderRuns, EachRunHasItsOwnNotes) {
  const fs::path first = make_temp_dir(), second = make_temp_dir();
  Config config;
  config.output = first.string();
  config.mode = Mode::Trace;
  Recorder& recorder = Recorder::start(config, WriterThread::Inline);
  const auto count = [&] {
    recorder.facts().update_note("counted", [](nlohmann::json& note) { note = note.is_null() ? 1 : note.get<int>() + 1; });
  };
  count();
  count();
  recorder.facts().add_note("set", "first run");
  recorder.finish();
  EXPECT_EQ(summary_in(first).at("notes"), (nlohmann::json{{"counted", 2}, {"set", "first run"}}));

  config.output = second.string();
  EXPECT_EQ(&Recorder::start(config, WriterThread::Inline), &recorder);
  count();
  recorder.finish();
  EXPECT_EQ(summary_in(second).at("notes"), (nlohmann::json{{"counted", 1}}));
  fs::remove_all(first);
  fs::remove_all(second);
}

}  // namespace
}  // namespace ophook::core
