"""docs/schema/: the published JSON Schemas of a trace.jsonl record and of summary.json.

Every record and summary the suite reads through the harness's trace()/summary() (and its
consistent_records()) is checked against them, so they cannot drift from the code. Here: the
schemas are valid JSON Schema 2020-12 that the reference implementation (jsonschema, as
docs/outputs.md shows) accepts as the suite's fast validator does; they are strict where drift
would hide (a new field, a missing one, a level or phase outside the contract's); summary.json's
`config` has exactly the settings table's fields; and every program in examples/ has its outputs
checked by some test."""
import copy
import subprocess
import sys

import jsonschema
import jsonschema_rs
import pytest

from harness import EXAMPLES, SHIM_DIR, SOURCE_DIR, check_record, check_schema, clean_env, run_script, schema, \
    summary, trace
from test_examples_under_levels import EXAMPLES_RUN

NAMES = ("trace-record", "summary")

# The tests that run each example and read its outputs through the validating readers.
EXAMPLE_CHECKED_BY = {
    **{name: "contract/test_examples_under_levels.py" for name in EXAMPLES_RUN},
    "api_tracer.py": "torch/test_torch_capture.py::test_api_tracer_example_without_preload",
    "hijack_mm.py": "torch/test_torch_nan_and_overrides.py::test_hijack_mm_example",
    "rules_numpy_mm.py": "torch/test_torch_nan_and_overrides.py::test_hijack_mm_example (its rules file)",
    "ci_regression.sh": "cli/test_ci_regression.py",
    "run_numpy_ops.sh": "contract/test_schemas.py::test_run_numpy_ops_example_outputs_match_the_schemas",
}

MIXED = """
import numpy as np, torch
x = torch.ones(2, 3, requires_grad=True)
y = torch.nn.functional.linear(x, torch.eye(3)).sum()
y.backward()
np.add(np.arange(3.0), [1, 2, 3], out=np.empty(3))
try:
    np.add(np.ones(2), np.ones(3))
except ValueError:
    pass
np.sqrt(np.array([-1.0, 4.0]))
"""


@pytest.fixture(scope="module")
def mixed_run(tmp_path_factory):
    """A run with NumPy and aten ops (forward and backward), a call that raised and a NaN."""
    cwd = tmp_path_factory.mktemp("mixed")
    run_script(cwd, MIXED, levels="numpy,torch_dispatch", mode="dump")
    return cwd / "out"


@pytest.mark.parametrize("name", NAMES)
def test_schema_is_valid_json_schema_2020_12(name):
    jsonschema.Draft202012Validator.check_schema(schema(name))
    assert schema(name)["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    jsonschema_rs.meta.validate(schema(name))


def test_reference_implementation_agrees(mixed_run):
    """What the suite's fast validator accepts, jsonschema (the one the docs show) accepts too."""
    records = trace(mixed_run)
    assert {r["framework"] for r in records} == {"numpy", "torch"}
    assert any(r["error"] for r in records) and any(r["phase"] == "backward" for r in records)
    validator = jsonschema.Draft202012Validator(schema("trace-record"))
    for record in records:
        validator.validate(record)
    jsonschema.Draft202012Validator(schema("summary")).validate(summary(mixed_run))


def mutations():
    """(what, change) pairs: each change makes a valid record invalid."""
    def array_value(record):
        return next(v for v in record["args"] if isinstance(v, dict) and v.get("kind") == "array")

    return [
        ("an unknown field", lambda r: r.update(colour="red")),
        ("no parent", lambda r: r.pop("parent")),
        ("no step", lambda r: r.pop("step")),
        ("a level outside the contract's", lambda r: r.update(level="ufunc_call")),
        ("a phase on a NumPy call", lambda r: r.update(phase="forward")),
        ("a negative seq", lambda r: r.update(seq=-1)),
        ("outputs on a call that raised", lambda r: r.update(error="ValueError: x")),
        ("an unknown field of an array value", lambda r: array_value(r).update(colour="red")),
        ("an unknown statistic", lambda r: array_value(r)["stats"].update(median=0.0)),
        ("a short digest", lambda r: array_value(r)["stats"].update(xxh64="abc")),
        ("a file name outside the contract's", lambda r: array_value(r).update(file="a.npy")),
        ("an object value without repr", lambda r: r["args"].append({"kind": "slice"})),
        ("a repr over 200 characters", lambda r: r["args"].append({"kind": "slice", "repr": "x" * 201})),
    ]


@pytest.mark.parametrize("what,change", mutations(), ids=[m[0] for m in mutations()])
def test_record_schema_catches_drift(mixed_run, what, change):
    record = next(r for r in trace(mixed_run) if r["op"] == "numpy.add" and r["error"] is None)
    changed = copy.deepcopy(record)
    change(changed)
    with pytest.raises(AssertionError, match="does not match docs/schema/trace-record.schema.json"):
        check_record(changed)


@pytest.mark.parametrize("what,change", [
    ("an unknown section", lambda s: s.update(colour="red")),
    ("an unknown total", lambda s: s["totals"].update(colour=1)),
    ("no calls total", lambda s: s["totals"].pop("calls")),
    ("an unknown configuration field", lambda s: s["config"].update(colour="red")),
    ("a mode outside the contract's", lambda s: s["config"].update(mode="full")),
    ("an op without level", lambda s: next(iter(s["ops"].values())).pop("level")),
], ids=lambda v: v if isinstance(v, str) else "")
def test_summary_schema_catches_drift(mixed_run, what, change):
    changed = copy.deepcopy(summary(mixed_run))
    change(changed)
    with pytest.raises(AssertionError, match="does not match docs/schema/summary.schema.json"):
        check_schema("summary", changed, what)


def test_config_has_one_field_per_setting():
    sys.path.insert(0, str(SHIM_DIR))
    try:
        from ophook import _ophook
    finally:
        sys.path.pop(0)
    config = schema("summary")["$defs"]["config"]
    keywords = [row["keyword"] for row in _ophook.settings()]
    assert sorted(config["properties"]) == sorted(keywords)
    assert sorted(config["required"]) == sorted(keywords)


def test_run_numpy_ops_example_outputs_match_the_schemas(tmp_path):
    proc = subprocess.run(["bash", str(EXAMPLES / "run_numpy_ops.sh")], cwd=tmp_path, env=clean_env(),
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for name in ("np_op_dumps", "np_op_dumps_pythonpath"):
        records = trace(tmp_path / name)
        assert records and summary(tmp_path / name)["totals"]["calls"] == len(records)
        assert "%s: %d calls" % (name, len(records)) in proc.stdout


def test_every_example_has_its_outputs_checked():
    examples = sorted(p.name for p in EXAMPLES.iterdir() if p.suffix in (".py", ".sh"))
    assert examples == sorted(EXAMPLE_CHECKED_BY), "name the test that checks each example's outputs"
    for where in EXAMPLE_CHECKED_BY.values():
        test_file, _, test_name = where.split(" ")[0].partition("::")
        text = (SOURCE_DIR / "tests" / "python" / test_file).read_text()
        assert "trace(" in text and (not test_name or "def %s(" % test_name in text), where

