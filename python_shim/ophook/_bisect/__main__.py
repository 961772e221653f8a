"""The bisect engine's command line, for `ophook bisect` (the C++ tool checks the user's options
and starts this with a Python that has numpy):

    python -m ophook._bisect --ophook EXE --by op|module|line --to float64|float32 --max-runs N
        [--tolerance T] [--check CMD] --state FILE --output DIR -- COMMAND...

Exit status: 0 a set is named, or nothing needs more precision; 1 the budget ran out first (the
best set so far is named), or not even every group widened passes --check; 2 input error (the
program fails unchanged, a state file of another bisection); 4 the program's noise floor is above
the tolerance."""
import argparse
import sys

from .answer import print_answer, print_nothing_needed, print_refusal
from .bisection import FIXED_RUNS, Bisection
from .result import relative_error
from .search import BudgetSpent, smallest_good_set
from .state import load_state
from .._replay.trace_file import InputError

EXIT_OK, EXIT_BUDGET, EXIT_INPUT, EXIT_NOISY = 0, 1, 2, 4


def parse(argv):
    parser = argparse.ArgumentParser(prog="ophook bisect engine")
    parser.add_argument("--ophook", required=True)
    parser.add_argument("--by", choices=("op", "module", "line"), default="op")
    parser.add_argument("--to", choices=("float64", "float32"), default="float64")
    parser.add_argument("--max-runs", type=int, default=60)
    parser.add_argument("--tolerance", type=float)
    parser.add_argument("--check")
    parser.add_argument("--state", required=True)
    parser.add_argument("--output", required=True)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    options = parser.parse_args(argv)
    if options.command[:1] == ["--"]:
        options.command = options.command[1:]
    if not options.command:
        parser.error("no program to bisect: give it after --")
    return options


def main(argv=None):
    options = parse(argv)
    identity = {"command": options.command, "by": options.by, "to": options.to, "tolerance": options.tolerance,
                "check": options.check}
    try:
        bisection = Bisection(options, load_state(options.state, identity))
        return bisect(bisection)
    except InputError as error:
        sys.stderr.write("ophook bisect: error: %s\n" % error)
        return EXIT_INPUT


def _fixed_run(bisection, name, indices):
    record = bisection.run(name, indices)
    if record["status"] != "ok":
        raise InputError("the program fails %s (%s); its stderr ends:\n%s" % (
            {"unchanged": "unchanged", "unchanged again": "when run unchanged a second time"}.get(
                name, "with every group widened"), record["why"], record["stderr"]))
    return record


def bisect(bisection):
    options, state = bisection.options, bisection.state
    try:
        first = _fixed_run(bisection, FIXED_RUNS[0], None)
        groups = state["groups"]
        if not groups:
            print("ophook bisect: no call reads a floating array narrower than %s: nothing can run in higher "
                  "precision" % options.to)
            return EXIT_OK
        second = _fixed_run(bisection, FIXED_RUNS[1], None)
        widened = _fixed_run(bisection, FIXED_RUNS[2], list(range(len(groups))))
    except BudgetSpent:
        raise InputError("--max-runs %d leaves no room for the %d runs every bisection starts with"
                         % (options.max_runs, len(FIXED_RUNS)))
    if options.check:
        floor = 0.0 if first["check"] == second["check"] else float("inf")
        baseline_good, widened_good = first["check"] == 0, widened["check"] == 0
        bisection.tolerance = 0.0
    else:
        unchanged = bisection.result_of(FIXED_RUNS[0])
        floor = relative_error(bisection.result_of(FIXED_RUNS[1]), unchanged)
        first["error"] = relative_error(unchanged, bisection.reference_result())
        widened["error"] = 0.0
        tolerance = bisection.choose_tolerance(first["error"], first.get("result_dtype"))
        baseline_good, widened_good = first["error"] <= tolerance, True
    state["floor"] = floor
    if floor > bisection.tolerance:
        print_refusal(bisection, floor, first, second)
        return EXIT_NOISY
    if baseline_good:
        print_nothing_needed(bisection, floor)
        return EXIT_OK
    if not widened_good:
        print("ophook bisect: the check fails even with every group in %s (exit status %d): no set of these ops "
              "is enough" % (options.to, widened["check"]))
        return EXIT_BUDGET
    best = [list(range(len(groups)))]  # the smallest set known good so far

    def good(indices):
        verdict = bisection.good(indices)
        if verdict and len(indices) < len(best[0]):
            best[0] = sorted(indices)
        return verdict

    try:
        found = smallest_good_set(len(groups), good)
    except BudgetSpent:
        print_answer(bisection, best[0], floor, complete=False)
        return EXIT_BUDGET
    print_answer(bisection, found, floor, complete=True)
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
