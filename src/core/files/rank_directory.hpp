#pragma once

#include <string>

#include "ophook/files/output_dir.hpp"

namespace ophook::core {

/// Names a child process's output directory after the rank it learned once started
/// (docs/outputs.md, "Where"): pid<PID>/ becomes rank<R>/ beside it. A rank<R>/ already there is
/// replaced only when an earlier run left it — its summary.json names another root pid, or it
/// holds no trace.jsonl — once that run's files are removed as a new run removes them (it must
/// then be empty); never one of this run (a summary.json naming `root_pid`, or a trace.jsonl
/// without summary.json: a process still running, or a killed one). Returns why the directory
/// keeps its name, or "" when renamed. Writer thread only, between batches of files.
std::string name_after_rank(OutputDir& dir, long rank, int root_pid);

}  // namespace ophook::core
