#include "ophook/process/run_facts.hpp"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace ophook::core {
namespace {

TEST(RunFacts, VersionsOutliveARunAndNotesDoNot) {
  RunFacts facts;
  facts.set_version("python", "3.11.7");
  facts.add_note("compile", {{"regions", 2}});
  nlohmann::ordered_json summary;
  facts.merge_into(summary);
  EXPECT_EQ(summary["versions"]["python"], "3.11.7");
  EXPECT_EQ(summary["notes"]["compile"]["regions"], 2);
  facts.clear_notes();
  nlohmann::ordered_json next;
  facts.merge_into(next);
  EXPECT_EQ(next["versions"]["python"], "3.11.7");
  EXPECT_TRUE(next["notes"].empty());
}

TEST(RunFacts, ACountingNoteLosesNoUpdateAcrossThreads) {
  RunFacts facts;
  std::vector<std::thread> threads;
  threads.reserve(4);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 1000; ++i) {
        facts.update_note("counted", [](nlohmann::json& note) { note = note.is_null() ? 1 : note.get<int>() + 1; });
      }
    });
  }
  for (auto& thread : threads) thread.join();
  nlohmann::ordered_json summary;
  facts.merge_into(summary);
  EXPECT_EQ(summary["notes"]["counted"], 4000);
}

}  // namespace
}  // namespace ophook::core
