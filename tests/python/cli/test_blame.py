"""`ophook blame` on real programs, each recorded once in dump mode by the built `ophook` and
`libophook.so`: one planted precision loss among benign ops (float32 cancellation inside one NumPy
call, a float16 matmul that overflows under autocast, a bfloat16 module whose long reduction loses
the result; the programs test_bisect.py bisects) is ranked first, at its source line and module;
a benign program blames nothing and says so. Outputs are read back from --json, and the --html page
as headless Chromium shows it."""
import json

import pytest

from cli_fixtures import run_ophook
from harness import VENV_PYTHON, clean_env
from headless_chromium import CHROMIUM, HeadlessChromium
from precision_programs import BENIGN, CANCELLATION, LONG_REDUCTION, OVERFLOW, planted_site, write_program


# Two SGD steps of a small bfloat16-autocast model: the backward pass's aten ops (inside the skipped
# torch.Tensor.backward record) and the optimizer's updates are blamed like the forward calls.
TRAINING = """
    import torch

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.rand(16, 8), torch.rand(16, 1)
    for step in range(2):
        opt.zero_grad()
        with torch.autocast("cpu", dtype=torch.bfloat16):
            out = model(x)
        loss = torch.nn.functional.mse_loss(out.float(), y)
        loss.backward()
        opt.step()
    print(loss.item())
"""


def _blame(tmp_path, source, *options, levels="numpy,torch_function"):
    program = write_program(tmp_path, source)
    run_dir = tmp_path / "run"
    recorded = run_ophook("run", "--mode", "dump", "--levels", levels, "--output", run_dir, "--", VENV_PYTHON,
                          program, cwd=tmp_path, env=clean_env(), timeout=120)
    assert recorded.returncode == 0, recorded.stderr
    report = tmp_path / "blame.json"
    proc = run_ophook("blame", run_dir, "--json", report, *options, cwd=tmp_path, env=clean_env(), timeout=120)
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    return program, proc, json.loads(report.read_text())


def _assert_first(proc, blame, by, key):
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert blame["final"]["error"] == "inf" or blame["final"]["error"] > blame["final"]["tolerance"]
    first = blame["by_" + by][0]
    assert first["key"] == key or first["key"].split(".")[-1] == key, blame["by_" + by][:3]
    assert blame["culprits_by_" + by] == [first["key"]], blame["by_" + by][:3]
    assert first["share"] > 0.5
    assert "needs more precision (by %s): %s" % (by, first["key"]) in proc.stdout
    return first


def test_blame_ranks_first_the_line_of_a_float32_cancellation(tmp_path):
    program, proc, blame = _blame(tmp_path, CANCELLATION, "--by", "line")
    first = _assert_first(proc, blame, "line", blame["by_line"][0]["key"])
    assert first["key"].startswith(planted_site(program)) and first["ops"] == ["numpy.sum"]
    planted = next(c for c in blame["calls"] if c["op"] == "numpy.sum")
    assert planted["status"] == "mismatch" and planted["max_rel"] > 0.1  # its own float32 rounding
    assert planted["propagated"] < 1e-6  # it was handed its inputs nearly exact
    downstream = [c for c in blame["calls"] if c["seq"] > planted["seq"] and c["status"] != "skipped"]
    assert downstream and all(c["max_rel"] < 1e-3 for c in downstream)  # right on what they were given
    assert any(c["propagated"] > 0.1 for c in downstream)  # but handed the loss
    assert blame["by_op"][0]["key"] == "numpy.sum"


def test_blame_ranks_first_the_float16_matmul_that_overflows(tmp_path):
    program, proc, blame = _blame(tmp_path, OVERFLOW)
    first = _assert_first(proc, blame, "op", "torch.matmul")
    assert first["lines"][0].startswith(planted_site(program))
    assert first["max_rel"] == "inf"
    assert blame["final"]["error"] == "inf"  # the recorded result is NaN


def test_blame_ranks_first_the_bfloat16_module_whose_reduction_loses_the_result(tmp_path):
    program, proc, blame = _blame(tmp_path, LONG_REDUCTION, "--by", "module")
    first = _assert_first(proc, blame, "module", "contrast")
    assert first["ops"] == ["torch.matmul"] and first["lines"][0].startswith(planted_site(program))
    assert first["phases"] == ["forward"]
    assert blame["by_op"][0]["key"] == "torch.matmul"


def test_blame_of_a_benign_program_blames_nothing_and_says_so(tmp_path):
    _, proc, blame = _blame(tmp_path, BENIGN)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "nothing needs more precision" in proc.stdout
    assert blame["within_tolerance"] and blame["culprits_by_op"] == []
    assert blame["final"]["error"] <= blame["final"]["tolerance"]
    assert all(c.get("share") is None for c in blame["calls"])  # no share is measured: nothing to explain


def test_blame_judges_backward_and_optimizer_calls_fed_by_the_chain(tmp_path):
    _, proc, blame = _blame(tmp_path, TRAINING, levels="numpy,torch_function,torch_dispatch")
    replayed = [c for c in blame["calls"] if c["status"] != "skipped"]
    for phase in ("forward", "backward", "optimizer"):
        calls = [c for c in replayed if c["phase"] == phase]
        assert calls and any(c["chained"] for c in calls), phase  # fed by the chain, not only their files
        assert any(c["max_rel"] is not None for c in calls), phase  # its local error judged
    backward = [c for c in replayed if c["phase"] == "backward"]
    assert all(c["op"].startswith("aten.") for c in backward)  # the aten ops inside Tensor.backward
    assert not any(c["op"] == "torch.Tensor.backward" for c in replayed)
    assert blame["final"]["op"] == "torch.Tensor.add_"  # the last update: the run's last floating output
    assert "by op, most to blame first" in proc.stdout


# What the page shows: its width, its verdict lines, and per table its heading, rows and the first
# row's cells and share bar.
PAGE = """(() => ({
  scrollWidth: document.documentElement.scrollWidth,
  verdict: [...document.querySelectorAll("p.verdict")].map(p => p.textContent),
  tables: [...document.querySelectorAll("h2")].map(h => {
    const rows = h.nextElementSibling.tBodies[0].rows;
    const bar = rows[0].querySelector(".bar");
    return {title: h.textContent, rows: rows.length, first: [...rows[0].cells].map(c => c.textContent),
            bar: bar ? bar.getBoundingClientRect().width : 0};
  }),
}))()"""


def test_blame_writes_its_report_as_a_page_the_browser_shows(tmp_path):
    page = tmp_path / "blame.html"
    program, proc, blame = _blame(tmp_path, CANCELLATION, "--by", "line", "--top", "5", "--html", page)
    assert CHROMIUM, "no chromium on PATH: scripts/setup.sh installs Debian's chromium"
    with HeadlessChromium(1280, 900) as browser:
        assert browser.open(page.as_uri()) == []
        shown = browser.evaluate(PAGE)
    assert shown["scrollWidth"] <= 1280
    assert shown["verdict"] == proc.stdout.split("\n\n")[0].splitlines()  # the terminal's verdict lines
    by_line, calls = shown["tables"]
    assert by_line["title"] == "by line, most to blame first" and by_line["rows"] == min(5, len(blame["by_line"]))
    first = blame["by_line"][0]
    assert by_line["first"][4] == first["key"] and first["key"].startswith(planted_site(program))
    assert by_line["bar"] == pytest.approx(80 * min(first["share"], 1.0), abs=1)  # its share, drawn
    replayed = [c for c in blame["calls"] if c["status"] != "skipped"]
    assert calls["title"] == "calls, most to blame first" and calls["rows"] == min(5, len(replayed))
    assert calls["first"][4] == "numpy.sum"


def test_blame_of_a_missing_run_is_an_input_error(tmp_path):
    proc = run_ophook("blame", tmp_path / "nothing")
    assert proc.returncode == 2 and "not a directory" in proc.stderr


def test_blame_help_answers_what_it_does():
    proc = run_ophook("blame", "--help")
    assert proc.returncode == 0
    for words in ("--by", "--top", "--candidates", "--tolerance", "--json", "local error", "Exit status"):
        assert words in proc.stdout
