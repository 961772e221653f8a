#include "ophook/capture/copy_memo.hpp"

#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <thread>
#include <vector>

#include "support/stats_test_arrays.hpp"

namespace ophook::core {
namespace {

using test::float_bytes;

// Each test starts from no remembered copy: a buffer of an earlier test freed and allocated again
// at the same address would otherwise find that test's entry there.
class CopyMemo : public ::testing::Test {
 protected:
  void SetUp() override { forget_copies(); }
};

// copy_or_share(...) into a fresh capture, and whether it shared an earlier copy.
std::pair<ArrayCapture, bool> capture(const std::vector<std::byte>& live, std::size_t nbytes) {
  const auto before = copy_memo_counts();
  ArrayCapture out;
  copy_or_share(out, live.data(), live.data(), nbytes, {});
  const auto after = copy_memo_counts();
  EXPECT_TRUE(out.captured);
  EXPECT_EQ(out.nbytes, nbytes);
  EXPECT_EQ(std::memcmp(out.bytes(), live.data(), nbytes), 0);  // the bytes as they are now
  EXPECT_NE(static_cast<const void*>(out.bytes()), static_cast<const void*>(live.data()));  // a copy
  return {std::move(out), after.shared > before.shared};
}

TEST_F(CopyMemo, SharesOnlyTheCopyOfEqualBytesAtTheSameAddress) {
  auto live = float_bytes(5 * (kContentBlockBytes / 4) + 3, 2);  // 5 blocks and a short one
  auto [first, shared_first] = capture(live, live.size());
  EXPECT_FALSE(shared_first);
  auto [second, shared_second] = capture(live, live.size());
  EXPECT_TRUE(shared_second);
  EXPECT_EQ(second.bytes(), first.bytes());  // one copy for both
  // One byte changed, in the last (short) block: a new copy, holding it.
  live.back() ^= std::byte{1};
  auto [third, shared_third] = capture(live, live.size());
  EXPECT_FALSE(shared_third);
  EXPECT_NE(third.bytes(), first.bytes());
  EXPECT_NE(std::memcmp(third.bytes(), first.bytes(), live.size()), 0);
  // A shorter array at the same address: not the same bytes.
  auto [shorter, shared_shorter] = capture(live, live.size() - 4);
  EXPECT_FALSE(shared_shorter);
}

TEST_F(CopyMemo, CopiesAgainOnceTheRecordsLetTheCopyGo) {
  const auto live = float_bytes(8 * (kContentBlockBytes / 4), 3);
  auto first = capture(live, live.size()).first;
  first.reset();  // the record written and cleared: nothing holds the copy
  auto [again, shared] = capture(live, live.size());
  EXPECT_FALSE(shared);
  auto [then, shared_then] = capture(live, live.size());
  EXPECT_TRUE(shared_then);  // the new copy is shared from then on
  EXPECT_EQ(then.bytes(), again.bytes());
}

TEST_F(CopyMemo, AForkedChildCopiesWhatItsParentShares) {
  // A DataLoader worker's records are its own: it must not take copies its parent's records hold.
  const auto live = float_bytes(4 * (kContentBlockBytes / 4), 7);
  auto first = capture(live, live.size()).first;
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ArrayCapture out;
    const auto before = copy_memo_counts().shared;
    copy_or_share(out, live.data(), live.data(), live.size(), {});
    _exit(copy_memo_counts().shared == before && out.bytes() != first.bytes() ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the child shared its parent's copy";
  auto [again, shared] = capture(live, live.size());
  EXPECT_TRUE(shared);  // the parent still does
  EXPECT_EQ(again.bytes(), first.bytes());
}

TEST_F(CopyMemo, ADevicesStagedBytesAreLentAndHeldWithTheirFingerprint) {
  // `dump` on a device: the staging memory's copy of a tensor's bytes is lent to the record, not
  // copied again, and remembered with the kernel's fingerprint of them; the next record of the
  // tensor at that address gets the copy and the fingerprint to compare on the device, and shares
  // the copy when the device found the bytes unchanged. The staging memory has its range back
  // once no record holds the copy.
  const auto live = float_bytes(4 * (kContentBlockBytes / 4), 8);
  const StagedFingerprint fingerprint{123, 456};
  bool given_back = false;
  auto staged = std::make_shared<const SharedCopy>(
      std::shared_ptr<const std::byte>(live.data(), [&](const std::byte*) { given_back = true; }));
  ArrayCapture first;
  share_staged_copy(first, live.data(), staged, live.size(), fingerprint);
  staged.reset();
  EXPECT_TRUE(first.captured);
  EXPECT_EQ(first.bytes(), live.data());  // lent where it lies
  EXPECT_EQ(first.nbytes, live.size());
  auto held = held_copy(live.data(), live.size());
  ASSERT_TRUE(held.copy);
  EXPECT_EQ(held.copy->bytes(), first.bytes());
  EXPECT_EQ(held.fingerprint.position, 123u);
  EXPECT_EQ(held.fingerprint.by_value, 456u);
  EXPECT_FALSE(held_copy(live.data(), live.size() - 4).copy);  // not the same tensor's bytes
  const auto plain = float_bytes(4 * (kContentBlockBytes / 4), 9);
  (void)capture(plain, plain.size());
  EXPECT_FALSE(held_copy(plain.data(), plain.size()).copy);  // a host array's: no fingerprint

  const auto before = copy_memo_counts();
  ArrayCapture unchanged;
  share_held_copy(unchanged, live.data(), held.copy, live.size(), {});
  EXPECT_TRUE(unchanged.captured);
  EXPECT_EQ(unchanged.bytes(), first.bytes());
  EXPECT_EQ(unchanged.nbytes, live.size());
  EXPECT_EQ(copy_memo_counts().shared, before.shared + 1);

  // Once no record holds the copy, its range is given back and there is none to compare with:
  // the bytes cross again.
  EXPECT_FALSE(given_back);
  first.reset(), unchanged.reset(), held.copy.reset();
  EXPECT_TRUE(given_back);
  EXPECT_FALSE(held_copy(live.data(), live.size()).copy);

  // A tensor not in C order (no address) is lent the same, and not remembered.
  const auto strided = float_bytes(4 * (kContentBlockBytes / 4), 10);
  ArrayCapture unordered;
  share_staged_copy(unordered, nullptr,
                    std::make_shared<const SharedCopy>(std::shared_ptr<const std::byte>(strided.data(), [](const std::byte*) {})),
                    strided.size(), fingerprint);
  EXPECT_EQ(unordered.bytes(), strided.data());
  EXPECT_FALSE(held_copy(strided.data(), strided.size()).copy);
}

TEST_F(CopyMemo, SmallArraysAreCopiedEveryTime) {
  const auto live = float_bytes(kSharedCopyMinBytes / 4 - 1, 4);
  auto [first, shared_first] = capture(live, live.size());
  auto [second, shared_second] = capture(live, live.size());
  EXPECT_FALSE(shared_first || shared_second);
  EXPECT_NE(first.bytes(), second.bytes());
}

TEST_F(CopyMemo, SharedCopyGivesItsStatisticsPerDtype) {
  const auto live = float_bytes(4 * (kContentBlockBytes / 4), 5);
  const auto [out, shared] = capture(live, live.size());
  ASSERT_TRUE(out.shared);
  for (const char* descr : {"<f4", "<i4", "<f4"}) {
    test::expect_same(out.shared->stats(descr, live.size()), compute_stats(descr, live.data(), live.size()));
  }
}

/// bfloat16 to float32: the high half of each float.
void widen_high_halves(std::byte* dst, const std::byte* src, std::size_t count) noexcept {
  for (std::size_t i = 0; i < count; ++i) {
    std::uint16_t half = 0;
    std::memcpy(&half, src + 2 * i, 2);
    const std::uint32_t word = std::uint32_t{half} << 16;
    std::memcpy(dst + 4 * i, &word, 4);
  }
}

TEST_F(CopyMemo, ANarrowCopyIsWidenedOnceWhenFirstReadAndLetsItsBytesGo) {
  // A device's staged bfloat16 (a lent range, given back by its deleter), read by four writer
  // threads at once: widened once, by whichever reads first, into the file's float32, and the
  // staged range goes back then, not when the last record lets the copy go.
  const auto wide = float_bytes(kSharedCopyMinBytes / 2, 7);
  std::vector<std::byte> staged(wide.size() / 2);
  std::vector<std::byte> expected(wide.size());
  for (std::size_t i = 0; i < staged.size() / 2; ++i) {
    std::memcpy(&staged[2 * i], &wide[4 * i + 2], 2);  // the float's high half
    std::memset(&expected[4 * i], 0, 2);
    std::memcpy(&expected[4 * i + 2], &wide[4 * i + 2], 2);
  }
  std::atomic<int> given_back{0};
  auto narrow = std::make_shared<const SharedCopy>(
      std::shared_ptr<const std::byte>(staged.data(), [&](const std::byte*) { ++given_back; }));
  const SharedCopy copy(std::move(narrow), &widen_high_halves, staged.size() / 2, expected.size());
  EXPECT_TRUE(copy.widens());
  EXPECT_EQ(given_back, 0);
  std::vector<const std::byte*> seen(4);
  std::vector<std::thread> readers;
  for (std::size_t i = 0; i < seen.size(); ++i) readers.emplace_back([&, i] { seen[i] = copy.bytes(); });
  for (auto& reader : readers) reader.join();
  ASSERT_NE(seen[0], nullptr);
  for (const auto* bytes : seen) EXPECT_EQ(bytes, seen[0]);
  EXPECT_EQ(std::memcmp(seen[0], expected.data(), expected.size()), 0);
  EXPECT_EQ(given_back, 1);
  test::expect_same(copy.stats("<f4", expected.size()), compute_stats("<f4", expected.data(), expected.size()));
}

TEST_F(CopyMemo, ASlotThatSharedACopyKeepsItsOwnBufferAsItWas) {
  // A zero-size array leaves its slot a buffer of no bytes (capacity 0, as for "exactly nbytes");
  // the slot's next use shares a copy. Its next copy must get a buffer of its own size.
  const auto live = float_bytes(kSharedCopyMinBytes / 4, 6);
  auto remembered = capture(live, live.size()).first;
  ArraySlots slots;
  slots.add().reserve_data(0);
  slots.clear(kSharedCopyMinBytes, 16);
  auto& sharing = slots.add();
  copy_or_share(sharing, live.data(), live.data(), live.size(), {});
  ASSERT_TRUE(sharing.shared);
  slots.clear(kSharedCopyMinBytes, 16);
  auto& next = slots.add();
  std::memset(next.reserve_data(256), 1, 256);
  EXPECT_EQ(next.data_capacity, 256u);  // a fresh buffer: the empty one could not hold it
}

}  // namespace
}  // namespace ophook::core
