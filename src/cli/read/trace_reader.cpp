#include "read/trace_reader.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <iterator>
#include <limits>
#include <optional>
#include <utility>

#include "ophook/error.hpp"
#include "read/arrays/mapped_file.hpp"
#include "read/json_fields.hpp"
#include "read/parallel_for.hpp"

namespace ophook::cli {

namespace fs = std::filesystem;
using nlohmann::json;

std::uint64_t ArraySpec::element_count() const {
  std::uint64_t count = 1;
  for (std::int64_t dim : shape) count *= static_cast<std::uint64_t>(dim < 0 ? 0 : dim);
  return count;
}

namespace {

std::optional<std::string> optional_string(const json& object, const char* key) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return std::nullopt;
  if (it->is_string()) return it->get<std::string>();
  return it->dump();
}

std::int64_t integer_field(const json& object, const char* key, std::int64_t fallback) {
  auto it = object.find(key);
  if (it == object.end() || !it->is_number()) return fallback;
  if (it->is_number_float()) {
    // Converting a double outside int64's range is undefined behaviour (found by fuzz_trace).
    const double value = it->get<double>();
    constexpr double kLimit = 9223372036854775808.0;  // 2^63
    return std::isfinite(value) && value >= -kLimit && value < kLimit ? static_cast<std::int64_t>(value) : fallback;
  }
  return it->get<std::int64_t>();
}


StatsSpec stats_from_json(const json& value, const std::string& path) {
  if (!value.is_object()) {
    throw Error(fmt::format("value {}: \"stats\" is not an object or null", path));
  }
  StatsSpec stats;
  const auto where = fmt::format("value {}: stats", path);
  stats.min = optional_number(value, "min", where);
  stats.max = optional_number(value, "max", where);
  stats.mean = optional_number(value, "mean", where);
  stats.std = optional_number(value, "std", where);
  stats.nan = static_cast<std::uint64_t>(integer_field(value, "nan", 0));
  stats.inf = static_cast<std::uint64_t>(integer_field(value, "inf", 0));
  const std::string digest = optional_string(value, "xxh64").value_or("");
  const auto [end, ec] =
      std::from_chars(digest.data(), digest.data() + digest.size(), stats.xxh64, 16);
  stats.has_xxh64 = ec == std::errc() && end == digest.data() + digest.size() && !digest.empty();
  return stats;
}

ArraySpec array_from_json(const json& value, std::string path) {
  ArraySpec array;
  array.path = std::move(path);
  auto shape = value.find("shape");
  if (shape == value.end() || !shape->is_array()) {
    throw Error(fmt::format("array value {} has no \"shape\" list", array.path));
  }
  for (const json& dim : *shape) {
    if (!dim.is_number_integer()) {
      throw Error(
          fmt::format("array value {} has a non-integer dimension in \"shape\"", array.path));
    }
    array.shape.push_back(dim.get<std::int64_t>());
  }
  array.dtype = optional_string(value, "dtype").value_or("");
  array.saved_dtype = optional_string(value, "saved_dtype").value_or("");
  array.device = optional_string(value, "device").value_or("");
  array.file = optional_string(value, "file").value_or("");
  auto stats = value.find("stats");
  if (stats != value.end() && !stats->is_null()) {
    array.stats = stats_from_json(*stats, array.path);
  }
  return array;
}

/// Walks one value in order, collecting arrays and plain leaves; containers recurse.
void flatten(const json& value, const std::string& path, TraceRecord& record) {
  if (value.is_array()) {
    for (std::size_t i = 0; i < value.size(); ++i) {
      flatten(value[i], fmt::format("{}[{}]", path, i), record);
    }
  } else if (value.is_object()) {
    auto kind = value.find("kind");
    if (kind == value.end()) {
      for (const auto& [key, item] : value.items()) flatten(item, fmt::format("{}.{}", path, key), record);
    } else if (*kind == "array") {
      record.arrays.push_back(array_from_json(value, path));
    } else if (*kind == "float" && value.contains("repr")) {
      // Non-finite Python floats: "nan", "inf", "-inf".
      const std::string repr = value["repr"].is_string() ? value["repr"].get<std::string>() : "";
      const double number = repr == "inf"    ? std::numeric_limits<double>::infinity()
                            : repr == "-inf" ? -std::numeric_limits<double>::infinity()
                                             : std::numeric_limits<double>::quiet_NaN();
      record.scalars.push_back({path, number});
    }
    // Other kinds carry only a repr (often with an address): nothing comparable.
  } else {
    record.scalars.push_back({path, value});
  }
}

void flatten_field(const json& line, const char* key, TraceRecord& record) {
  auto it = line.find(key);
  if (it == line.end() || it->is_null()) return;
  if (it->is_object()) {
    for (const auto& [name, item] : it->items()) {
      flatten(item, std::string(key) + "." + name, record);
    }
  } else if (it->is_array()) {
    flatten(*it, key, record);
  } else {
    throw Error(fmt::format("\"{}\" is neither a list nor an object", key));
  }
}

}  // namespace

TraceRecord record_from_json(const json& line) {
  if (!line.is_object()) {
    throw Error("not a JSON object");
  }
  auto seq = line.find("seq");
  if (seq == line.end() || !seq->is_number_integer()) {
    throw Error("missing or non-integer \"seq\"");
  }
  auto op = line.find("op");
  if (op == line.end() || !op->is_string()) {
    throw Error("missing or non-string \"op\"");
  }
  TraceRecord record;
  record.seq = seq->get<std::int64_t>();
  record.op = op->get<std::string>();
  record.framework = optional_string(line, "framework").value_or("");
  record.level = optional_string(line, "level").value_or("");
  record.error = optional_string(line, "error");
  record.source = optional_string(line, "source");
  record.module = optional_string(line, "module");
  record.phase = optional_string(line, "phase");
  record.t_ns = integer_field(line, "t_ns", 0);
  record.dur_ns = integer_field(line, "dur_ns", 0);
  record.pid = integer_field(line, "pid", 0);
  record.tid = integer_field(line, "tid", 0);
  record.depth = integer_field(line, "depth", 0);
  if (auto parent = line.find("parent"); parent != line.end() && parent->is_number_integer()) {
    record.parent = parent->get<std::int64_t>();
  }
  record.step = integer_field(line, "step", 0);
  auto overridden = line.find("overridden");
  record.overridden =
      overridden != line.end() && overridden->is_boolean() && overridden->get<bool>();
  for (auto [key, list] : {std::pair{"sources", &record.sources}, std::pair{"modules", &record.modules}}) {
    if (auto items = line.find(key); items != line.end() && items->is_array()) {
      for (const auto& item : *items) {
        if (item.is_string()) list->push_back(item.get<std::string>());
      }
    }
  }
  if (auto collective = line.find("collective"); collective != line.end() && collective->is_object()) {
    const auto received = collective->find("received_nonfinite");
    record.collective = CollectiveSpec{optional_string(*collective, "group").value_or(""),
                                       integer_field(*collective, "group_seq", 0),
                                       received != collective->end() && received->is_boolean() && received->get<bool>()};
  }
  flatten_field(line, "args", record);
  flatten_field(line, "kwargs", record);
  flatten_field(line, "outputs", record);
  return record;
}

namespace {

/// One non-blank line of the file.
struct Line {
  std::size_t number;  // 1-based
  std::string_view text;
};

std::vector<Line> split_lines(std::span<const std::byte> bytes) {
  const std::string_view all(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  std::vector<Line> lines;
  std::size_t pos = 0, number = 0;
  while (pos < all.size()) {
    std::size_t end = all.find('\n', pos);
    if (end == std::string_view::npos) end = all.size();
    ++number;
    std::string_view text = all.substr(pos, end - pos);
    if (!text.empty() && text.back() == '\r') text.remove_suffix(1);
    if (text.find_first_not_of(" \t") != std::string_view::npos) lines.push_back({number, text});
    pos = end + 1;
  }
  return lines;
}

/// The records of a run of lines, or where and why the first bad line of it failed.
struct Chunk {
  std::vector<TraceRecord> records;
  std::size_t bad_line = 0;  // index into the lines; meaningful when !error.empty()
  bool bad_json = false;     // the line is not JSON at all (a cut line), as opposed to not a record
  std::string error;
};

void parse_chunk(const std::vector<Line>& lines, std::size_t first, std::size_t last,
                 Chunk& chunk) {
  chunk.records.reserve(last - first);
  for (std::size_t i = first; i < last; ++i) {
    json parsed = json::parse(lines[i].text, nullptr, /*allow_exceptions=*/false);
    if (parsed.is_discarded()) {
      const std::string_view text = lines[i].text;
      chunk.error =
          "not valid JSON: " + std::string(text.substr(0, 60)) + (text.size() > 60 ? "..." : "");
      chunk.bad_json = true;
      chunk.bad_line = i;
      return;
    }
    try {
      chunk.records.push_back(record_from_json(parsed));
    } catch (const std::exception& e) {
      chunk.error = e.what();
      chunk.bad_line = i;
      return;
    }
    chunk.records.back().line = lines[i].number;
  }
}

}  // namespace

TraceFile read_trace(const fs::path& path, std::vector<std::string>& warnings, unsigned threads) {
  std::error_code ec;
  if (!fs::exists(path, ec)) {
    throw Error(fmt::format("{}: not found", path.string()));
  }
  if (fs::is_directory(path, ec)) {
    throw Error(fmt::format("{}: is a directory, expected a trace.jsonl file", path.string()));
  }
  const MappedFile file(path);
  const std::vector<Line> lines = split_lines(file.bytes());
  constexpr std::size_t kChunkLines = 2048;
  std::vector<Chunk> chunks((lines.size() + kChunkLines - 1) / kChunkLines);
  parallel_for(chunks.size(), threads, [&](std::size_t c) {
    parse_chunk(lines, c * kChunkLines, std::min(lines.size(), (c + 1) * kChunkLines), chunks[c]);
  });
  TraceFile trace;
  trace.path = path;
  trace.records.reserve(lines.size());
  for (Chunk& chunk : chunks) {
    std::move(chunk.records.begin(), chunk.records.end(), std::back_inserter(trace.records));
    if (chunk.error.empty()) continue;
    const Line& bad = lines[chunk.bad_line];
    // A killed process may leave its last line cut short: skip it, say so.
    if (chunk.bad_json && chunk.bad_line + 1 == lines.size()) {
      warnings.push_back(fmt::format("{}: line {} (the last line) is incomplete; ignored",
                                     path.string(), bad.number));
      break;
    }
    throw Error(fmt::format("{}: line {}: {}", path.string(), bad.number, chunk.error));
  }
  return trace;
}

}  // namespace ophook::cli
