"""The `report` and `compare` HTML pages where people look at them: rendered by headless Chromium
(Debian's `chromium`, installed by scripts/setup.sh) in a 1,280 px wide window, for runs of the
examples — regression_model.py before and after its numeric change (a compare with differing
calls), torch_mlp.py for 2 and 3 steps (a compare with unmatched calls, a report of a torch run).
Each page: no console error, no horizontal overflow, every section present, and its tables hold
as many rows as `compare --json` counts."""
import json
import subprocess

import pytest

from harness import BUILD_DIR, EXAMPLES, VENV_PYTHON, clean_env, monitor_lines
from headless_chromium import CHROMIUM, HeadlessChromium

OPHOOK = BUILD_DIR / "ophook"
WIDTH = 1280

REPORT_SECTIONS = ["Calls per op (top ", "Time per op (top ", "Timeline", "All ops"]
COMPARE_SECTIONS = ["Max abs error along the run", "First divergent call", "Per op"]

# What the page measures about itself: overflow, its headings, the rows of each section's table.
MEASURE = """(() => {
  const sections = {};
  for (const h of document.querySelectorAll("h2")) {
    let next = h.nextElementSibling;
    while (next && next.tagName !== "TABLE" && next.tagName !== "H2") next = next.nextElementSibling;
    sections[h.textContent] = next && next.tagName === "TABLE" ? next.rows.length - 1 : null;
  }
  return {scrollWidth: document.documentElement.scrollWidth, sections: sections};
})()"""


def ophook(*args, check=True):
    proc = subprocess.run([str(OPHOOK), *map(str, args)], env=clean_env(), capture_output=True, text=True,
                          timeout=300)
    if check and proc.returncode not in (0, 1):
        raise AssertionError("ophook %s: exit %d\n%s" % (args[0], proc.returncode, proc.stderr))
    return proc


def record_all(runs):
    """Records each (output, example, args, env) of `runs`, all at once (both cores: two of them
    pay for a torch import)."""
    procs = [subprocess.Popen([str(OPHOOK), "run", "--output", str(output), "--", str(VENV_PYTHON),
                               str(EXAMPLES / example), *args], env=clean_env(**env), stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True)
             for output, example, args, env in runs]
    for proc in procs:
        _, stderr = proc.communicate(timeout=300)
        assert proc.returncode == 0, stderr


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    """{name: (page path, compare --json result or None)} for the examples' runs."""
    work = tmp_path_factory.mktemp("pages")
    record_all([(work / "regression", "regression_model.py", (), {}),
                (work / "regression_perturbed", "regression_model.py", (), {"OPHOOK_EXAMPLE_PERTURB": "1"}),
                (work / "mlp2", "torch_mlp.py", ("--steps", "2"), {}),
                (work / "mlp3", "torch_mlp.py", ("--steps", "3"), {}),
                (work / "monitored", "torch_mlp.py", ("--steps", "12"),
                 {"OPHOOK_MONITOR": "1", "OPHOOK_MODE": "stats", "OPHOOK_MONITOR_TRIGGER": "loss:0.5x"})])
    out = {}
    for name, base, new in (("compare_differing", "regression", "regression_perturbed"),
                            ("compare_unmatched", "mlp2", "mlp3")):
        ophook("compare", work / base, work / new, "--html", work / (name + ".html"), "--json", work / (name + ".json"))
        out[name] = (work / (name + ".html"), json.loads((work / (name + ".json")).read_text()))
    for name in ("regression", "mlp3", "monitored"):
        ophook("report", work / name, "--html", work / ("report_%s.html" % name))
        out["report_" + name] = (work / ("report_%s.html" % name), None)
    return out


@pytest.fixture(scope="module")
def browser():
    assert CHROMIUM, "no chromium on PATH: scripts/setup.sh installs Debian's chromium"
    with HeadlessChromium(WIDTH, 900) as chromium:
        yield chromium


def has_sections(measured, prefixes):
    return all(any(heading.startswith(prefix) for heading in measured["sections"]) for prefix in prefixes)


@pytest.mark.parametrize("name", ["report_regression", "report_mlp3", "report_monitored", "compare_differing",
                                  "compare_unmatched"])
def test_page_renders_within_the_window(pages, browser, name):
    path, result = pages[name]
    errors = browser.open(path.as_uri())
    assert errors == [], errors
    measured = browser.evaluate(MEASURE)
    assert measured["scrollWidth"] <= WIDTH, measured
    if result is None:
        assert has_sections(measured, REPORT_SECTIONS), measured
        return
    assert has_sections(measured, COMPARE_SECTIONS), measured
    sections = measured["sections"]
    assert sections["Per op"] == len(result["ops"])
    differing = [h for h in sections if h.startswith("Differing calls (")]
    listed = ", first 200" if result["differing_pairs"] > 200 else ""
    heading = "Differing calls (%d, %d marked origin%s)" % (result["differing_pairs"], result["origins"], listed)
    assert differing == ([heading] if result["differing_pairs"] else [])
    if differing:
        assert sections[differing[0]] == min(result["differing_pairs"], 200)
    unmatched = result["unmatched_base"] + result["unmatched_new"]
    assert [h for h in sections if h.startswith("Unmatched calls (")] == (
        ["Unmatched calls (%d in BASE, %d in NEW)" % (result["unmatched_base"], result["unmatched_new"])]
        if unmatched else [])


def test_the_examples_give_both_kinds_of_compare_page(pages):
    """The pages above cover both tables that grow with a run: differing and unmatched calls."""
    assert pages["compare_differing"][1]["differing_pairs"] > 0
    assert pages["compare_unmatched"][1]["unmatched_new"] > 0


def test_the_browser_sees_what_breaks_a_page(browser, tmp_path):
    """The checks above can fail: a broken SVG attribute, a missing file, a script's error and a
    table wider than the window are all seen."""
    page = tmp_path / "broken.html"
    page.write_text('<!DOCTYPE html><html><body><svg width="10" height="10"><rect width="NaN" height="5"/></svg>'
                    '<img src="missing.png"><script>console.error("boom")</script>'
                    '<h2>Wide</h2><table><tr><th>cell</th></tr><tr><td style="white-space: nowrap">%s</td></tr></table>'
                    '</body></html>'
                    % ("x" * 400))
    errors = browser.open(page.as_uri())
    assert any("<rect> attribute width" in e for e in errors) and "boom" in errors, errors
    assert any("ERR_FILE_NOT_FOUND" in e for e in errors), errors
    measured = browser.evaluate(MEASURE)
    assert measured["scrollWidth"] > WIDTH and measured["sections"] == {"Wide": 1}


def test_the_monitor_is_plotted_per_step_with_its_triggers_marked(pages, browser):
    """A monitored run (OPHOOK_MONITOR, a rule that fires once its window is full) gets the loss and
    the gradient norm per step, the steps that fired drawn red."""
    path, _ = pages["report_monitored"]
    assert browser.open(path.as_uri()) == []
    drawn = browser.evaluate("""(() => {
      const h = [...document.querySelectorAll("h2")].find(e => e.textContent === "Training monitor");
      const charts = [];
      for (let next = h.nextElementSibling; next && next.tagName !== "H2"; next = next.nextElementSibling) {
        const svg = next.tagName === "svg" ? next : next.querySelector && next.querySelector("svg");
        if (svg) charts.push({points: svg.querySelectorAll("circle").length,
                              red: [...svg.querySelectorAll("circle")].filter(
                                c => (c.getAttribute("fill") || "").toLowerCase() !== (
                                  svg.querySelector("circle").getAttribute("fill") || "").toLowerCase()).length});
      }
      return charts;
    })()""")
    assert len(drawn) == 2, drawn
    lines = monitor_lines(path.parent / "monitored")
    fired = [line["step"] for line in lines if line.get("triggers")]
    assert len(lines) == 12 and fired, lines
    for chart in drawn:
        assert chart["points"] == 12 and chart["red"] in (len(fired), 12 - len(fired)), (chart, fired)
