// `compare --referee float64`: which pairs go to the replay package, and how its answer lands in the
// per-op results and the outputs.
#include <gtest/gtest.h>

#include <sstream>

#include "compare/referee.hpp"
#include "render/referee_verdicts.hpp"

namespace ophook::cli {
namespace {

using json = nlohmann::json;

TraceRecord record(std::int64_t seq, const std::string& op, bool dumped) {
  TraceRecord r;
  r.seq = seq;
  r.op = op;
  for (const char* path : {"args[0]", "outputs[0]"}) {
    ArraySpec a;
    a.path = path;
    a.dtype = "float32";
    a.file = dumped ? "op_" + op + "_" + path + "_" + std::to_string(seq) + ".npy" : "";
    r.arrays.push_back(a);
  }
  return r;
}

/// BASE and NEW with the same calls: 40 differing numpy.matmul pairs, one numpy.tanh pair that
/// does not differ, one differing numpy.exp pair whose NEW side has no files.
CompareResult comparison() {
  CompareResult r;
  r.base_dir = "/runs/base";
  r.new_dir = "/runs/new";
  auto& root = r.processes.emplace_back();
  root.base_name = root.new_name = "root";
  root.base_dir = r.base_dir;
  root.new_dir = r.new_dir;
  auto add = [&](const std::string& op, bool differs, bool new_dumped) {
    const auto seq = static_cast<std::int64_t>(root.base.size());
    root.base.push_back(record(seq, op, true));
    root.other.push_back(record(seq + 1000, op, new_dumped));
    PairResult pair;
    pair.base = pair.other = root.base.size() - 1;
    pair.differs = differs;
    root.pairs.push_back(pair);
  };
  add("numpy.tanh", false, true);
  add("numpy.exp", true, false);
  for (int i = 0; i < 40; ++i) add("numpy.matmul", true, true);
  for (const char* op : {"numpy.exp", "numpy.matmul", "numpy.tanh"}) {
    ComparedOp s;
    s.op = op;
    s.differing = std::string(op) == "numpy.tanh" ? 0 : 1;
    r.ops.push_back(s);
  }
  return r;
}

TEST(CompareReferee, AsksForTheFirstDifferingPairsThatBothRunsDumped) {
  const json request = referee_request(comparison());
  EXPECT_EQ(request["base"], "/runs/base");
  EXPECT_EQ(request["new"], "/runs/new");
  ASSERT_EQ(request["ops"].size(), 1u);  // exp lacks NEW's files; tanh does not differ
  EXPECT_EQ(request["ops"][0]["op"], "numpy.matmul");
  const json& pairs = request["ops"][0]["pairs"];
  ASSERT_EQ(pairs.size(), kRefereePairsPerOp);
  EXPECT_EQ(pairs[0], json::parse(R"([2, 1002, "/runs/base", "/runs/new"])"));
  EXPECT_EQ(pairs.back(), json::parse(R"([33, 1033, "/runs/base", "/runs/new"])"));
}

TEST(CompareReferee, TheAnswerLandsOnItsOpAndTheOthersSayWhyNot) {
  CompareResult r = comparison();
  const json request = referee_request(r);
  const json response = json::parse(R"({"ops": [{"op": "numpy.matmul", "closer": "base", "base_max_rel": 1e-7,
                                        "new_max_rel": 0.0025, "pairs_judged": 30, "reason": ""}]})");
  apply_referee_response(r, request, response);
  const RefereeVerdict& matmul = *r.ops[1].referee;
  EXPECT_EQ(matmul.closer, "base");
  EXPECT_EQ(matmul.base_max_rel, 1e-7);
  EXPECT_EQ(matmul.new_max_rel, 0.0025);
  EXPECT_EQ(matmul.pairs_judged, 30u);
  EXPECT_EQ(matmul.pairs_asked, kRefereePairsPerOp);
  const RefereeVerdict& exp = *r.ops[0].referee;
  EXPECT_FALSE(exp.closer);
  EXPECT_NE(exp.reason.find("OPHOOK_MODE=dump"), std::string::npos);
  EXPECT_FALSE(r.ops[2].referee);  // tanh: nothing differs, nothing to referee

  const auto j = referee_json(matmul);
  EXPECT_EQ(j["closer"], "base");
  EXPECT_EQ(j["new_max_rel"], 0.0025);
  EXPECT_TRUE(referee_json(exp)["closer"].is_null());

  std::ostringstream text;
  print_referee_text(r, text);
  EXPECT_NE(text.str().find("referee float64"), std::string::npos);
  EXPECT_NE(text.str().find("NEW 2.5e+04x further"), std::string::npos) << text.str();
  EXPECT_NE(text.str().find("30/32"), std::string::npos);
}

TEST(CompareReferee, AMalformedAnswerIsAnError) {
  CompareResult r = comparison();
  const json request = referee_request(r);
  EXPECT_THROW(apply_referee_response(r, request, json::parse(R"({"answer": 1})")), std::exception);
  EXPECT_THROW(apply_referee_response(r, request, json::parse(R"({"ops": [{"op": "numpy.matmul",
                                                   "base_max_rel": "small"}]})")),
               std::exception);
}

}  // namespace
}  // namespace ophook::cli
