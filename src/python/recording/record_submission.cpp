#include "recording/record_submission.hpp"

#include "python_common.hpp"
#include "recording/device_reads.hpp"

namespace ophook::py {
namespace {

core::RecordPtr& spare_check_record() {
  thread_local core::RecordPtr spare;
  return spare;
}

}  // namespace

void submit_record(core::Recorder& recorder, core::RecordPtr record) {
  if (const auto* reads = device_reads(); reads != nullptr && reads->awaited(*record)) {
    return reads->defer(recorder, std::move(record));
  }
  if (recorder.try_submit(record)) return;
  Py_BEGIN_ALLOW_THREADS recorder.submit(std::move(record));
  Py_END_ALLOW_THREADS
}

core::RecordPtr take_check_record() {
  auto& spare = spare_check_record();
  return spare ? std::move(spare) : core::RecordPool::take();
}

void return_check_record(core::RecordPtr record) noexcept {
  if (const auto* reads = device_reads()) reads->forget(*record);
  record->clear_for_reuse();
  spare_check_record() = std::move(record);
}

}  // namespace ophook::py
