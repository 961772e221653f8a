"""`ophook replay DIR --emit-script SEQ`: a standalone Python script that loads one call's recorded
inputs by absolute path, calls the op and compares the result with the recorded outputs bit for
bit — for a bug report, runnable without ophook."""
import inspect
import os

from . import arrays, ops
from .trace_file import InputError
from .values import CannotRebuild, SourceBuilder, Unreadable, array_file, python_type_of, walk_call

_TEMPLATE = '''#!/usr/bin/env python3
"""Replays call {seq} ({op}) of the ophook run {run}{where}.

Loads the call's inputs from the run's .npy files, calls the op and compares its result with the
recorded outputs bit for bit (a NaN matches any NaN). Exit status 0 when all match, 1 otherwise.
Written by `ophook replay --emit-script {seq}`; needs {needs}, not ophook."""
import sys

import numpy as np
{torch_import}

{helpers}

args = {args}
kwargs = {kwargs}
result = {function}(*args, **kwargs){recorded_error}
outputs = list(result) if type(result) is tuple else [result]

# (where the value is in the result, its value, the recorded file)
array_checks = [
{array_checks}
]
# (where, its value, the recorded value) for plain values
value_checks = [
{value_checks}
]
failed = False
for where, value, path in array_checks:
    same, max_abs, max_rel, why = compare_exact(saved_form(value), np.load(path, allow_pickle=False))
    print("%s: %s" % (where, "match" if same else "mismatch: %s (max abs %s, max rel %s)" % (why, max_abs, max_rel)))
    failed = failed or not same
for where, value, recorded in value_checks:
    same = type(value) is type(recorded) and (value == recorded or value != value and recorded != recorded)
    print("%s: %s" % (where, "match" if same else "mismatch: %r, recorded %r" % (value, recorded)))
    failed = failed or not same
if not array_checks and not value_checks:
    print("no recorded output to compare with")
sys.exit(1 if failed else 0)
'''


# The functions of arrays.py a script needs, copied into it.
HELPERS = (arrays.load_array, arrays.layout_extent, arrays.broadcast_dims, arrays.numpy_layout, arrays.torch_layout,
           arrays.saved_form, arrays.compare_exact)


def emit(run_dir, record):
    """The script's text. Raises InputError when the call cannot be replayed."""
    run_dir = os.path.abspath(run_dir)
    reason = ops.skip_reason(record)
    if reason:
        raise InputError("seq %s (%s) cannot be replayed: %s" % (record["seq"], record["op"], reason))
    framework = record.get("framework")

    def load(spec, pointer):
        path = os.path.join(run_dir, array_file(spec, pointer))
        return "load_array(%r, %r, %r, %r, %r, %r)" % (path, spec.get("dtype"), python_type_of(spec, framework),
                                                       spec.get("device") or "cpu", spec.get("strides"),
                                                       bool(spec.get("requires_grad")))

    try:
        args, kwargs = walk_call(record, SourceBuilder(load))
    except (CannotRebuild, Unreadable) as why:
        raise InputError("seq %s (%s) cannot be replayed: %s" % (record["seq"], record["op"], why))
    uses_torch = "torch." in "".join(args) + "".join(kwargs.values()) + _function_source(record["op"])
    outputs = list(_outputs(record.get("outputs") or []))
    array_checks = ["    (%r, %s, %r)," % (where, where, os.path.join(run_dir, spec["file"]))
                    for where, spec in outputs if isinstance(spec, dict)]
    value_checks = ["    (%r, %s, %s)," % (where, where, SourceBuilder(None).scalar(spec))
                    for where, spec in outputs if not isinstance(spec, dict)]
    error = record.get("error")
    return _TEMPLATE.format(
        seq=record["seq"], op=record["op"], run=run_dir,
        where=", recorded at %s" % record["source"] if record.get("source") else "",
        needs="numpy and torch" if uses_torch else "numpy",
        array_checks="\n".join(array_checks), value_checks="\n".join(value_checks),
        torch_import="import torch" if uses_torch else "",
        helpers="\n\n\n".join(inspect.getsource(f).strip() for f in HELPERS),
        args="[%s]" % ", ".join(args),
        kwargs="{%s}" % ", ".join("%r: %s" % item for item in kwargs.items()),
        function=_function_source(record["op"]),
        recorded_error="  # recorded: raised %s" % error.splitlines()[0][:200] if error else "")


def _function_source(op):
    if op.startswith(("aten.", "prims.")):
        return "torch.ops." + op
    if op.startswith("numpy."):
        return "np." + op[len("numpy."):]
    return op


def _outputs(specs, where="outputs"):
    """(the expression reaching it, spec) of every recorded output array that has a file, and of
    every plain JSON value (int, float, bool, None, str)."""
    for i, spec in enumerate(specs):
        here = "%s[%d]" % (where, i)
        if isinstance(spec, list):
            yield from _outputs(spec, here)
        elif isinstance(spec, dict):
            if spec.get("kind") == "array" and spec.get("file"):
                yield here, spec
        else:
            yield here, spec
