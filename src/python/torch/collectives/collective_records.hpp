#pragma once
#include <cstdint>
#include <string>

#include "python_common.hpp"

/// A collective's record from its issue to its completion (level collective; docs/ranks.md): its
/// inputs read as it is issued, its outputs when its work completes — on the thread that completes
/// it, for an asynchronous one — then judged (OPHOOK_NAN: outputs holding NaN/Inf its inputs did
/// not were received from another rank, never made here) and submitted. The policy (which ops,
/// which arguments, the groups' facts) is python_shim/ophook/_collectives/'s. GIL required.
namespace ophook::py::collectives {

/// The op id of collective `name` ("c10d.allreduce_"), registered at level collective.
std::uint32_t op_id(const std::string& name);

/// Opens the record of a call of `op_id` with `values` (its arguments as recorded: tensors read
/// now) on the group `group` ("0"), whose members are `ranks_json` ("[0,1]"), as its `group_seq`-th
/// collective, with peer `peer` (a global rank, -1 for none). Returns a token for complete(), or
/// None (a new reference) when this call is not recorded.
PyObject* begin(std::uint32_t op_id, PyObject* values, const std::string& group, const std::string& ranks_json,
                std::uint64_t group_seq, std::int64_t peer);

/// Closes the record of `token`: `outputs` (a tuple of values, read now; None: none) and, when the
/// call raised, `error` (the exception, else None); `async_op`: the call was issued asynchronously
/// (its caller went on before its work completed). Submits the record.
void complete(PyObject* token, PyObject* outputs, PyObject* error, bool async_op);

/// The records still open (works not completed), submitted without their outputs and marked not
/// completed: the run ends. A recorder exit hook.
void submit_open_before_exit() noexcept;

}  // namespace ophook::py::collectives
