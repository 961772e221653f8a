"""The NumPy baseline of `ophook compare`: what a user would write to compare two dump
directories. Pairs the records of BASE and NEW by position (the benchmark's runs have the same call
sequence), memory-maps every pair of .npy files (np.load(mmap_mode="r")) and computes compare's
metrics: shape/dtype mismatch, NaN/Inf pattern mismatch, max abs error, max relative error (against
BASE), cosine similarity, allclose(rtol, atol) element count; identical bytes are recognised first.
Arrays are spread over a thread pool (NumPy releases the GIL in its kernels), so both cores work
as they do for ophook.

    numpy_compare.py BASE NEW [--rtol R] [--atol A] [--json FILE] [--threads N]

Exit 0 when everything is within tolerance, 1 when something differs (as ophook compare)."""
import argparse
import json
import os
import sys
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor

import numpy as np


def read_trace(run_dir):
    with open(os.path.join(run_dir, "trace.jsonl")) as f:
        return [json.loads(line) for line in f]


def array_values(record):
    """The array values of a record with a file, in compare's order: args, kwargs, outputs."""
    values = list(record["args"]) + list(record["kwargs"].values()) + list(record["outputs"])
    return [v for v in values if isinstance(v, dict) and v.get("kind") == "array" and v.get("file")]


def compare_arrays(path_a, path_b, rtol, atol):
    a, b = np.load(path_a, mmap_mode="r"), np.load(path_b, mmap_mode="r")
    result = {"shape_mismatch": a.shape != b.shape, "dtype_mismatch": a.dtype != b.dtype,
              "not_close": 0, "nonfinite": 0, "max_abs": 0.0, "max_rel": 0.0, "cosine": 1.0}
    if result["shape_mismatch"]:
        return result
    if a.dtype == b.dtype and np.array_equal(a.view(np.uint8), b.view(np.uint8)):
        return result
    x, y = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    finite = np.isfinite(x) & np.isfinite(y)
    same_nonfinite = (np.isnan(x) & np.isnan(y)) | (x == y)
    result["nonfinite"] = int(np.count_nonzero(~finite & ~same_nonfinite))
    x, y = x[finite], y[finite]
    diff = np.abs(x - y)
    magnitude = np.abs(x)
    if diff.size:
        result["max_abs"] = float(diff.max())
        differing = diff > 0
        with np.errstate(divide="ignore"):
            result["max_rel"] = float((diff[differing] / magnitude[differing]).max(initial=0.0))
        norm_x, norm_y = np.linalg.norm(x), np.linalg.norm(y)
        if norm_x == 0 or norm_y == 0:
            result["cosine"] = 1.0 if norm_x == norm_y else 0.0
        else:
            result["cosine"] = float(np.clip(np.dot(x, y) / (norm_x * norm_y), -1.0, 1.0))
    else:
        result["cosine"] = float("nan")
    result["not_close"] = int(np.count_nonzero(~(diff <= atol + rtol * magnitude))) + result["nonfinite"]
    return result


def compare_runs(base_dir, new_dir, rtol, atol, threads):
    base, new = read_trace(base_dir), read_trace(new_dir)
    if [r["op"] for r in base] != [r["op"] for r in new]:
        raise SystemExit("the runs' call sequences differ; this baseline pairs by position only")
    jobs = []  # (pair index, base file, new file)
    for pair, (rb, rn) in enumerate(zip(base, new)):
        for vb, vn in zip(array_values(rb), array_values(rn)):
            jobs.append((pair, os.path.join(base_dir, vb["file"]), os.path.join(new_dir, vn["file"])))
    with ThreadPoolExecutor(threads) as pool:
        results = list(pool.map(lambda job: compare_arrays(job[1], job[2], rtol, atol), jobs))

    ops = defaultdict(lambda: {"pairs": 0, "differing": 0, "max_abs_err": 0.0, "max_rel_err": 0.0,
                               "min_cosine": 1.0, "shape_mismatches": 0, "dtype_mismatches": 0,
                               "nonfinite_mismatches": 0})
    differing_pairs = set()
    for (pair, _, _), r in zip(jobs, results):
        s = ops[base[pair]["op"]]
        if r["not_close"] or r["shape_mismatch"] or r["dtype_mismatch"]:
            differing_pairs.add(pair)
        s["max_abs_err"] = max(s["max_abs_err"], r["max_abs"])
        s["max_rel_err"] = max(s["max_rel_err"], r["max_rel"])
        s["min_cosine"] = min(s["min_cosine"], r["cosine"])
        s["shape_mismatches"] += int(r["shape_mismatch"])
        s["dtype_mismatches"] += int(r["dtype_mismatch"])
        s["nonfinite_mismatches"] += r["nonfinite"]
    for pair, record in enumerate(base):
        ops[record["op"]]["pairs"] += 1
        ops[record["op"]]["differing"] += int(pair in differing_pairs)
    return [dict(op=op, **s) for op, s in ops.items()]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("base")
    parser.add_argument("new")
    parser.add_argument("--rtol", type=float, default=1e-5)
    parser.add_argument("--atol", type=float, default=1e-8)
    parser.add_argument("--json", help="write the per-op result to FILE")
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    args = parser.parse_args()
    ops = compare_runs(args.base, args.new, args.rtol, args.atol, args.threads)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"ops": ops}, f)
    for s in ops:
        print("%-24s pairs %6d  differing %6d  max abs %.3e  max rel %.3e  min cosine %.6f"
              % (s["op"], s["pairs"], s["differing"], s["max_abs_err"], s["max_rel_err"],
                 s["min_cosine"]))
    return 1 if any(s["differing"] for s in ops) else 0


if __name__ == "__main__":
    sys.exit(main())
