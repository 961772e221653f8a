"""Comparing what an op returned with what was recorded (or with a reference run), value by
value in the order the recorder wrote them: `outputs` is the returned tuple's items, or the one
returned value."""
import os
import re

import numpy as np

from . import arrays, reference
from .values import Unreadable, pointer_label

ARRAY_TYPES_BY_MODULE = ("numpy", "torch")
MAX_REPR = 200  # the recorder's cut
ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def as_outputs(result):
    """A call's result as the recorder lists it."""
    return list(result) if type(result) is tuple else [result]


def is_array(value):
    return type(value).__module__.split(".")[0] in ARRAY_TYPES_BY_MODULE and hasattr(value, "shape") \
        and hasattr(value, "dtype") and not isinstance(value, type)


def dtype_name(value):
    """'float32', 'bfloat16', ... of an ndarray, NumPy scalar or tensor."""
    name = str(value.dtype)
    return name[len("torch."):] if name.startswith("torch.") else value.dtype.name


class Tally:
    """Differences and the largest errors found over a call's values."""

    def __init__(self):
        self.differences = []
        self.unavailable = []  # recorded arrays without a file: not compared
        self.max_abs = None
        self.max_rel = None
        self.mean_rel = None
        self.threshold = None
        self.arrays = 0
        self.judge_plain_values = True  # values that are not arrays must be equal

    def note_errors(self, max_abs, max_rel, mean_rel=None, threshold=None):
        self.arrays += 1
        for name, value in (("max_abs", max_abs), ("max_rel", max_rel), ("mean_rel", mean_rel)):
            if value is not None:
                current = getattr(self, name)
                setattr(self, name, value if current is None else max(current, value))
        if threshold is not None:
            self.threshold = threshold if self.threshold is None else min(self.threshold, threshold)

    def differ(self, pointer, why):
        self.differences.append("%s: %s" % (pointer_label(pointer), why))


def compare_recorded(specs, produced, run_dir, tally, judge):
    """Walks the recorded `specs` beside the `produced` values. `judge(recorded_array, produced,
    spec, pointer)` compares one array (files are read from `run_dir`)."""
    _walk(specs, produced, "/outputs", tally,
          lambda spec, value, pointer: judge(read_recorded(run_dir, spec, pointer), value, spec, pointer))


def compare_produced(default, golden, tally):
    """Walks two produced results side by side (--random: the default run against the reference),
    judging arrays by the reference thresholds of the default run's dtype."""
    if isinstance(default, (list, tuple)) and isinstance(golden, (list, tuple)) and len(default) == len(golden):
        for d, g in zip(default, golden):
            compare_produced(d, g, tally)
        return
    if is_array(default) and is_array(golden):
        error = reference.reference_error(arrays.saved_form(default), arrays.saved_form(golden), dtype_name(default))
        tally.note_errors(error["max_abs"], error["max_rel"], error["mean_rel"], error["threshold"])
        if not error["passed"]:
            tally.differ("/outputs", error["why"])


def read_recorded(run_dir, spec, pointer):
    """The recorded array of an output value, from the file its own record names."""
    name = spec.get("file")
    try:
        data = np.load(os.path.join(run_dir, name), allow_pickle=False)
        return data if data.dtype.isnative else data.astype(data.dtype.newbyteorder("="))
    except (OSError, ValueError, EOFError) as error:
        raise Unreadable("%s: %s: %s" % (pointer_label(pointer), name, error))


def _walk(spec, value, pointer, tally, on_array):
    if isinstance(spec, list):
        if not isinstance(value, (list, tuple)) or len(value) != len(spec):
            return tally.differ(pointer, "returned %s, recorded a sequence of %d" % (_describe(value), len(spec)))
        for i, (s, v) in enumerate(zip(spec, value)):
            _walk(s, v, "%s/%d" % (pointer, i), tally, on_array)
        return None
    if isinstance(spec, dict) and spec.get("kind") == "array":
        if not is_array(value):
            return tally.differ(pointer, "returned %s, recorded an array" % _describe(value))
        if not spec.get("file"):
            tally.unavailable.append("%s has no file (%s)" % (pointer_label(pointer), spec.get("reason") or "no data"))
            return None
        return on_array(spec, value, pointer)
    if not tally.judge_plain_values:
        return None
    if isinstance(spec, dict):  # {"kind", "repr"}: the repr, cut at 200 characters as recorded
        text, recorded = repr(value), spec.get("repr", "")
        if ADDRESS.search(recorded):  # an object's identity, not a value
            tally.unavailable.append("%s is an object (%s), not a value" % (pointer_label(pointer), spec.get("kind")))
            return None
        if not (text == recorded or (len(text) > MAX_REPR and text.startswith(recorded))):
            return tally.differ(pointer, "returned %s, recorded %s" % (text[:80], recorded))
        return None
    numbers = all(type(v) in (int, float) for v in (spec, value))
    if type(value) is not type(spec) and not numbers:
        return tally.differ(pointer, "returned %s, recorded %r" % (_describe(value), spec))
    if value != spec and not (value != value and spec != spec):  # NaN matches NaN
        return tally.differ(pointer, "returned %r, recorded %r" % (value, spec))
    return None


def _describe(value):
    if is_array(value):
        return "an array %s %s" % (dtype_name(value), list(value.shape))
    return type(value).__name__


def exact_judge(tally):
    """Bit for bit, NaN matching NaN."""
    def judge(recorded, value, spec, pointer):
        same, max_abs, max_rel, why = arrays.compare_exact(arrays.saved_form(value), recorded)
        tally.note_errors(max_abs, max_rel)
        if not same:
            tally.differ(pointer, why)
    return judge


def reference_judge(tally):
    """The recorded array against the reference's value, by the thresholds of its recorded dtype."""
    def judge(recorded, value, spec, pointer):
        error = reference.reference_error(recorded, arrays.saved_form(value), spec.get("dtype"))
        tally.note_errors(error["max_abs"], error["max_rel"], error["mean_rel"], error["threshold"])
        if not error["passed"]:
            tally.differ(pointer, error["why"])
    return judge
