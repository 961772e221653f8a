"""The baseline of the replay-throughput figure: what a user would write to re-run recorded calls
without ophook's engine, in one process: for each record of DIR/trace.jsonl, load the inputs with
np.load (tensors for torch calls), find the op by its dotted name, call it with the positional
arrays and the plain keyword values, and compare each output with np.array_equal.

    numpy_replay.py DIR        prints "<replayed> <matched>"
"""
import importlib
import json
import os
import sys

import numpy as np


def find(op):
    parts = op.split(".")
    obj = importlib.import_module(parts[0])
    for part in parts[1:]:
        obj = getattr(obj, part)
    return obj


def main():
    run = sys.argv[1]
    replayed = matched = 0
    for line in open(os.path.join(run, "trace.jsonl")):
        record = json.loads(line)
        arrays = [v for v in record["args"] if isinstance(v, dict) and v.get("kind") == "array"]
        if len(arrays) != len(record["args"]) or not all(a["file"] for a in arrays + record["outputs"]):
            continue
        torch_call = record["framework"] == "torch"
        args = [np.load(os.path.join(run, a["file"])) for a in arrays]
        if torch_call:
            import torch
            args = [a if spec.get("python_type") == "numpy.ndarray" else torch.from_numpy(a)
                    for a, spec in zip(args, arrays)]
        result = find(record["op"])(*args, **{k: v for k, v in record["kwargs"].items() if not isinstance(v, dict)})
        result = result.numpy() if hasattr(result, "numpy") else np.asarray(result)
        replayed += 1
        matched += np.array_equal(result, np.load(os.path.join(run, record["outputs"][0]["file"])))
    print(replayed, matched)


if __name__ == "__main__":
    main()
