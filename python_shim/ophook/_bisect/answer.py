"""What bisect prints on stdout: the groups that need more precision, each with the result with
and without it, or why there is no answer (nothing needed, the program too noisy); the same goes
into the state file under "answer" for scripts."""
from .search import BudgetSpent
from .state import save_state


def _verdict(bisection, indices):
    """The result's error (or --check's exit status) with `indices` widened, running it if the
    budget allows; a text for the table."""
    try:
        bisection.good(indices)
    except BudgetSpent:
        return None, "not measured (--max-runs spent)"
    value = bisection.error_of(indices)
    if value is None:
        return None, "the program failed"
    return value, ("check exit status %d" % value if bisection.options.check else "error %.3g" % value)


def _describe(values):
    return values[0] + (" (+%d more)" % (len(values) - 1) if len(values) > 1 else "")


def _judged_by(bisection):
    options = bisection.options
    if options.check:
        return "judged by --check %r (exit 0 good)" % options.check
    return "judged by the result's relative error against every group in %s, tolerance %.3g" % (
        options.to, bisection.tolerance)


def print_answer(bisection, indices, floor, complete):
    options, groups = bisection.options, bisection.state["groups"]
    with_all, with_text = _verdict(bisection, indices)
    print("ophook bisect: %s %d of %d groups (by %s) in %s, after %d runs; noise floor %.3g; %s" % (
        "needs" if complete else "--max-runs spent; the smallest good set found so far (not shown minimal) widens",
        len(indices), len(groups), options.by, options.to, len(bisection.runs), floor, _judged_by(bisection)))
    unchanged = bisection.error_of([])
    answer = []
    for index in indices:
        group = groups[index]
        without, without_text = _verdict(bisection, [i for i in indices if i != index])
        print("  %s" % group["key"])
        calls = sum(len(o) for o in group["calls"].values())
        print("    op %s  module %s  line %s  (%d call%s)" % (
            _describe(group["ops"]), _describe(group["modules"]), _describe(group["lines"]), calls,
            "" if calls == 1 else "s"))
        print("    with the set widened: %s; without this group: %s; unchanged: %s" % (
            with_text, without_text, "error %.3g" % unchanged if not options.check else "check exit status %d" % unchanged))
        answer.append({"key": group["key"], "ops": group["ops"], "modules": group["modules"], "lines": group["lines"],
                       "with": with_all, "without": without})
    _save(bisection, {"complete": complete, "groups": answer, "floor": floor, "runs": len(bisection.runs),
                      "tolerance": bisection.tolerance})


def print_nothing_needed(bisection, floor):
    print("ophook bisect: nothing needs more precision: the unchanged program's result is within the tolerance "
          "(error %s) of every group in %s; noise floor %.3g; %s" % (
              _unchanged_text(bisection), bisection.options.to, floor, _judged_by(bisection)))
    _save(bisection, {"complete": True, "groups": [], "floor": floor, "runs": len(bisection.runs),
                      "tolerance": bisection.tolerance})


def print_refusal(bisection, floor, first, second):
    if bisection.options.check:
        why = "the check gave exit status %d in one unchanged run and %d in the next" % (first["check"], second["check"])
    else:
        why = "two unchanged runs' results differ by %.3g (relative), above the tolerance %.3g" % (
            floor, bisection.tolerance)
    print("ophook bisect: the program is not deterministic enough to bisect: %s. Noise floor %.3g. Fix its seeds "
          "(and threads), or give a --tolerance above the floor." % (why, floor))
    _save(bisection, {"complete": False, "groups": [], "floor": floor, "runs": len(bisection.runs),
                      "tolerance": bisection.tolerance, "refused": "noise floor above the tolerance"})


def _unchanged_text(bisection):
    value = bisection.error_of([])
    return "%.3g" % value if not bisection.options.check else "check exit status %d" % value


def _save(bisection, answer):
    bisection.state["answer"] = answer
    save_state(bisection.options.state, bisection.state)
