// ArrayFiles stores content once: an array equal to a file written before becomes a hard link to
// it, and only bytes compared equal are linked — a planted digest collision (every array hashed
// alike) still writes each different array into a file of its own. Links cost no budget.
#include "files/array_files.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "ophook/files/npy.hpp"
#include "ophook/process/recorder.hpp"
#include "support/temp_files.hpp"
#include "writer/run_summary.hpp"

namespace ophook::core {
namespace {

namespace fs = std::filesystem;

ContentDigest same_digest_for_all(std::span<const std::span<const std::byte>> /*parts*/) noexcept { return {42, 42}; }

class ArrayFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = test::make_temp_dir("ophook_array_files_");
    Config config;
    config.output = (root_ / "run").string();
    config.mode = Mode::Dump;
    config.max_bytes = 1 << 20;
    recorder_ = &Recorder::start(config, WriterThread::Inline);
    dtype_ = recorder_->intern_dtype({"float32", "<f4", ""});
  }
  void TearDown() override {
    recorder_->finish();
    fs::remove_all(root_);
  }

  // A call whose one array holds `n` copies of `value`, its outcome named `name`.
  CallRecord& call(std::uint64_t seq, float value, std::size_t n, const std::string& name) {
    auto& record = records_.emplace_back(std::make_unique<CallRecord>());
    record->seq = seq;
    auto& array = record->new_array();
    array.shape = {static_cast<std::int64_t>(n)};
    array.dtype_id = dtype_;
    auto* data = array.reserve_data(n * sizeof(float));
    for (std::size_t i = 0; i < n; ++i) std::memcpy(data + i * sizeof(float), &value, sizeof(float));
    array.captured = true;
    outcomes_.emplace_back(1).front().file = name;
    return *record;
  }

  fs::path root_;
  Recorder* recorder_ = nullptr;
  std::uint32_t dtype_ = 0;
  std::vector<RecordPtr> records_;
  std::vector<std::vector<ArrayOutcome>> outcomes_;
};

TEST_F(ArrayFilesTest, EqualArraysAreLinkedAndDifferentOnesWrittenDespiteEqualDigests) {
  OutputDir dir((root_ / "files").string());
  RunSummary summary(*recorder_);
  ArrayFiles files(dir, *recorder_, summary, /*helpers=*/3, same_digest_for_all);
  call(0, 1.0F, 1000, "a.npy");
  call(1, 2.0F, 1000, "b.npy");  // the digest says "seen", the bytes say otherwise
  call(2, 1.0F, 1000, "c.npy");  // the same as a.npy
  call(3, 1.0F, 999, "d.npy");   // other shape, same digest
  for (std::size_t i = 0; i < records_.size(); ++i) files.add(*records_[i], outcomes_[i], /*files=*/true);
  files.write_planned();

  const auto a = root_ / "files" / "a.npy";
  for (const char* name : {"a.npy", "b.npy", "c.npy", "d.npy"}) ASSERT_TRUE(fs::exists(root_ / "files" / name)) << name;
  EXPECT_EQ(test::inode(root_ / "files" / "c.npy"), test::inode(a));
  EXPECT_NE(test::inode(root_ / "files" / "b.npy"), test::inode(a));
  EXPECT_NE(test::inode(root_ / "files" / "d.npy"), test::inode(a));
  EXPECT_EQ(outcomes_[2][0].same_as, "a.npy");
  EXPECT_EQ(outcomes_[1][0].same_as, "");
  EXPECT_EQ(outcomes_[3][0].same_as, "");
  // The statistics are each array's own, not the nominated file's.
  EXPECT_EQ(outcomes_[1][0].stats->max, 2.0);
  EXPECT_EQ(outcomes_[1][0].stats->xxh64, compute_stats("<f4", records_[1]->arrays[0].data.get(), 4000).xxh64);
  EXPECT_EQ(outcomes_[2][0].stats->xxh64, outcomes_[0][0].stats->xxh64);
  // Every file holds its own array: header and bytes as numpy.save writes them.
  for (std::size_t i = 0; i < records_.size(); ++i) {
    const auto& array = records_[i]->arrays[0];
    const auto text = test::slurp(root_ / "files" / outcomes_[i][0].file);
    const auto header = encode_npy_header("<f4", array.shape);
    ASSERT_EQ(text.size(), header.size() + array.nbytes);
    EXPECT_EQ(text.substr(0, header.size()), header);
    EXPECT_EQ(std::memcmp(text.data() + header.size(), array.data.get(), array.nbytes), 0) << i;
    EXPECT_TRUE(outcomes_[i][0].stats.has_value());
  }
}

/// Doubles each byte into a 16-bit word: a stand-in for a narrow float's widening.
void widen_bytes(std::byte* dst, const std::byte* src, std::size_t count) noexcept {
  for (std::size_t i = 0; i < count; ++i) dst[2 * i] = dst[2 * i + 1] = src[i];
}

TEST_F(ArrayFilesTest, NarrowCopiesAreWidenedByTheBatchAndLinkedByTheirWidenedBytes) {
  // Two arrays whose copies widen when first read (a device's staged bfloat16): the batch widens
  // them before their digests; the file holds the widened bytes, and the second array, equal once
  // widened, is a link to it.
  OutputDir dir((root_ / "files").string());
  RunSummary summary(*recorder_);
  ArrayFiles files(dir, *recorder_, summary, /*helpers=*/3);
  const std::vector<std::byte> staged(256 << 10, std::byte{0x3f});  // within the fixture's 1 MiB budget once widened
  const std::vector<std::byte> wide(2 * staged.size(), std::byte{0x3f});
  for (std::uint64_t seq : {0, 1}) {
    auto& record = *records_.emplace_back(std::make_unique<CallRecord>());
    record.seq = seq;
    auto& array = record.new_array();
    array.shape = {static_cast<std::int64_t>(wide.size() / 4)};
    array.dtype_id = dtype_;
    auto narrow = std::make_shared<const SharedCopy>(std::shared_ptr<const std::byte>(staged.data(), [](const std::byte*) {}));
    array.shared = std::make_shared<const SharedCopy>(std::move(narrow), &widen_bytes, staged.size(), wide.size());
    array.nbytes = wide.size();
    array.captured = true;
    outcomes_.emplace_back(1).front().file = seq == 0 ? "a.npy" : "b.npy";
    files.add(record, outcomes_.back(), /*files=*/true);
  }
  files.write_planned();
  const auto text = test::slurp(root_ / "files" / "a.npy");
  const auto header = encode_npy_header("<f4", records_[0]->arrays[0].shape);
  ASSERT_EQ(text.size(), header.size() + wide.size());
  EXPECT_EQ(std::memcmp(text.data() + header.size(), wide.data(), wide.size()), 0);
  EXPECT_EQ(outcomes_[1][0].same_as, "a.npy");
  EXPECT_EQ(test::inode(root_ / "files" / "b.npy"), test::inode(root_ / "files" / "a.npy"));
  EXPECT_EQ(outcomes_[0][0].stats->xxh64, compute_stats("<f4", wide.data(), wide.size()).xxh64);
}

TEST_F(ArrayFilesTest, LinksCostNoBudgetAndAreCountedApart) {
  OutputDir dir((root_ / "files").string());
  RunSummary summary(*recorder_);
  {
    ArrayFiles files(dir, *recorder_, summary, /*helpers=*/0);
    // 100,000 floats (400 KiB): the 1 MiB budget holds two such files, and any number of links.
    for (std::uint64_t seq = 0; seq < 6; ++seq) {
      call(seq, seq < 5 ? 3.0F : 4.0F, 100'000, "f" + std::to_string(seq) + ".npy");
      files.add(*records_.back(), outcomes_.back(), /*files=*/true);
      files.write_planned();
    }
    EXPECT_TRUE(files.open());
    summary.set_store_once(files.store_once_json());
  }
  for (std::uint64_t seq = 1; seq < 5; ++seq) EXPECT_EQ(outcomes_[seq][0].same_as, "f0.npy");
  EXPECT_EQ(test::inode(root_ / "files" / "f4.npy"), test::inode(root_ / "files" / "f0.npy"));
  EXPECT_NE(test::inode(root_ / "files" / "f5.npy"), test::inode(root_ / "files" / "f0.npy"));
  summary.write_files(dir, 0, {});
  const auto json = nlohmann::json::parse(test::slurp(root_ / "files" / "summary.json"));
  const auto file_bytes = static_cast<std::uint64_t>(fs::file_size(root_ / "files" / "f0.npy"));
  EXPECT_EQ(json.at("totals").at("files"), 6);
  EXPECT_EQ(json.at("totals").at("files_linked"), 4);
  EXPECT_EQ(json.at("totals").at("bytes_named"), 6 * file_bytes);
  EXPECT_EQ(json.at("totals").at("bytes_written"), 2 * file_bytes);
  EXPECT_EQ(json.at("budget").at("used_bytes"), 2 * file_bytes);
  EXPECT_EQ(json.at("budget").at("exhausted"), false);
  EXPECT_EQ(json.at("store_once").at("links"), "on");
}

TEST_F(ArrayFilesTest, AFailureOfTheMediumStopsTheFilesAndEveryArrayKeepsItsStatistics) {
  OutputDir dir((root_ / "files").string());
  RunSummary summary(*recorder_);
  constexpr unsigned kHelpers = 3;
  {
    ArrayFiles files(dir, *recorder_, summary, kHelpers);
    for (std::uint64_t seq = 0; seq < 60; ++seq) {
      call(seq, static_cast<float>(seq), 2048, "f" + std::to_string(seq) + ".npy");  // 8 KiB each
      files.add(*records_.back(), outcomes_.back(), /*files=*/true);
    }
    // Over RLIMIT_FSIZE a write fails with EFBIG (SIGXFSZ ignored), as on a full disk: every file
    // fails the same way, so the batch stops after at most one failure per thread.
    rlimit old{};
    ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old), 0);
    const auto old_handler = ::signal(SIGXFSZ, SIG_IGN);
    rlimit limited = old;
    limited.rlim_cur = 4096;
    ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &limited), 0);
    files.write_planned();
    ::setrlimit(RLIMIT_FSIZE, &old);
    ::signal(SIGXFSZ, old_handler);
    EXPECT_FALSE(files.open());
  }
  for (std::uint64_t seq = 0; seq < 60; ++seq) {
    const auto& outcome = outcomes_[seq][0];
    EXPECT_EQ(outcome.file, "") << seq;
    ASSERT_TRUE(outcome.stats.has_value()) << seq;
    EXPECT_EQ(outcome.stats->max, static_cast<double>(seq));
  }
  // Not even a partial file.
  for (const auto& entry : fs::directory_iterator(root_ / "files")) ADD_FAILURE() << entry.path();
  summary.write_files(dir, 0, {});
  const auto json = nlohmann::json::parse(test::slurp(root_ / "files" / "summary.json"));
  EXPECT_GE(json.at("write_errors").at("count"), 1);
  EXPECT_LE(json.at("write_errors").at("count"), kHelpers + 1);
}

}  // namespace
}  // namespace ophook::core
