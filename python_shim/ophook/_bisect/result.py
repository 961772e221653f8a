"""A run's result, as bisect judges it: the floating outputs of the run's last outermost call that
has any (a loss, logits), read from the files the ring wrote at exit; and how far one result lies
from another."""
import os

import numpy as np

from .._replay.arrays import load_array
from .groups import arrays_in

FLOAT_DTYPES = ("float16", "bfloat16", "float32", "float64")


class NoResult(Exception):
    """The run recorded no call with floating outputs whose files exist."""


def result_call(records):
    """The last outermost record with a floating array output that has a file."""
    for record in sorted(records, key=lambda r: r["seq"], reverse=True):
        if record.get("parent") is None and any(
                a.get("dtype") in FLOAT_DTYPES and a.get("file") for a in arrays_in(record.get("outputs"))):
            return record
    raise NoResult("no outermost call with a floating output was recorded with its values")


def read_result(run_dir, records):
    """{"op", "seq", "source", "dtype", "arrays": [float64 arrays]} of the run's result call."""
    record = result_call(records)
    outputs = [a for a in arrays_in(record.get("outputs")) if a.get("dtype") in FLOAT_DTYPES and a.get("file")]
    arrays = [np.asarray(load_array(os.path.join(run_dir, a["file"]), a.get("saved_dtype") or a["dtype"],
                                    "numpy.ndarray"), dtype=np.float64) for a in outputs]
    return {"op": record["op"], "seq": record["seq"], "source": record.get("source"), "dtype": outputs[0]["dtype"],
            "arrays": arrays}


def relative_error(result, reference):
    """max |result - reference| / max |reference| over the outputs (the reference's finite
    elements scale it); a NaN or Inf where the reference has another value, or another shape, is
    inf."""
    if len(result["arrays"]) != len(reference["arrays"]):
        return float("inf")
    worst = 0.0
    for actual, expected in zip(result["arrays"], reference["arrays"]):
        if actual.shape != expected.shape:
            return float("inf")
        differ = ~((actual == expected) | (np.isnan(actual) & np.isnan(expected)))
        if not differ.any():
            continue
        if not (np.isfinite(actual[differ]).all() and np.isfinite(expected[differ]).all()):
            return float("inf")
        finite = np.abs(expected[np.isfinite(expected)])
        scale = float(finite.max()) if finite.size else 0.0
        difference = float(np.abs(actual[differ] - expected[differ]).max())
        worst = max(worst, difference / scale if scale > 0 else float("inf"))
    return worst
