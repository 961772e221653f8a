// Finding and pairing the processes of two runs (`ophook compare`): root with root, rank<R> with
// rank<R>, pid<PID> directories in the order their processes started.
#include <gtest/gtest.h>

#include <fstream>

#include "compare/process_pairing.hpp"
#include "support/temp_files.hpp"

namespace ophook::cli {
namespace {

namespace fs = std::filesystem;
using Kind = ProcessDir::Kind;

ProcessDir process(Kind kind, std::int64_t number, std::optional<std::int64_t> start = {}) {
  ProcessDir p;
  p.kind = kind;
  p.number = number;
  p.start_t_ns = start;
  return p;
}

using Pairs = std::vector<std::pair<int, int>>;  // -1 for a missing side

Pairs indices(const std::vector<ProcessPair>& pairs) {
  Pairs out;
  for (const ProcessPair& p : pairs) {
    out.emplace_back(p.base ? static_cast<int>(*p.base) : -1, p.other ? static_cast<int>(*p.other) : -1);
  }
  return out;
}

TEST(CliProcessPairing, RootRanksThenPidsInStartOrder) {
  const std::vector<ProcessDir> base{process(Kind::Root, 0), process(Kind::Pid, 300, 50),
                                     process(Kind::Rank, 1), process(Kind::Pid, 200, 70),
                                     process(Kind::Rank, 0)};
  // NEW's worker pids sort the other way round than their start times.
  const std::vector<ProcessDir> other{process(Kind::Pid, 900, 20), process(Kind::Rank, 0),
                                      process(Kind::Pid, 800, 40), process(Kind::Root, 0),
                                      process(Kind::Rank, 1)};
  EXPECT_EQ(indices(pair_processes(base, other)),
            (Pairs{{0, 3}, {4, 1}, {2, 4}, {1, 0}, {3, 2}}));
}

TEST(CliProcessPairing, UnpairedProcessesAreOneSided) {
  const std::vector<ProcessDir> base{process(Kind::Root, 0), process(Kind::Rank, 2),
                                     process(Kind::Pid, 10, 5), process(Kind::Pid, 11, 6)};
  const std::vector<ProcessDir> other{process(Kind::Root, 0), process(Kind::Rank, 3),
                                      process(Kind::Pid, 12, 9)};
  EXPECT_EQ(indices(pair_processes(base, other)),
            (Pairs{{0, 0}, {1, -1}, {-1, 1}, {2, 2}, {3, -1}}));
}

TEST(CliProcessPairing, UnknownStartsComeLastByPid) {
  const std::vector<ProcessDir> base{process(Kind::Pid, 30), process(Kind::Pid, 20),
                                     process(Kind::Pid, 40, 100)};
  const std::vector<ProcessDir> other{process(Kind::Pid, 7, 1), process(Kind::Pid, 8, 2),
                                      process(Kind::Pid, 9, 3)};
  EXPECT_EQ(indices(pair_processes(base, other)), (Pairs{{2, 0}, {1, 1}, {0, 2}}));
}

class CliFindProcesses : public ::testing::Test {
 protected:
  void SetUp() override { run_ = test::make_temp_dir("ophook_processes_"); }
  void TearDown() override { fs::remove_all(run_); }

  /// A process directory with a one-record trace.jsonl and, unless `summary` is empty, that
  /// summary.json.
  void add(const std::string& name, const std::string& summary, std::int64_t first_t_ns = 0) {
    const fs::path dir = name.empty() ? run_ : run_ / name;
    fs::create_directories(dir);
    std::ofstream(dir / "trace.jsonl")
        << R"({"seq":0,"op":"numpy.add","t_ns":)" << first_t_ns << "}\n";
    if (!summary.empty()) std::ofstream(dir / "summary.json") << summary;
  }

  fs::path run_;
};

TEST_F(CliFindProcesses, ListsRootRanksAndPidsByStart) {
  add("", R"({"pid": 100, "root_pid": 100, "start_t_ns": 1})");
  add("pid300", R"({"pid": 300, "root_pid": 100, "start_t_ns": 90})");
  add("pid200", R"({"pid": 200, "root_pid": 100, "start_t_ns": 95})");
  add("pid250", "", 80);  // killed: no summary.json, ordered by its first record
  add("rank1", R"({"pid": 7, "root_pid": 100, "start_t_ns": 5})");
  fs::create_directories(run_ / "pidfoo");  // not a process directory: ignored silently
  std::ofstream(run_ / "pid12") << "a file";
  std::vector<std::string> warnings;
  const auto processes = find_processes(run_, "BASE", warnings);
  std::vector<std::string> names;
  names.reserve(processes.size());
  for (const ProcessDir& p : processes) names.push_back(p.name);
  EXPECT_EQ(names, (std::vector<std::string>{"root", "rank1", "pid250", "pid300", "pid200"}));
  EXPECT_EQ(processes[0].dir, run_);
  EXPECT_EQ(processes[1].kind, Kind::Rank);
  EXPECT_EQ(processes[1].number, 1);
  EXPECT_EQ(processes[2].start_t_ns, 80);
  EXPECT_TRUE(warnings.empty());
}

TEST_F(CliFindProcesses, SkipsDirectoriesOfAnEarlierRunAndSaysSo) {
  add("", R"({"pid": 100, "root_pid": 100, "start_t_ns": 1})");
  add("pid300", R"({"pid": 300, "root_pid": 100, "start_t_ns": 90})");
  add("pid50", R"({"pid": 50, "root_pid": 42, "start_t_ns": 9})");
  fs::create_directories(run_ / "pid60");  // no trace.jsonl
  std::vector<std::string> warnings;
  const auto processes = find_processes(run_, "NEW", warnings);
  ASSERT_EQ(processes.size(), 2u);
  EXPECT_EQ(processes[1].name, "pid300");
  ASSERT_EQ(warnings.size(), 2u);
  const std::string all = warnings[0] + "\n" + warnings[1];
  EXPECT_NE(all.find("NEW: " + (run_ / "pid50").string() + ": left by an earlier run"), std::string::npos);
  EXPECT_NE(all.find((run_ / "pid60").string() + ": no trace.jsonl"), std::string::npos);
}

}  // namespace
}  // namespace ophook::cli
