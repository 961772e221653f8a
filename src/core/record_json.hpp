#pragma once
#include <fmt/format.h>

#include <string>
#include <vector>

#include "array_outcome.hpp"
#include "ophook/record.hpp"

namespace ophook::core {

class Recorder;

/// Appends the trace.jsonl object of one call (CONTRACT.md section 4, without the newline), each
/// array's file and stats taken from `outcomes` (indexed like record.arrays). Writer thread only.
void append_record_json(fmt::memory_buffer& out, const CallRecord& record, const Recorder& recorder,
                        const std::vector<ArrayOutcome>& outcomes);

/// "file.py:LINE:function", or "" when the record has no source.
std::string source_text(const CallRecord& record, const Recorder& recorder);

}  // namespace ophook::core
