"""ophook._replay.summary, what a replay found added up: the totals, the ops ranked by error (those
with mismatches first, then the largest relative error, the call that had it, the tightest
threshold), the reasons calls were skipped by frequency, and numbers as the reports and JSON write
them (NaN and infinities as text). Called directly on the build tree's package."""
import math
import sys

import pytest

from harness import SHIM_DIR

sys.path.insert(0, str(SHIM_DIR))  # the package without starting it
from ophook._replay import summary  # noqa: E402


def result(seq, op, status, max_rel=None, reason="", **errors):
    return {"seq": seq, "op": op, "status": status, "max_rel": max_rel, "reason": reason, **errors}


def test_the_totals_count_each_status_and_the_calls_replayed():
    results = [result(0, "a", "match"), result(1, "a", "mismatch"), result(2, "b", "skipped"), result(3, "b", "match")]
    assert summary.totals(results) == {"calls": 4, "replayed": 3, "match": 2, "mismatch": 1, "skipped": 1}
    assert summary.totals([]) == {"calls": 0, "replayed": 0, "match": 0, "mismatch": 0, "skipped": 0}


def test_each_op_keeps_its_largest_errors_the_call_that_had_them_and_its_tightest_threshold():
    results = [result(0, "numpy.add", "match", 1e-7, max_abs=1e-6, mean_rel=1e-8, threshold=2.0 ** -13),
               result(5, "numpy.add", "match", 3e-6, max_abs=1e-7, mean_rel=1e-9, threshold=2.0 ** -10),
               result(9, "numpy.add", "skipped", reason="random"),
               result(7, "numpy.add", "match", 2e-6, max_abs=None, mean_rel=None)]
    (entry,) = summary.per_op(results)
    assert entry == {"op": "numpy.add", "calls": 4, "match": 3, "mismatch": 0, "skipped": 1, "max_abs": 1e-6,
                     "max_rel": 3e-6, "mean_rel": 1e-8, "threshold": 2.0 ** -13, "worst_seq": 5}


def test_ops_with_mismatches_come_first_then_by_largest_error_then_by_name():
    results = [result(0, "numpy.exp", "match", 0.5), result(1, "numpy.add", "mismatch", 1e-9),
               result(2, "numpy.sin", "match", None), result(3, "numpy.cos", "match", 0.5),
               result(4, "numpy.log", "mismatch", 2.0), result(5, "numpy.tan", "match", float("nan")),
               result(6, "numpy.abs", "match", 1.0)]
    order = [entry["op"] for entry in summary.per_op(results)]
    assert order == ["numpy.log", "numpy.add", "numpy.abs", "numpy.cos", "numpy.exp", "numpy.sin", "numpy.tan"]


def test_skip_reasons_are_grouped_most_frequent_first_with_their_ops_once_each():
    skipped = [("torch.randn", "random"), ("torch.rand", "random"), ("torch.randn", "random"), ("torch.empty", "empty"),
               ("torch.t", "layout"), ("torch.data_ptr", "layout")]
    results = [result(seq, op, "skipped", reason=why) for seq, (op, why) in enumerate(skipped)]
    results.insert(4, result(9, "torch.add", "match"))
    assert summary.skip_reasons(results) == [(3, "random", ["torch.randn", "torch.rand"]),
                                             (2, "layout", ["torch.t", "torch.data_ptr"]),
                                             (1, "empty", ["torch.empty"])]
    assert summary.skip_reasons([result(0, "a", "match")]) == []


@pytest.mark.parametrize("value, text", [(None, "-"), (0.0, "0"), (1.23456e-7, "1.23e-07"), (0.5, "0.5"),
                                         (1234567.0, "1.23e+06"), (float("inf"), "inf"), (float("-inf"), "-inf"),
                                         (float("nan"), "nan"), (3, "3")])
def test_report_numbers_are_short(value, text):
    assert summary.number_text(value) == text


@pytest.mark.parametrize("value, written", [(float("nan"), "nan"), (float("inf"), "inf"), (float("-inf"), "-inf"),
                                            (1e-300, 1e-300), (0, 0), (None, None), ("text", "text")])
def test_json_numbers_write_nan_and_infinities_as_text(value, written):
    assert summary.json_number(value) == written


def test_json_numbers_are_valid_json():
    import json

    document = json.dumps([summary.json_number(v) for v in (math.nan, math.inf, 2.5)], allow_nan=False)
    assert json.loads(document) == ["nan", "inf", 2.5]
