// OutputDir::link_copy: a name is given to an earlier file only when that file holds exactly the
// bytes the name should hold, never through a symlink planted at either name, and a refusal of
// the file system leaves the caller to write the file.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <string>

#include "ophook/files/output_dir.hpp"
#include "support/temp_files.hpp"

namespace ophook::core {
namespace {

namespace fs = std::filesystem;

std::span<const std::byte> bytes(const std::string& text) { return std::as_bytes(std::span(text)); }

class OutputDirLinkTest : public ::testing::TestWithParam<OutputDir::Creation> {
 protected:
  void SetUp() override { root_ = test::make_temp_dir("ophook_link_"); }
  void TearDown() override { fs::remove_all(root_); }
  // A header and data written as the first file of their content.
  void write_first(OutputDir& dir) {
    const std::span<const std::byte> parts[] = {bytes(header_), bytes(data_)};
    ASSERT_TRUE(dir.write_file("first.npy", parts).ok);
  }
  fs::path root_;
  std::string header_ = "HEADER", data_ = std::string(300'000, 'x') + "tail";
};

INSTANTIATE_TEST_SUITE_P(Creation, OutputDirLinkTest,
                         ::testing::Values(OutputDir::Creation::Unnamed, OutputDir::Creation::UnnamedViaProc,
                                           OutputDir::Creation::TemporaryName));

TEST_P(OutputDirLinkTest, TheSameBytesAreLinkedNotWritten) {
  OutputDir dir(root_.string(), OutputDir::Leaf::Follow, GetParam());
  write_first(dir);
  const std::span<const std::byte> parts[] = {bytes(header_), bytes(data_)};
  const auto result = dir.link_copy("first.npy", "second.npy", parts);
  EXPECT_EQ(result.outcome, OutputDir::Link::Made);
  EXPECT_EQ(test::inode(root_ / "second.npy"), test::inode(root_ / "first.npy"));
  EXPECT_EQ(test::slurp(root_ / "second.npy"), header_ + data_);
  // A name already there (a file, a symlink) is replaced by the link, not written through.
  std::ofstream(root_ / "victim") << "keep";
  fs::create_symlink(root_ / "victim", root_ / "third.npy");
  EXPECT_EQ(dir.link_copy("first.npy", "third.npy", parts).outcome, OutputDir::Link::Made);
  EXPECT_EQ(test::inode(root_ / "third.npy"), test::inode(root_ / "first.npy"));
  EXPECT_EQ(test::slurp(root_ / "victim"), "keep");
}

TEST_P(OutputDirLinkTest, OtherBytesOfTheSameSizeAreNotLinked) {
  OutputDir dir(root_.string(), OutputDir::Leaf::Follow, GetParam());
  write_first(dir);
  auto other = data_;
  other[200'000] = 'y';  // in the second piece read back
  const std::span<const std::byte> parts[] = {bytes(header_), bytes(other)};
  EXPECT_EQ(dir.link_copy("first.npy", "second.npy", parts).outcome, OutputDir::Link::Differs);
  const std::string more = data_ + "!", head = header_ + data_.substr(0, 5), rest = data_.substr(5);
  const std::span<const std::byte> longer[] = {bytes(header_), bytes(more)};
  EXPECT_EQ(dir.link_copy("first.npy", "second.npy", longer).outcome, OutputDir::Link::Differs);
  const std::span<const std::byte> split[] = {bytes(head), bytes(rest)};
  EXPECT_EQ(dir.link_copy("first.npy", "second.npy", split).outcome, OutputDir::Link::Made);  // same bytes
  EXPECT_FALSE(fs::exists(root_ / "missing.npy"));
  EXPECT_EQ(dir.link_copy("missing.npy", "x.npy", parts).outcome, OutputDir::Link::Differs);
  EXPECT_FALSE(fs::exists(root_ / "x.npy"));
}

TEST_P(OutputDirLinkTest, APlantedSymlinkIsNeverTheFileLinked) {
  OutputDir dir(root_.string(), OutputDir::Leaf::Follow, GetParam());
  // Outside the directory, with exactly the bytes asked for: a symlink to it must not be followed.
  std::ofstream(root_.parent_path() / (root_.filename().string() + "-outside"), std::ios::binary) << header_ + data_;
  fs::create_symlink(root_.parent_path() / (root_.filename().string() + "-outside"), root_ / "first.npy");
  const std::span<const std::byte> parts[] = {bytes(header_), bytes(data_)};
  EXPECT_EQ(dir.link_copy("first.npy", "second.npy", parts).outcome, OutputDir::Link::Differs);
  EXPECT_FALSE(fs::exists(fs::symlink_status(root_ / "second.npy")));
  fs::remove(root_.parent_path() / (root_.filename().string() + "-outside"));
}

TEST_P(OutputDirLinkTest, ARefusedLinkIsReportedForTheCallerToWrite) {
  OutputDir dir(root_.string(), OutputDir::Leaf::Follow, GetParam());
  write_first(dir);
  // An immutable file cannot get another name (EPERM), as on a file system without hard links.
  const int fd = ::open((root_ / "first.npy").c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  int flags = 0;
  const bool immutable = ::ioctl(fd, FS_IOC_GETFLAGS, &flags) == 0 &&
                         (flags |= FS_IMMUTABLE_FL, ::ioctl(fd, FS_IOC_SETFLAGS, &flags) == 0);
  if (!immutable) {
    ::close(fd);
    GTEST_SKIP() << "this file system or user cannot make a file immutable (CAP_LINUX_IMMUTABLE)";
  }
  const std::span<const std::byte> parts[] = {bytes(header_), bytes(data_)};
  const auto result = dir.link_copy("first.npy", "second.npy", parts);
  flags &= ~FS_IMMUTABLE_FL;
  ::ioctl(fd, FS_IOC_SETFLAGS, &flags);
  ::close(fd);
  EXPECT_EQ(result.outcome, OutputDir::Link::Failed);
  EXPECT_EQ(result.error, EPERM);
  EXPECT_FALSE(fs::exists(root_ / "second.npy"));
  EXPECT_TRUE(dir.write_file("second.npy", parts).ok);  // the directory itself still works
}

}  // namespace
}  // namespace ophook::core
