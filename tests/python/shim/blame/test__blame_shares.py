"""ophook._blame.shares and ranking: the share of the final error each call's own rounding explains
(the chain with only that call's local error), and the groups ranked by it."""
import sys

import numpy as np

from cli_fixtures import RunDir
from harness import SHIM_DIR

sys.path.insert(0, str(SHIM_DIR))  # the package without starting it
from ophook._blame import ranking, shares  # noqa: E402
from ophook._blame.chain import Chain  # noqa: E402
from ophook._blame.links import producers  # noqa: E402
from ophook._bisect.result import relative_error  # noqa: E402


def _planted_run(run, planted=1e-2):
    """Four float32 calls; the tanh's recorded output is `planted` too large (a rounding that loses
    the result), the others are what float32 gives."""
    x = np.linspace(0.1, 1.0, 16).astype(np.float32)
    scaled = x * np.float32(0.5)
    run.call("numpy.multiply", [x, 0.5], [scaled], source="p.py:1:f", module="a")
    bent = (np.tanh(scaled) * np.float32(1 + planted)).astype(np.float32)
    run.call("numpy.tanh", [scaled], [bent], source="p.py:2:f", module="b")
    squared = bent * bent
    run.call("numpy.multiply", [bent, bent], [squared], source="p.py:3:f", module="a")
    run.call("numpy.mean", [squared], [np.asarray(squared.mean(), dtype=np.float32)], source="p.py:4:f", module="a")
    run.write()
    return run


def _blame(run):
    links = producers(run.records)
    kept = {p for found in links.values() for p in found.values()}
    kept |= {(r["seq"], p) for r in run.records for p in shares.result_pointers(r)}
    chain = Chain(str(run.path), run.records, links, kept)
    results = chain.run()
    final = shares.result_call(run.records, results)
    error = relative_error(shares.recorded_result(str(run.path), final), shares.chain_result(final, chain.values))
    shares.measure_shares(chain, final, error, candidates=16)
    return results, error


def test_the_call_whose_rounding_loses_the_result_explains_all_of_it(tmp_path):
    results, error = _blame(_planted_run(RunDir(tmp_path)))
    assert 0.015 < error < 0.025  # squared: twice the planted 1%
    tanh = results[1]
    assert tanh["status"] == "mismatch" and abs(tanh["share"] - 1.0) < 0.05
    assert all(r.get("share") is None or r["share"] < 1e-3 for r in results if r is not tanh)
    by_op = ranking.groups(results, "op")
    assert by_op[0]["key"] == "numpy.tanh" and [e["key"] for e in ranking.culprits(by_op)] == ["numpy.tanh"]
    by_module = ranking.groups(results, "module")
    assert by_module[0]["key"] == "b" and by_module[0]["lines"] == ["p.py:2:f"]
    assert ranking.ranked_calls(results)[0]["seq"] == 1


def test_a_non_finite_output_float64_does_not_make_explains_an_infinite_final_error(tmp_path):
    run = RunDir(tmp_path)
    x = np.full(4, 300.0, dtype=np.float16)
    run.call("numpy.multiply", [x, x], [np.full(4, np.inf, dtype=np.float16)])  # 9e4 overflows float16
    run.call("numpy.sqrt", [np.full(4, np.inf, dtype=np.float16)], [np.full(4, np.inf, dtype=np.float16)])
    run.write()
    results, error = _blame(run)
    assert error == float("inf")
    assert results[0]["share"] == 1.0
    assert results[1].get("share") in (None, 0.0)  # the sqrt is right on what it was given


def test_severity_is_how_far_over_the_pass_line_the_local_error_lies():
    assert shares.severity({"threshold": 1e-4, "max_rel": 1e-2, "mean_rel": 1e-5}) == 10.0
    assert shares.severity({"threshold": 1e-4, "max_rel": 1e-4, "mean_rel": 5e-4}) == 5.0
    assert shares.severity({"threshold": None, "max_rel": 0.0}) == 0.0


def test_a_rounding_a_later_call_amplifies_is_blamed_where_it_was_made(tmp_path):
    """x + 1e8 kept in float32, then - 1e8: the add's own error is tiny against its output, yet
    alone it loses the result; the subtract is exact on what it was given."""
    run = RunDir(tmp_path)
    x = np.linspace(1.0, 2.0, 8).astype(np.float32)
    shifted = x + np.float32(1e8)
    run.call("numpy.add", [x, 1e8], [shifted])
    run.call("numpy.subtract", [shifted, 1e8], [shifted - np.float32(1e8)])
    run.write()
    results, error = _blame(run)
    assert error > 0.1
    assert results[0]["max_rel"] < 1e-7 and results[0]["share"] > 0.9
    assert results[1].get("share") in (None, 0.0)
