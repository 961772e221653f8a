"""The replay's reports: the terminal summary, --json FILE and --html FILE."""
import html
import json
import os

from .summary import json_number, number_text, per_op, skip_reasons, totals

MODE_TEXT = {
    "exact": "each call's result against its recorded outputs, bit for bit",
    "reference": "each call's recorded outputs against the op run in float64 "
                 "(pass: mean rel < T and max rel < 10 T of the output's dtype)",
    "random": "each call on generated inputs against the same call in float64 "
              "(pass: mean rel < T and max rel < 10 T of the output's dtype)",
}
LISTED_MISMATCHES = 20


def print_text(run_dir, mode, results, out):
    t = totals(results)
    judged = mode != "exact"
    write = out.write
    write("ophook replay %s: %s\n" % (run_dir, MODE_TEXT[mode]))
    write("%d calls: %d replayed (%d %s, %d %s), %d skipped\n" % (
        t["calls"], t["replayed"], t["match"], "within thresholds" if judged else "match",
        t["mismatch"], "over" if judged else "mismatch", t["skipped"]))
    mismatches = [r for r in results if r["status"] == "mismatch"]
    if mismatches:
        write("\n%s:\n" % ("over the thresholds" if judged else "mismatches"))
        for r in mismatches[:LISTED_MISMATCHES]:
            write("  seq %s %s%s: %s%s\n" % (r["seq"], r["op"], " at " + r["source"] if r.get("source") else "",
                                          r["reason"], _errors_text(r)))
        if len(mismatches) > LISTED_MISMATCHES:
            write("  ... and %d more (--json FILE lists every call)\n" % (len(mismatches) - LISTED_MISMATCHES))
    ops = [o for o in per_op(results) if o["match"] + o["mismatch"]]
    if ops:
        write("\nops, ranked by error:\n")
        columns = ("calls", "within", "over") if judged else ("calls", "match", "mismatch")
        width = max(len(o["op"]) for o in ops)
        write("  %-*s %6s %7s %8s %8s %10s %10s%s\n" % (width, "op", *columns, "skipped", "max abs", "max rel",
                                                    "   mean rel  threshold" if judged else ""))
        for o in ops:
            write("  %-*s %6d %7d %8d %8d %10s %10s%s\n" % (
                width, o["op"], o["calls"], o["match"], o["mismatch"], o["skipped"], number_text(o["max_abs"]),
                number_text(o["max_rel"]),
                " %10s %10s" % (number_text(o["mean_rel"]), number_text(o["threshold"])) if judged else ""))
    reasons = skip_reasons(results)
    if reasons:
        write("\nskipped:\n")
        for count, reason, op_names in reasons:
            shown = ", ".join(op_names[:4]) + (", ..." if len(op_names) > 4 else "")
            write("  %5d  %s (%s)\n" % (count, reason, shown))
    if t["replayed"] == 0:
        write("\nnothing was replayed%s\n" % ("" if mode == "random" else
                                            ": a run recorded without dumps (OPHOOK_MODE=trace or stats) "
                                            "can be replayed on generated inputs with --random"))
    write("\nverdict: %s\n" % verdict(mode, t))


def verdict(mode, t):
    if t["mismatch"] == 0:
        return "all %d replayed calls %s" % (t["replayed"], "within thresholds" if mode != "exact" else "match")
    return "%d of %d replayed calls %s" % (t["mismatch"], t["replayed"],
                                         "over thresholds" if mode != "exact" else "differ from the recording")


def _errors_text(r):
    if r.get("max_abs") is None and r.get("max_rel") is None:
        return ""
    return " (max abs %s, max rel %s)" % (number_text(r.get("max_abs")), number_text(r.get("max_rel")))


def _json_ready(entry):
    return {k: json_number(v) for k, v in entry.items()}


def write_json(path, run_dir, mode, results):
    document = {"run": os.path.abspath(run_dir), "mode": mode,
                "reference": None if mode == "exact" else "float64",
                "verdict": verdict(mode, totals(results)), "totals": totals(results),
                "ops": [_json_ready(o) for o in per_op(results)],
                "skipped": [{"count": c, "reason": reason, "ops": names} for c, reason, names in skip_reasons(results)],
                "calls": [_json_ready(r) for r in results]}
    _write_file(path, json.dumps(document, indent=1) + "\n")


def write_html(path, run_dir, mode, results):
    t = totals(results)
    e = html.escape
    rows = "".join(
        "<tr class='%s'><td>%s</td><td>%d</td><td>%d</td><td>%d</td><td>%d</td><td>%s</td><td>%s</td>"
        "<td>%s</td><td>%s</td></tr>" % (
            "bad" if o["mismatch"] else "", e(o["op"]), o["calls"], o["match"], o["mismatch"], o["skipped"],
            number_text(o["max_abs"]), number_text(o["max_rel"]), number_text(o["mean_rel"]),
            "" if o["worst_seq"] is None else o["worst_seq"])
        for o in per_op(results))
    calls = "".join(
        "<tr><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td></tr>" % (
            r["seq"], e(r["op"]), e(r.get("source") or ""), number_text(r.get("max_abs")),
            number_text(r.get("max_rel")), e(r["reason"]))
        for r in results if r["status"] == "mismatch")
    skipped = "".join("<tr><td>%d</td><td>%s</td><td>%s</td></tr>" % (c, e(reason), e(", ".join(names)))
                      for c, reason, names in skip_reasons(results))
    judged = mode != "exact"
    page = _PAGE.format(
        title=e("ophook replay %s" % run_dir), mode=e(MODE_TEXT[mode]), verdict=e(verdict(mode, t)),
        totals=e("%d calls: %d replayed, %d %s, %d %s, %d skipped" % (
            t["calls"], t["replayed"], t["match"], "within thresholds" if judged else "match", t["mismatch"],
            "over" if judged else "mismatch", t["skipped"])),
        ops=rows, calls=calls or "<tr><td colspan='6'>none</td></tr>",
        skipped=skipped or "<tr><td colspan='3'>none</td></tr>")
    _write_file(path, page)


def _write_file(path, text):
    """Writes `text` whole or not at all (a temporary file renamed over `path`)."""
    temporary = "%s.tmp%d" % (path, os.getpid())
    with open(temporary, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(temporary, path)


_PAGE = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>{title}</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 2em; color: #222; }}
table {{ border-collapse: collapse; margin: 1em 0; }}
th, td {{ border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: left; font-size: 0.9em; }}
th {{ background: #f0f0f0; }}
tr.bad td {{ background: #fde8e8; }}
</style></head><body>
<h1>{title}</h1>
<p>{mode}</p>
<p><b>{verdict}</b> &mdash; {totals}</p>
<h2>Ops, ranked by error</h2>
<table><tr><th>op</th><th>calls</th><th>match</th><th>mismatch</th><th>skipped</th><th>max abs</th>
<th>max rel</th><th>mean rel</th><th>worst seq</th></tr>{ops}</table>
<h2>Calls that differ</h2>
<table><tr><th>seq</th><th>op</th><th>source</th><th>max abs</th><th>max rel</th><th>why</th></tr>{calls}</table>
<h2>Skipped</h2>
<table><tr><th>calls</th><th>reason</th><th>ops</th></tr>{skipped}</table>
</body></html>
"""
