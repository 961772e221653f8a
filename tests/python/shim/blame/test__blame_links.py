"""ophook._blame.links: which earlier call made each input (by the recorded content digest), and
which calls blame judges (none that a replayable call encloses)."""
import sys

import numpy as np

from cli_fixtures import RunDir
from harness import SHIM_DIR

sys.path.insert(0, str(SHIM_DIR))  # the package without starting it
from ophook._blame import links  # noqa: E402


def test_an_input_is_linked_to_the_latest_call_whose_output_has_its_content(tmp_path):
    run = RunDir(tmp_path)
    x = np.arange(4, dtype=np.float32)
    y = x * np.float32(2)
    run.call("numpy.multiply", [x, 2.0], [y])
    run.call("numpy.negative", [x], [y])  # the same content again, later
    run.call("numpy.tanh", [y], [np.tanh(y)])
    run.call("numpy.add", [x, y.astype(np.float64)], [x + y])  # another dtype: not y's content
    found = links.producers(run.records)
    assert found[0] == {} and found[1] == {}
    assert found[2] == {"/args/0": (1, "/outputs/0")}
    assert found[3] == {}


def test_arrays_are_named_by_the_pointers_the_replay_builder_uses():
    record = {"args": [[{"kind": "array"}, 3], {"kind": "array"}], "kwargs": {"out/x": {"kind": "array"}},
              "outputs": [[{"kind": "array"}, {"kind": "array"}]]}
    assert [p for p, _ in links.input_arrays(record)] == ["/args/0/0", "/args/1", "/kwargs/out~1x"]
    assert [p for p, _ in links.output_arrays(record)] == ["/outputs/0/0", "/outputs/0/1"]


def test_an_array_without_a_digest_or_file_links_nothing():
    assert links.content_key({"kind": "array", "file": "a.npy", "stats": None}) is None
    assert links.content_key({"kind": "array", "file": None, "stats": {"xxh64": "ab"}}) is None
    assert links.content_key({"kind": "array", "file": "a.npy", "dtype": "float32", "shape": [2],
                              "stats": {"xxh64": "ab"}}) == ("float32", (2,), "ab")


def test_the_calls_inside_a_skipped_call_are_blamed_and_those_inside_a_replayable_one_are_not():
    records = [
        {"seq": 0, "op": "torch.matmul", "parent": None},
        {"seq": 1, "op": "aten.mm.default", "parent": 0, "level": "torch_dispatch"},
        {"seq": 2, "op": "torch.Tensor.backward", "parent": None},
        {"seq": 3, "op": "aten.mm.default", "parent": 2, "level": "torch_dispatch"},
        {"seq": 4, "op": "aten.t.default", "parent": 3, "level": "torch_dispatch"},
    ]
    assert [r["seq"] for r in links.blamed_calls(records)] == [0, 2, 3]
