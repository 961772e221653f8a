#include "compare/referee.hpp"

#include <fmt/format.h>
#include <stdlib.h>

#include <algorithm>
#include <fstream>
#include <unordered_map>

#include "ophook/error.hpp"
#include "read/json_fields.hpp"
#include "replay/replay_interpreter.hpp"

namespace ophook::cli {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

constexpr const char* kNoDumps =
    "no differing pair has every array in a file on both sides (record both runs with OPHOOK_MODE=dump)";

/// The kernel pair (kernel_pairing.hpp) `pair` compares, or nullptr.
const ProcessComparison::KernelPair* kernel_pair_of(const ProcessComparison& process, const PairResult& pair) {
  const std::size_t kernel_side = process.kernels_in_base ? pair.base : pair.other;
  for (const auto& kernel : process.kernel_pairs) {
    if (kernel.kernel_copy == kernel_side) return &kernel;
  }
  return nullptr;
}

bool replayable(const TraceRecord& record) {
  return std::all_of(record.arrays.begin(), record.arrays.end(), [](const ArraySpec& a) { return !a.file.empty(); });
}

/// A directory of its own for the request and response, removed when done.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "ophook-referee-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) throw Error(fmt::format("cannot create {}", pattern));
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};


}  // namespace

json referee_request(const CompareResult& result) {
  std::unordered_map<std::string_view, json> pairs;
  for (const ProcessComparison& process : result.processes) {
    const auto base_dir = fs::absolute(process.base_dir).string(), new_dir = fs::absolute(process.new_dir).string();
    for (const PairResult& pair : process.pairs) {
      const TraceRecord& base = process.base[pair.base];
      const TraceRecord& other = process.other[pair.other];
      if (!pair.differs) continue;
      json entry = {base.seq, other.seq, base_dir, new_dir};
      if (const auto* kernel = kernel_pair_of(process, pair)) {
        // A kernel cannot be re-run in float64: its output is judged against the eager call's
        // float64 re-run, on the eager call's inputs.
        const auto& eager = process.kernels_in_base ? process.other : process.base;
        const auto& kernels = process.kernels_in_base ? process.base : process.other;
        const auto& output = kernels[kernel->kernel_copy].arrays.front();
        if (!replayable(eager[kernel->eager_record]) || output.file.empty()) continue;
        const auto& kernel_dir = process.kernels_in_base ? base_dir : new_dir;
        entry.push_back({{"kernel", process.kernels_in_base ? "base" : "new"},
                         {"output", kernel->eager_output},
                         {"file", (fs::path(kernel_dir) / output.file).string()}});
      } else if (!replayable(base) || !replayable(other)) {
        continue;
      }
      json& list = pairs[base.op];
      if (list.size() < kRefereePairsPerOp) list.push_back(std::move(entry));
    }
  }
  json ops = json::array();
  for (const ComparedOp& s : result.ops) {
    if (auto it = pairs.find(s.op); it != pairs.end()) ops.push_back({{"op", s.op}, {"pairs", it->second}});
  }
  return {{"base", fs::absolute(result.base_dir).string()},
          {"new", fs::absolute(result.new_dir).string()},
          {"ops", ops}};
}

void apply_referee_response(CompareResult& result, const json& request, const json& response) {
  std::unordered_map<std::string, std::size_t> asked;
  for (const json& entry : request.at("ops")) asked[entry.at("op").get<std::string>()] = entry.at("pairs").size();
  std::unordered_map<std::string, const json*> answers;
  if (!response.is_object() || !response.contains("ops") || !response["ops"].is_array()) {
    throw Error("referee response: no list of ops");
  }
  for (const json& entry : response["ops"]) answers[entry.value("op", "")] = &entry;
  for (ComparedOp& s : result.ops) {
    if (s.differing == 0) continue;
    RefereeVerdict verdict;
    const auto answer = answers.find(s.op);
    if (!asked.contains(s.op) || answer == answers.end()) {
      verdict.reason = kNoDumps;
    } else {
      const json& a = *answer->second;
      verdict.pairs_asked = asked[s.op];
      verdict.pairs_judged = a.value("pairs_judged", std::size_t{0});
      if (a.contains("closer") && a["closer"].is_string()) verdict.closer = a["closer"].get<std::string>();
      const auto where = fmt::format("referee response for {}", s.op);
      verdict.base_max_rel = optional_number(a, "base_max_rel", where);
      verdict.new_max_rel = optional_number(a, "new_max_rel", where);
      verdict.reason = a.value("reason", "");
    }
    s.referee = std::move(verdict);
  }
}

void referee_float64(CompareResult& result, const std::string& python, unsigned jobs) {
  const json request = referee_request(result);
  json response = {{"ops", json::array()}};
  if (!request["ops"].empty()) {
    const TempDir dir;
    const fs::path request_path = dir.path() / "request.json", response_path = dir.path() / "response.json";
    std::ofstream(request_path) << request.dump();
    const int status = run_engine(choose_python(python, {result.base_dir, result.new_dir}), "ophook._replay",
                                  {"referee", request_path.string(), response_path.string(), "--jobs",
                                   std::to_string(jobs)});
    if (status != 0) throw Error(fmt::format("the float64 referee stopped with status {}", status));
    std::ifstream in(response_path);
    response = json::parse(in, nullptr, false);
    if (response.is_discarded()) throw Error("the float64 referee's response is not JSON");
  }
  apply_referee_response(result, request, response);
}

}  // namespace ophook::cli
