#pragma once
#include "python_common.hpp"

namespace ophook::py {

class ValueCapture;

/// torch values other than tensors, as a call's arguments and results: torch.Size and
/// torch.return_types structseqs as lists, dtypes/layouts/memory formats/qschemes by their repr,
/// storages by their size, dtype and device. Needs `torch` (the imported module); false when it
/// lacks torch.Size. Optional pieces torch lacks fall back to the generic description. GIL
/// required; idempotent.
bool enable_torch_value_capture(PyObject* torch);

/// Encodes `object` into `capture` when it is one of those values; false otherwise. GIL required.
bool capture_torch_non_tensor(ValueCapture& capture, PyObject* object);

/// torch's attribute at a dotted path ("_C.TensorBase"), a new reference held for the life of the
/// process; nullptr (Python error set) when missing.
PyObject* torch_attribute(PyObject* torch, const char* dotted);

}  // namespace ophook::py
