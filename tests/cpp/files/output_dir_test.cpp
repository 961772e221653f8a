#include "ophook/files/output_dir.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <set>
#include <vector>

#include "ophook/error.hpp"
#include "support/temp_files.hpp"

namespace ophook::core {
namespace {

namespace fs = std::filesystem;

using test::listing;
using test::slurp;
using test::spit;

class OutputDirTest : public ::testing::Test {
 protected:
  void SetUp() override { root_ = test::make_temp_dir("ophook_output_dir_"); }
  void TearDown() override { fs::remove_all(root_); }
  fs::path root_;
};

// The writing tests run once per way of creating a file: unnamed (O_TMPFILE, the default where the
// file system has it, as this one does: OnlyTheTemporaryNamePathShowsATemporaryName checks it),
// linked by its fd or by its /proc/self/fd path, and under a temporary name (the fallback
// elsewhere).
class OutputDirWriteTest : public OutputDirTest,
                           public ::testing::WithParamInterface<OutputDir::Creation> {
 protected:
  OutputDir open(const fs::path& path) {
    return OutputDir(path.string(), OutputDir::Leaf::Follow, GetParam());
  }
};

INSTANTIATE_TEST_SUITE_P(Creation, OutputDirWriteTest,
                         ::testing::Values(OutputDir::Creation::Unnamed, OutputDir::Creation::UnnamedViaProc,
                                           OutputDir::Creation::TemporaryName),
                         [](const auto& info) -> std::string {
                           switch (info.param) {
                             case OutputDir::Creation::Unnamed: return "Unnamed";
                             case OutputDir::Creation::UnnamedViaProc: return "UnnamedViaProc";
                             case OutputDir::Creation::TemporaryName: return "TemporaryName";
                           }
                           return "?";
                         });

TEST_P(OutputDirWriteTest, CreatesParentsAndWritesAtomically) {
  const fs::path path = root_ / "a" / "b" / "c";
  OutputDir dir = open(path);
  EXPECT_EQ(dir.path(), path.string());
  ASSERT_TRUE(fs::is_directory(path));

  const IoResult r = dir.write_file("trace.jsonl", "{\"seq\": 0}\n");
  ASSERT_TRUE(r.ok) << r.message();
  EXPECT_EQ(slurp(path / "trace.jsonl"), "{\"seq\": 0}\n");
  EXPECT_EQ(listing(path), std::set<std::string>{"trace.jsonl"});  // no temporary left behind

  const mode_t mask = ::umask(0);
  ::umask(mask);
  EXPECT_EQ(fs::status(path / "trace.jsonl").permissions(),
            static_cast<fs::perms>(0644 & ~mask));
}

TEST_P(OutputDirWriteTest, WritesPartsBackToBackAndReplaces) {
  OutputDir dir = open(root_);
  const std::string header = "HEADER", empty, data(3 << 20, 'x');
  const std::span<const std::byte> parts[] = {
      std::as_bytes(std::span(header)), std::as_bytes(std::span(empty)),
      std::as_bytes(std::span(data))};
  ASSERT_TRUE(dir.write_file("op_x_output_000000.npy", parts).ok);
  EXPECT_EQ(slurp(root_ / "op_x_output_000000.npy"), header + data);
  ASSERT_TRUE(dir.write_file("op_x_output_000000.npy", "short").ok);
  EXPECT_EQ(slurp(root_ / "op_x_output_000000.npy"), "short");
  ASSERT_TRUE(dir.write_file("empty.txt", "").ok);
  EXPECT_EQ(fs::file_size(root_ / "empty.txt"), 0u);
}

TEST_P(OutputDirWriteTest, PlantedSymlinkIsReplacedNotFollowed) {
  const fs::path victim = root_ / "victim.txt";
  spit(victim, "precious");
  fs::create_directory(root_ / "out");
  fs::create_symlink(victim, root_ / "out" / "summary.json");
  OutputDir dir = open(root_ / "out");
  ASSERT_TRUE(dir.write_file("summary.json", "{}").ok);
  EXPECT_EQ(slurp(victim), "precious");
  EXPECT_FALSE(fs::is_symlink(root_ / "out" / "summary.json"));
  EXPECT_EQ(slurp(root_ / "out" / "summary.json"), "{}");
}

TEST_P(OutputDirWriteTest, BadNamesAreRefused) {
  OutputDir dir = open(root_);
  for (const std::string_view name :
       {std::string_view(""), std::string_view("."), std::string_view(".."),
        std::string_view("a/b"), std::string_view("../escape"), std::string_view("/etc/x"),
        std::string_view("a\0b", 3)}) {
    const IoResult r = dir.write_file(name, "x");
    EXPECT_FALSE(r.ok) << name;
    EXPECT_EQ(r.error, EINVAL) << name;
    EXPECT_FALSE(r.message().empty());
    errno = 0;
    EXPECT_EQ(dir.open_fresh_for_append(name), -1) << name;
    EXPECT_EQ(errno, EINVAL);
  }
  EXPECT_TRUE(listing(root_).empty());
  EXPECT_FALSE(fs::exists(root_.parent_path() / "escape"));
}

TEST_P(OutputDirWriteTest, FailedRenameLeavesNoTemporary) {
  fs::create_directory(root_ / "trace.jsonl");
  fs::create_directory(root_ / "trace.jsonl" / "keep");
  OutputDir dir = open(root_);
  const IoResult r = dir.write_file("trace.jsonl", "x");
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.error, 0);
  EXPECT_EQ(listing(root_), std::set<std::string>{"trace.jsonl"});
  EXPECT_TRUE(fs::is_directory(root_ / "trace.jsonl" / "keep"));
}

TEST_P(OutputDirWriteTest, LongNamesStillGetATemporary) {
  OutputDir dir = open(root_);
  const std::string name = "op_" + std::string(240, 'a') + ".npy";  // 247 bytes: within NAME_MAX
  ASSERT_TRUE(dir.write_file(name, "ok").ok);
  EXPECT_EQ(slurp(root_ / name), "ok");
  const IoResult too_long = dir.write_file(std::string(300, 'b'), "x");
  EXPECT_FALSE(too_long.ok);
  EXPECT_EQ(too_long.error, ENAMETOOLONG);
  EXPECT_EQ(listing(root_).size(), 1u);
}

// The names a directory's entries were created under while `write` ran, as inotify saw them:
// shows which way write_file took, which nothing else in the result tells apart.
template <typename Write>
std::vector<std::string> names_created_during(const fs::path& dir, Write&& write) {
  const int watch = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  EXPECT_GE(watch, 0);
  EXPECT_GE(::inotify_add_watch(watch, dir.c_str(), IN_CREATE | IN_MOVED_TO), 0);
  write();
  std::vector<std::string> names;
  alignas(inotify_event) char buffer[4096];
  for (ssize_t n; (n = ::read(watch, buffer, sizeof buffer)) > 0;) {
    for (ssize_t at = 0; at < n;) {
      const auto* event = reinterpret_cast<const inotify_event*>(buffer + at);
      if (event->len > 0) names.emplace_back(event->name);
      at += static_cast<ssize_t>(sizeof(inotify_event) + event->len);
    }
  }
  ::close(watch);
  return names;
}

TEST_P(OutputDirWriteTest, OnlyTheTemporaryNamePathShowsATemporaryName) {
  OutputDir dir = open(root_);
  const auto names = names_created_during(
      root_, [&] { ASSERT_TRUE(dir.write_file("summary.json", "{}").ok); });
  ASSERT_FALSE(names.empty());
  EXPECT_EQ(names.back(), "summary.json");
  const bool temporary_seen = names.front().starts_with(".tmp.");
  // This test directory's file system has O_TMPFILE (ext4, tmpfs): the unnamed way is taken.
  EXPECT_EQ(temporary_seen, GetParam() == OutputDir::Creation::TemporaryName) << names.front();
  EXPECT_EQ(slurp(root_ / "summary.json"), "{}");
}

TEST_P(OutputDirWriteTest, KeepsTheWayAskedForWhereTheKernelAllowsIt) {
  // Linking an unnamed file by its fd needs Linux 6.10 or CAP_DAC_READ_SEARCH; without them the
  // fd's /proc path is the way down, and that is what this test would report.
  OutputDir dir = open(root_);
  for (const char* name : {"op_a.npy", "op_b.npy", "op_a.npy"}) {  // the last one replaces
    ASSERT_TRUE(dir.write_file(name, name).ok) << name;
  }
  EXPECT_EQ(dir.creation(), GetParam());
  EXPECT_EQ(listing(root_), (std::set<std::string>{"op_a.npy", "op_b.npy"}));
}

TEST_F(OutputDirTest, OpenFreshForAppendReplacesFileAndSymlink) {
  const fs::path victim = root_ / "victim.txt";
  spit(victim, "precious");
  fs::create_directory(root_ / "out");
  spit(root_ / "out" / "old.jsonl", "old line\n");
  fs::create_symlink(victim, root_ / "out" / "trace.jsonl");
  OutputDir dir((root_ / "out").string());

  for (const char* name : {"trace.jsonl", "old.jsonl", "new.jsonl"}) {
    const int fd = dir.open_fresh_for_append(name);
    ASSERT_GE(fd, 0) << name << ": " << std::strerror(errno);
    ASSERT_EQ(::write(fd, "a\n", 2), 2);
    ASSERT_EQ(::lseek(fd, 0, SEEK_SET), 0);
    ASSERT_EQ(::write(fd, "b\n", 2), 2);  // O_APPEND: still lands at the end
    EXPECT_NE(::fcntl(fd, F_GETFD) & FD_CLOEXEC, 0);
    ::close(fd);
    EXPECT_EQ(slurp(root_ / "out" / name), "a\nb\n") << name;
    EXPECT_FALSE(fs::is_symlink(root_ / "out" / name));
  }
  EXPECT_EQ(slurp(victim), "precious");
}

TEST_F(OutputDirTest, OpenFreshForAppendOnADirectoryFails) {
  fs::create_directory(root_ / "trace.jsonl");
  OutputDir dir(root_.string());
  EXPECT_EQ(dir.open_fresh_for_append("trace.jsonl"), -1);
  EXPECT_TRUE(fs::is_directory(root_ / "trace.jsonl"));
}

TEST_F(OutputDirTest, RemovePreviousRunFilesRemovesOnlyContractNames) {
  const fs::path outside = root_ / "outside.txt";
  spit(outside, "keep me");
  const fs::path out = root_ / "out";
  fs::create_directory(out);
  const std::set<std::string> ours = {
      "trace.jsonl",     "summary.json",        "api_trace.txt",
      "api_apis.txt",    "api_configs.txt",     "api_statistics.txt",
      "monitor.jsonl",
      "op_numpy.add_input1_000000.npy",          "op_aten.mm.default_output_000001.npy",
      ".tmp.op_x.npy.123.4"};
  for (const auto& name : ours) spit(out / name, "old");
  fs::create_symlink(outside, out / "op_link_output_000002.npy");  // the link goes, not its target
  const std::set<std::string> theirs = {"notes.txt",      "op_x.txt",         "trace.jsonl.bak",
                                        "my_summary.json", "api_other.txt",   "data.npy",
                                        "op_.npy",         ".tmp",            ".tmp.",
                                        "op_dir.npy",      "rank0",           "pid42"};
  for (const auto& name : theirs) {
    if (name == "op_dir.npy" || name == "rank0" || name == "pid42") {
      fs::create_directory(out / name);
      spit(out / name / "trace.jsonl", "child's");
    } else {
      spit(out / name, "theirs");
    }
  }

  OutputDir dir(out.string());
  EXPECT_EQ(dir.remove_previous_run_files(), ours.size() + 1);
  EXPECT_EQ(listing(out), theirs);
  EXPECT_EQ(slurp(outside), "keep me");
  EXPECT_EQ(slurp(out / "rank0" / "trace.jsonl"), "child's");  // subdirectories untouched
  EXPECT_EQ(dir.remove_previous_run_files(), 0u);
  // Each call walks the whole directory, wherever the last one's walk ended.
  spit(out / "trace.jsonl", "again");
  EXPECT_EQ(dir.remove_previous_run_files(), 1u);
  EXPECT_EQ(listing(out), theirs);
}

TEST_F(OutputDirTest, PathThatIsAFileRaises) {
  const fs::path file = root_ / "plain";
  spit(file, "x");
  try {
    OutputDir dir(file.string());
    FAIL() << "no exception";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(file.string()), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("not a directory"), std::string::npos) << e.what();
  }
  EXPECT_THROW(OutputDir((file / "below").string()), Error);
  EXPECT_THROW(OutputDir(""), Error);
  EXPECT_EQ(slurp(file), "x");
}

TEST_F(OutputDirTest, SymlinkedOutputDirectoryIsUsable) {
  // The user may point OPHOOK_OUTPUT at a symlink; only links *inside* it are distrusted.
  fs::create_directory(root_ / "real");
  fs::create_directory_symlink(root_ / "real", root_ / "link");
  OutputDir dir((root_ / "link").string());
  ASSERT_TRUE(dir.write_file("summary.json", "{}").ok);
  EXPECT_EQ(slurp(root_ / "real" / "summary.json"), "{}");
}

TEST_F(OutputDirTest, NestedDirectoryIsNeverASymlink) {
  // pid<PID>/rank<R> below the root: a link planted at that name is refused, not followed.
  fs::create_directory(root_ / "elsewhere");
  fs::create_directory_symlink(root_ / "elsewhere", root_ / "rank1");
  try {
    OutputDir dir((root_ / "rank1").string(), OutputDir::Leaf::NoFollow);
    FAIL() << "no exception";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("symlink"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(fs::is_empty(root_ / "elsewhere"));
  OutputDir fresh((root_ / "rank2").string(), OutputDir::Leaf::NoFollow);
  ASSERT_TRUE(fresh.write_file("summary.json", "{}").ok);
  EXPECT_TRUE(fs::is_directory(fs::symlink_status(root_ / "rank2")));
}

TEST_F(OutputDirTest, InsideAWorldWritableDirectoryItIsPrivateAndMustBeOurs) {
  fs::permissions(root_, static_cast<fs::perms>(01777));
  OutputDir dir((root_ / "dumps").string());
  EXPECT_EQ(fs::status(root_ / "dumps").permissions(), static_cast<fs::perms>(0700));
  fs::create_directory(root_ / "theirs");
  ASSERT_EQ(::chown((root_ / "theirs").c_str(), ::geteuid() + 1, static_cast<gid_t>(-1)) == 0, ::geteuid() == 0)
      << "only root can give a directory away";
  if (::geteuid() == 0) {
    try {
      OutputDir taken((root_ / "theirs").string());
      FAIL() << "no exception";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("world-writable"), std::string::npos) << e.what();
    }
  }
}

TEST_F(OutputDirTest, RenameKeepsTheOpenFilesAndNamesTheNewPath) {
  // A child learns its rank: pid<PID>/ becomes rank<R>/ while its trace.jsonl is being written.
  OutputDir dir((root_ / "pid42").string(), OutputDir::Leaf::NoFollow);
  const int trace = dir.open_fresh_for_append("trace.jsonl");
  ASSERT_GE(trace, 0);
  ASSERT_EQ(::write(trace, "a\n", 2), 2);
  ASSERT_EQ(dir.rename("rank1"), 0);
  EXPECT_EQ(dir.path(), (root_ / "rank1").string());
  ASSERT_EQ(::write(trace, "b\n", 2), 2);
  ::close(trace);
  ASSERT_TRUE(dir.write_file("summary.json", "{}").ok);
  EXPECT_EQ(listing(root_), std::set<std::string>{"rank1"});
  EXPECT_EQ(slurp(root_ / "rank1" / "trace.jsonl"), "a\nb\n");
  EXPECT_EQ(slurp(root_ / "rank1" / "summary.json"), "{}");
  EXPECT_EQ(dir.rename("../x"), EINVAL);
}

TEST_F(OutputDirTest, RenameReplacesOnlyAnEmptyDirectory) {
  OutputDir dir((root_ / "pid42").string(), OutputDir::Leaf::NoFollow);
  fs::create_directory(root_ / "rank1");
  spit(root_ / "rank1" / "trace.jsonl", "another process's");
  fs::create_directory_symlink(root_ / "rank1", root_ / "rank2");
  spit(root_ / "rank3", "a file");
  for (const char* taken : {"rank1", "rank2", "rank3"}) EXPECT_EQ(dir.rename(taken), EEXIST) << taken;
  EXPECT_EQ(dir.path(), (root_ / "pid42").string());
  EXPECT_EQ(slurp(root_ / "rank1" / "trace.jsonl"), "another process's");
  fs::create_directory(root_ / "rank4");
  ASSERT_EQ(dir.rename("rank4"), 0);
  EXPECT_EQ(listing(root_), (std::set<std::string>{"rank1", "rank2", "rank3", "rank4"}));
}

TEST_F(OutputDirTest, RenameNeverMovesWhatTookTheOldName) {
  OutputDir dir((root_ / "pid42").string(), OutputDir::Leaf::NoFollow);
  fs::rename(root_ / "pid42", root_ / "moved");
  fs::create_directory(root_ / "pid42");
  EXPECT_EQ(dir.rename("rank1"), ESTALE);
  fs::remove(root_ / "pid42");
  EXPECT_EQ(dir.rename("rank1"), ESTALE);
  EXPECT_EQ(listing(root_), std::set<std::string>{"moved"});
}

TEST_F(OutputDirTest, ReserveHoldsSpaceUntilReleased) {
  OutputDir dir(root_.string());
  dir.reserve_space(64 << 10);
  std::size_t reserved = 0;
  for (const auto& entry : fs::directory_iterator(root_)) {
    if (entry.path().filename().string().starts_with(".tmp.reserve.")) reserved = entry.file_size();
  }
  EXPECT_EQ(reserved, 64u << 10);
  dir.release_reserve();
  EXPECT_TRUE(listing(root_).empty());
  EXPECT_EQ(dir.remove_previous_run_files(), 0u);
}

}  // namespace
}  // namespace ophook::core
