#pragma once
// A monitor.jsonl line as JSON text, written from the line's Python objects in C++: json.dumps
// formats each float by CPython's repr, and a step's line holds hundreds of them.
#include <pybind11/pybind11.h>

namespace ophook::py::monitor {

/// `line` (dicts with str or int keys, lists, tuples, str, int, float, bool, None) as one line of
/// JSON, keys in their order, each float in the fewest digits that read back to it. Raises
/// ValueError for a NaN or an infinity (as json.dumps(allow_nan=False) does) and TypeError for any
/// other object or an int beyond 64 bits (json.dumps then writes the line). GIL required.
pybind11::str json_line(pybind11::handle line);

}  // namespace ophook::py::monitor
