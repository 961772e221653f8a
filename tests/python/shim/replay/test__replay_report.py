"""ophook._replay.report, what `ophook replay` prints and writes: the counts and verdict in each
mode's words, the mismatches with their place, the ops ranked by error, the skip reasons, the
hint for a run recorded without dumps; --json with every call (NaN and infinities as text) and
--html with the names escaped, each file written whole or not at all. Called directly on the
build tree's package."""
import html
import io
import json
import sys

import pytest

from harness import SHIM_DIR

sys.path.insert(0, str(SHIM_DIR))  # the package without starting it
from ophook._replay import report  # noqa: E402


def result(seq, op, status, reason="", max_abs=None, max_rel=None, source=None, **more):
    return {"seq": seq, "op": op, "status": status, "reason": reason, "max_abs": max_abs, "max_rel": max_rel,
            "source": source, **more}


RESULTS = [result(0, "numpy.add", "match", max_abs=0.0, max_rel=0.0),
           result(1, "numpy.exp", "mismatch", "outputs[0]: 1 of 4 elements differ", 0.5, 0.25, "/prog.py:7"),
           result(2, "torch.randn", "skipped", "random: draws from a random generator"),
           result(3, "torch.rand", "skipped", "random: draws from a random generator")]


def printed(mode, results, run="/runs/a"):
    out = io.StringIO()
    report.print_text(run, mode, results, out)
    return out.getvalue()


def test_the_text_report_counts_lists_ranks_and_gives_the_verdict():
    text = printed("exact", RESULTS)
    assert text.startswith("ophook replay /runs/a: each call's result against its recorded outputs, bit for bit\n"
                           "4 calls: 2 replayed (1 match, 1 mismatch), 2 skipped\n")
    assert "\nmismatches:\n  seq 1 numpy.exp at /prog.py:7: outputs[0]: 1 of 4 elements differ " \
           "(max abs 0.5, max rel 0.25)\n" in text
    ranked = text[text.index("ops, ranked by error:"):text.index("skipped:\n")].splitlines()
    assert [line.split()[0] for line in ranked[2:4]] == ["numpy.exp", "numpy.add"]
    assert "\nskipped:\n      2  random: draws from a random generator (torch.randn, torch.rand)\n" in text
    assert text.endswith("\nverdict: 1 of 2 replayed calls differ from the recording\n")


def test_the_judged_modes_speak_of_thresholds():
    text = printed("reference", [result(0, "numpy.add", "match", max_abs=1e-9, max_rel=1e-9, mean_rel=1e-10,
                                        threshold=2.0 ** -13)])
    assert "1 calls: 1 replayed (1 within thresholds, 0 over), 0 skipped" in text
    assert "mean rel  threshold" in text and "0.000122" in text
    assert text.endswith("verdict: all 1 replayed calls within thresholds\n")


def test_many_mismatches_are_listed_up_to_twenty():
    results = [result(seq, "numpy.add", "mismatch", "differs") for seq in range(25)]
    text = printed("exact", results)
    assert text.count("  seq ") == 20 and "  ... and 5 more (--json FILE lists every call)\n" in text


def test_a_run_without_dumps_is_told_about_random_replay():
    text = printed("exact", [RESULTS[2]])
    assert "nothing was replayed: a run recorded without dumps (OPHOOK_MODE=trace or stats) can be replayed on " \
           "generated inputs with --random" in text
    assert "\nnothing was replayed\n" in printed("random", [RESULTS[2]])
    assert "ops, ranked by error" not in text


def test_the_json_report_holds_every_call_with_nan_and_infinities_as_text(tmp_path):
    results = RESULTS + [result(4, "numpy.log", "mismatch", "nan", float("nan"), float("inf"))]
    path = tmp_path / "replay.json"
    report.write_json(str(path), "/runs/a", "exact", results)
    document = json.loads(path.read_text())
    assert document["run"] == "/runs/a" and document["mode"] == "exact" and document["reference"] is None
    assert document["totals"] == {"calls": 5, "replayed": 3, "match": 1, "mismatch": 2, "skipped": 2}
    assert document["verdict"] == "2 of 3 replayed calls differ from the recording"
    assert [c["seq"] for c in document["calls"]] == [0, 1, 2, 3, 4]
    assert document["calls"][4]["max_abs"] == "nan" and document["calls"][4]["max_rel"] == "inf"
    assert document["ops"][0]["op"] == "numpy.log" and document["ops"][0]["max_rel"] == "inf"
    assert document["skipped"] == [{"count": 2, "reason": "random: draws from a random generator",
                                    "ops": ["torch.randn", "torch.rand"]}]
    report.write_json(str(path), "/runs/a", "reference", results)
    assert json.loads(path.read_text())["reference"] == "float64"
    assert [p.name for p in tmp_path.iterdir()] == ["replay.json"]  # no temporary file left


def test_the_html_report_escapes_what_the_run_recorded(tmp_path):
    results = [result(0, "torch.<lambda>", "mismatch", "returned <b>bold</b> & more", 1.0, 0.5, "/a&b.py:1")]
    path = tmp_path / "replay.html"
    report.write_html(str(path), "/runs/<a>", "exact", results)
    page = path.read_text()
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    assert "<b>bold</b>" not in page and html.escape("returned <b>bold</b> & more") in page
    assert html.escape("torch.<lambda>") in page and html.escape("/a&b.py:1") in page
    assert "<title>ophook replay /runs/&lt;a&gt;</title>" in page
    assert "<tr class='bad'>" in page  # the op with mismatches is marked


def test_a_report_that_cannot_be_written_leaves_nothing(tmp_path):
    with pytest.raises(OSError):
        report.write_json(str(tmp_path / "missing" / "replay.json"), "/runs/a", "exact", RESULTS)
    assert list(tmp_path.iterdir()) == []
