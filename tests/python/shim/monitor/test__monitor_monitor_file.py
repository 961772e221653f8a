"""ophook._monitor.monitor_file with _ophook's monitor_json_line: a line written in C++ reads back
as the very values it was given (every float to the bit, keys in their order, any string), a
NaN or infinity is a ValueError and what it does not write a TypeError, and MonitorFile then
writes the line through json.dumps, non-finite values null and named. Called directly on the
build tree's package."""
import json
import math
import struct
import sys

import pytest
from hypothesis import given, settings, strategies as st

from harness import SHIM_DIR

sys.path.insert(0, str(SHIM_DIR))  # the package without starting it
from ophook import _ophook  # noqa: E402
from ophook._monitor.monitor_file import MonitorFile  # noqa: E402

encode = _ophook.monitor_json_line


def same(a, b):
    """Equal, floats bit for bit (-0.0 is not 0.0), dict keys in the same order."""
    if isinstance(a, float) or isinstance(b, float):
        return type(a) is type(b) and struct.pack("<d", a) == struct.pack("<d", b)
    if isinstance(a, dict):
        return isinstance(b, dict) and list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return isinstance(b, list) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


floats = st.floats(allow_nan=False, allow_infinity=False)
scalars = st.none() | st.booleans() | st.integers(-2**63, 2**63 - 1) | floats | st.text()
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
                      max_leaves=20)


@settings(max_examples=300, deadline=None)
@given(values)
def test_any_line_reads_back_as_the_values_it_was_given(line):
    text = encode(line)
    assert "\n" not in text
    assert same(json.loads(text), line), (line, text)


def test_a_step_line_reads_back_exactly():
    line = {"step": 3, "rank": None, "time": 1733500000.123456, "loss": 0.1, "backward_calls": 1,
            "grad_norm": 2.0, "params": {'GPT2LMHeadModel."h".0\\attn\tc': {"norm": 1e-5, "min": -0.0, "max": 1e16,
                                                                            "nan": 0, "lr": 5e-324, "sharded": True}},
            "triggers": [{"rule": "loss:6sigma", "sigmas": 812.4}], "modules": {"Sequential.0": {}}}
    text = encode(line)
    assert same(json.loads(text), line)
    assert json.loads(text) == json.loads(json.dumps(line))
    assert encode({1: [1.0, (2, 3)]}) == json.dumps({1: [1.0, (2, 3)]})  # int keys and tuples as json.dumps


@pytest.mark.parametrize("bad, error", [({"loss": math.nan}, ValueError), ({"x": [math.inf]}, ValueError),
                                        ({"x": object()}, TypeError), ({"x": 2**70}, TypeError),
                                        ({(1, 2): 0}, TypeError)])
def test_what_it_cannot_write_is_an_error_of_its_kind(bad, error):
    with pytest.raises(error):
        encode(bad)


def test_monitor_file_writes_a_non_finite_line_through_json_with_nulls(tmp_path):
    monitor = MonitorFile(str(tmp_path), lambda level, message: None, encode)
    monitor.write({"step": 0, "loss": 0.5, "grad_norm": 1.0, "params": {"w": {"norm": 2.0}}})
    monitor.write({"step": 1, "loss": math.nan, "grad_norm": math.inf, "params": {"w": {"norm": 2 ** 70}}})
    assert monitor.close() is None
    first, second = [json.loads(line) for line in (tmp_path / "monitor.jsonl").read_text().splitlines()]
    assert first == {"step": 0, "loss": 0.5, "grad_norm": 1.0, "params": {"w": {"norm": 2.0}}}
    assert second["loss"] is None and second["grad_norm"] is None and second["params"]["w"]["norm"] == 2 ** 70
    assert second["nonfinite"] == {"loss": "nan", "grad_norm": "inf"}
