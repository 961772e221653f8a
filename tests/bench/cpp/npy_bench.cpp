// .npy header encoding and file writing (the writer thread's per-file work) against the floor:
// one snprintf of the same header dict, and a bare open/write/close of the same bytes. Both sides
// create a new file per iteration, as the writer does: reusing 1000 names made ours replace a
// file per write (an inode freed each time, which ext4 then scans on every creation) while the
// baseline truncated an existing one, 3.8x apart for a reason neither has in a recording.
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "bench_pairs.hpp"
#include "ophook/files/npy.hpp"
#include "ophook/files/output_dir.hpp"

namespace {

using ophook::core::encode_npy_header;
using ophook::core::OutputDir;

const std::vector<std::int64_t> kShape16{16};

void npy_header_ours(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(encode_npy_header("<f8", kShape16));
}

void npy_header_baseline(benchmark::State& state) {
  char buffer[128];
  for (auto _ : state) {
    int n = std::snprintf(buffer, sizeof buffer, "{'descr': '%s', 'fortran_order': False, 'shape': (%lld,), }",
                          "<f8", static_cast<long long>(kShape16[0]));
    benchmark::DoNotOptimize(n);
    benchmark::DoNotOptimize(buffer);
  }
}

std::string scratch_dir() {
  const char* base = std::getenv("OPHOOK_BENCH_SCRATCH");
  std::string path = std::string(base ? base : "/tmp") + "/npy_bench.XXXXXX";
  if (mkdtemp(path.data()) == nullptr) std::abort();
  return path;
}

void npy_file_ours(benchmark::State& state) {
  const auto elements = static_cast<std::int64_t>(state.range(0));
  const std::vector<std::byte> data(static_cast<std::size_t>(elements) * 8);
  const std::vector<std::int64_t> shape{elements};
  OutputDir dir(scratch_dir());
  std::size_t i = 0;
  for (auto _ : state) {
    const auto header = encode_npy_header("<f8", shape);
    const std::span<const std::byte> parts[] = {
        {reinterpret_cast<const std::byte*>(header.data()), header.size()}, {data.data(), data.size()}};
    if (!dir.write_file("op_numpy.add_input1_" + std::to_string(i++) + ".npy", parts).ok) std::abort();
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(data.size()));
  dir.remove_previous_run_files();
}

void npy_file_baseline(benchmark::State& state) {
  const std::vector<std::byte> data(static_cast<std::size_t>(state.range(0)) * 8 + 128);
  const auto dir = scratch_dir();
  std::size_t i = 0;
  for (auto _ : state) {
    const auto path = dir + "/raw_" + std::to_string(i++) + ".bin";
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (fd < 0 || ::write(fd, data.data(), data.size()) != static_cast<ssize_t>(data.size())) std::abort();
    ::close(fd);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(data.size() - 128));
  for (std::size_t k = 0; k < i; ++k) ::unlink((dir + "/raw_" + std::to_string(k) + ".bin").c_str());
  ::rmdir(dir.c_str());
}

}  // namespace

OPHOOK_BENCH_PAIR("npy_header", npy_header_ours, npy_header_baseline);
OPHOOK_BENCH_PAIR("npy_file_16", npy_file_ours, npy_file_baseline, 16);
OPHOOK_BENCH_PAIR("npy_file_4MiB", npy_file_ours, npy_file_baseline, 512 * 1024);
