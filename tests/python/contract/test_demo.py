"""scripts/demo.sh, the README's first command, end to end: it exits 0, prints a summary of each
recorded example, and its dumps hold the examples' real values (recomputed here from the recorded
inputs), so the main job keeps working at every commit."""
import os
import subprocess

import numpy as np

from harness import SOURCE_DIR, summary, trace

OUTPUT = SOURCE_DIR / "demo_output"


def records(run):
    return trace(OUTPUT / run)  # each record checked against docs/schema/trace-record.schema.json


def load(run, value):
    return np.load(OUTPUT / run / value["file"])


def array_shapes(args):
    return [a.get("shape") if isinstance(a, dict) else None for a in args]


def test_demo_records_both_examples_with_their_values():
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("OPHOOK_") and k != "LD_PRELOAD"}
    proc = subprocess.run(["bash", str(SOURCE_DIR / "scripts" / "demo.sh")], cwd=SOURCE_DIR,
                          env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    for run in ("numpy_ops", "torch_mlp"):
        assert f"== summary of {OUTPUT / run} ==" in proc.stdout, proc.stdout[-3000:]
        written = summary(OUTPUT / run)
        assert written["totals"]["calls"] == len(records(run)) > 0 and written["totals"]["write_errors"] == 0, written

    # numpy_ops.py: `c = a + b` with b = ones((4, 3)): the dumped output is the dumped a + 1.
    numpy_adds = [r for r in records("numpy_ops")
                  if r["op"] == "numpy.add" and r["level"] == "ufunc"
                  and array_shapes(r["args"]) == [[4, 3], [4, 3]]]
    assert numpy_adds, "no numpy.add of two (4, 3) arrays recorded"
    first = numpy_adds[0]
    a, b = load("numpy_ops", first["args"][0]), load("numpy_ops", first["args"][1])
    np.testing.assert_array_equal(b, np.ones((4, 3)))
    np.testing.assert_array_equal(load("numpy_ops", first["outputs"][0]), a + b)

    # torch_mlp.py: both torch levels recorded, the aten ops nested under the torch calls, the
    # backward pass included; a linear layer's addmm equals bias + x @ weight.T from its dumps.
    torch_records = [r for r in records("torch_mlp") if r["framework"] == "torch"]
    assert {r["level"] for r in torch_records} == {"torch_function", "torch_dispatch"}
    backward = [r for r in torch_records if r["phase"] == "backward"]
    by_seq = {r["seq"]: r for r in torch_records}
    assert backward and all(r["level"] == "torch_dispatch" and by_seq[r["parent"]]["op"] == "torch.Tensor.backward"
                            for r in backward)
    addmm = next(r for r in torch_records if r["op"] == "aten.addmm.default")
    bias, x, weight_t = (load("torch_mlp", arg) for arg in addmm["args"][:3])
    np.testing.assert_allclose(load("torch_mlp", addmm["outputs"][0]), bias + x @ weight_t,
                               rtol=1e-5, atol=1e-5)
