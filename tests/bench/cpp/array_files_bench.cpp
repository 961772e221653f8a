// The writer's work for a batch of different large arrays, dump's bound where the program waits for
// its GPU (docs/performance.md, "On a GPU"): each array's digest, statistics and file, by ArrayFiles
// with the file helpers a process gets here against the writer thread alone — the same arrays into
// the same kind of directory, every one written (each iteration changes every array's first
// value, so nothing is linked). Bytes per second of the arrays' bytes.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "bench_pairs.hpp"
#include "files/array_files.hpp"
#include "files/file_threads.hpp"
#include "ophook/files/output_dir.hpp"
#include "ophook/process/recorder.hpp"
#include "writer/run_summary.hpp"

namespace {

using namespace ophook::core;

constexpr std::size_t kArrays = 16;
constexpr std::size_t kFloats = std::size_t{1} << 20;  // 4 MiB each, 64 MiB a batch

std::string scratch_dir() {
  const char* base = std::getenv("OPHOOK_BENCH_SCRATCH");
  std::string path = std::string(base ? base : "/tmp") + "/array_files_bench.XXXXXX";
  if (mkdtemp(path.data()) == nullptr) std::abort();
  return path;
}

void array_files_batch(benchmark::State& state, unsigned helpers) {
  const auto root = scratch_dir();
  Config config;
  config.output = root + "/run";
  config.mode = Mode::Dump;
  config.max_bytes = ~std::uint64_t{0};
  auto& recorder = Recorder::start(config, WriterThread::Inline);
  const auto dtype = recorder.intern_dtype({"float32", "<f4", ""});
  std::vector<RecordPtr> records;
  std::vector<std::vector<ArrayOutcome>> outcomes(kArrays, std::vector<ArrayOutcome>(1));
  for (std::size_t k = 0; k < kArrays; ++k) {
    auto& record = *records.emplace_back(std::make_unique<CallRecord>());
    record.seq = k;
    auto& array = record.new_array();
    array.shape = {static_cast<std::int64_t>(kFloats)};
    array.dtype_id = dtype;
    auto* data = reinterpret_cast<float*>(array.reserve_data(kFloats * sizeof(float)));
    for (std::size_t i = 0; i < kFloats; ++i) data[i] = static_cast<float>((i * 7 + k) % 1000) * 0.5F;
    array.captured = true;
  }
  {
    OutputDir dir(root + "/files");
    RunSummary summary(recorder);
    ArrayFiles files(dir, recorder, summary, helpers);
    float round = 0;
    for (auto _ : state) {
      round += 1;
      for (std::size_t k = 0; k < kArrays; ++k) {
        std::memcpy(records[k]->arrays[0].data.get(), &round, sizeof round);
        outcomes[k][0] = ArrayOutcome{};
        outcomes[k][0].file = "op_numpy.add_input1_" + std::to_string(k) + ".npy";
        files.add(*records[k], outcomes[k], /*files=*/true);
      }
      files.write_planned();
      state.PauseTiming();
      for (const auto& outcome : outcomes) {
        if (outcome[0].file.empty() || !outcome[0].stats) state.SkipWithError("an array got no file: no figure");
      }
      dir.remove_previous_run_files();
      state.ResumeTiming();
      if (state.error_occurred()) break;
    }
    files.stop();
  }
  recorder.finish();
  std::filesystem::remove_all(root);
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * kArrays * kFloats * sizeof(float)));
}

void array_files_ours(benchmark::State& state) { array_files_batch(state, FileThreads::default_helpers()); }
void array_files_baseline(benchmark::State& state) { array_files_batch(state, 0); }

}  // namespace

OPHOOK_BENCH_PAIR("array_files_16x4MiB", array_files_ours, array_files_baseline, std::nullopt, /*real_time=*/true);
