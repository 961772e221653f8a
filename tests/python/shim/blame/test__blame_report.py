"""ophook._blame.report: the verdict line (nothing needed, the culprits, or no call's own rounding),
the tables without the --by column twice, and the JSON report with non-finite numbers as strings."""
import io
import json
import sys

from harness import SHIM_DIR

sys.path.insert(0, str(SHIM_DIR))  # the package without starting it
from ophook._blame import report  # noqa: E402


def _call(seq, op, share, max_rel, module="m", source="p.py:1:f"):
    return {"seq": seq, "op": op, "status": "mismatch" if max_rel > 1e-3 else "match", "reason": "", "max_abs": 0.0,
            "max_rel": max_rel, "mean_rel": max_rel / 2, "threshold": 1.2e-4, "source": source, "module": module,
            "phase": "forward", "step": 0, "propagated": 0.0, "output_rel": max_rel, "chained": True, "share": share}


def _blame(error, results):
    return {"run": "run", "calls": len(results), "replayed": len(results), "chained": len(results),
            "final": {"seq": 9, "op": "numpy.mean", "source": "p.py:9:f", "dtype": "float32", "error": error,
                      "tolerance": 1.2e-3, "outputs": ["/outputs/0"]}, "results": results}


def test_a_result_within_the_tolerance_says_nothing_needs_more_precision():
    out = io.StringIO()
    report.print_text(_blame(1e-6, [_call(0, "numpy.add", None, 1e-7)]), "op", 10, out)
    assert "nothing needs more precision" in out.getvalue()


def test_the_culprits_are_named_with_their_share_and_the_table_has_each_column_once():
    out = io.StringIO()
    results = [_call(0, "numpy.add", 0.001, 1e-7), _call(1, "numpy.sum", 0.98, 1.0, module="head", source="p.py:5:f")]
    report.print_text(_blame(0.5, results), "module", 10, out)
    text = out.getvalue()
    assert "needs more precision (by module): head (98% of the final error)" in text
    header = next(line for line in text.splitlines() if line.strip().startswith("share") and "calls" in line)
    assert header.split().count("module") == 1 and "op" in header.split() and "line" in header.split()
    assert text.index("numpy.sum") < text.index("numpy.add")


def test_no_culprit_above_a_tenth_says_the_error_is_made_between_calls():
    out = io.StringIO()
    report.print_text(_blame(0.5, [_call(0, "numpy.add", 0.05, 1e-7)]), "op", 10, out)
    assert "no call's own rounding explains the final error" in out.getvalue()


def test_the_json_report_holds_every_grouping_and_non_finite_numbers_as_strings(tmp_path):
    path = tmp_path / "blame.json"
    report.write_json(str(path), _blame(float("inf"), [_call(0, "torch.matmul", 1.0, float("inf"))]))
    document = json.loads(path.read_text())
    assert document["final"]["error"] == "inf" and document["within_tolerance"] is False
    assert document["calls"][0]["max_rel"] == "inf"
    assert [document["culprits_by_" + by] for by in ("op", "module", "line")] == [["torch.matmul"], ["m"], ["p.py:1:f"]]
