// OPHOOK_MONITOR and OPHOOK_MONITOR_TRIGGER: the monitor's set, its trigger rules, and what the
// monitor alone leaves unrecorded.
#include "ophook/config/settings.hpp"
#include "support/parse_settings.hpp"

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace ophook::core {
namespace {

TEST(MonitorRules, RulesParseWithTheirKindsAndSpellBackTheSame) {
  const auto rules = parse_trigger_rules(" loss:6sigma, grad_norm:10x,Net.fc1.weight.grad_norm:2.5x,*.act_norm:3sigma");
  ASSERT_TRUE(rules.has_value());
  ASSERT_EQ(rules->size(), 4u);
  EXPECT_EQ((*rules)[0].statistic, "loss");
  EXPECT_EQ((*rules)[0].kind, TriggerRule::Kind::Sigma);
  EXPECT_DOUBLE_EQ((*rules)[0].threshold, 6);
  EXPECT_EQ((*rules)[1].kind, TriggerRule::Kind::Ratio);
  EXPECT_EQ(to_string((*rules)[2]), "Net.fc1.weight.grad_norm:2.5x");
  EXPECT_EQ(to_string((*rules)[3]), "*.act_norm:3sigma");
}

TEST(MonitorRules, MalformedRulesAndUnknownStatisticsAreRejected) {
  for (const char* text : {"loss", "loss:6", "loss:sigma", "loss:-1sigma", "loss:0x", "los:6sigma", "grad_norm:6y",
                           "fc1.weight.gradnorm:3x", ".grad_norm:3x", "", ","}) {
    EXPECT_FALSE(parse_trigger_rules(text).has_value()) << text;
  }
}

TEST(MonitorRules, TheMonitorAloneRecordsNoOpButWithAModeItDoes) {
  const auto alone = test::parse_settings({{"OPHOOK_MONITOR", "1"}});
  EXPECT_TRUE(alone.errors.empty());
  EXPECT_TRUE(alone.config.monitor.params);
  EXPECT_FALSE(alone.config.monitor.modules);
  EXPECT_FALSE(alone.config.records_ops);
  const auto with_mode = test::parse_settings({{"OPHOOK_MONITOR", "modules"}, {"OPHOOK_MODE", "stats"}});
  EXPECT_TRUE(with_mode.config.monitor.modules && with_mode.config.monitor.params);
  EXPECT_TRUE(with_mode.config.records_ops);
  EXPECT_TRUE(test::parse_settings({{"OPHOOK_MONITOR", "on"}, {"OPHOOK_NAN", "warn"}}).config.records_ops);
  EXPECT_TRUE(test::parse_settings({}).config.records_ops);
}

TEST(MonitorRules, BadValuesNameWhatIsAccepted) {
  const auto bad_set = test::parse_settings({{"OPHOOK_MONITOR", "params,weights"}});
  ASSERT_EQ(bad_set.errors.size(), 1u);
  EXPECT_NE(bad_set.errors[0].message().find("params, modules"), std::string::npos);
  const auto bad_rule = test::parse_settings({{"OPHOOK_MONITOR", "1"}, {"OPHOOK_MONITOR_TRIGGER", "loss:6"}});
  ASSERT_EQ(bad_rule.errors.size(), 1u);
  EXPECT_NE(bad_rule.errors[0].message().find("STATISTIC:Nsigma"), std::string::npos);
}

TEST(MonitorRules, RulesAloneTurnTheMonitorOnButNotAgainstAnExplicitOff) {
  const auto rules_alone = test::parse_settings({{"OPHOOK_MONITOR_TRIGGER", "loss:6sigma"}});
  EXPECT_TRUE(rules_alone.errors.empty());
  EXPECT_TRUE(rules_alone.config.monitor.params);
  EXPECT_FALSE(test::parse_settings({{"OPHOOK_MONITOR_TRIGGER", "loss:6sigma"}, {"OPHOOK_MONITOR", "0"}}).config.monitor.on());
}

}  // namespace
}  // namespace ophook::core
