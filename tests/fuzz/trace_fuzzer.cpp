// libFuzzer harness: hostile bytes as a trace.jsonl given to `ophook compare`/`report`
// (cli::read_trace: line splitting, JSON parsing, record conversion). Rejection by ophook::Error
// is the expected outcome.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "memory_file.hpp"
#include "ophook/error.hpp"
#include "read/trace_reader.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static ophook::fuzz::MemoryFile file;
  const std::string path = file.hold(data, size);
  std::vector<std::string> warnings;
  try {
    const ophook::cli::TraceFile trace = ophook::cli::read_trace(path, warnings, 1);
    for (const auto& record : trace.records) {
      for (const auto& array : record.arrays) (void)array.element_count();
    }
  } catch (const ophook::Error&) {
  }
  return 0;
}
