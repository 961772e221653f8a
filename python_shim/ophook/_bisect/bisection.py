"""The runs of one bisection and their verdicts: each set of groups runs at most once (its outcome
kept in the state file), within the budget, and is judged against the run with every group
widened, by the result's relative error or by --check."""
import math
import os
import sys

from .groups import build_groups, chosen_calls
from .program_runs import run_program
from .result import read_result, relative_error
from .search import BudgetSpent
from .state import save_state
from .._replay.trace_file import read_records

# The per-dtype thresholds of replay --reference, whose largest relative error may reach 10x: below
# that the result's own rounding hides any gain. float64 is what the all-widened run computes in.
DTYPE_TOLERANCE = {"float16": 10 * 2.0 ** -10, "bfloat16": 10 * 2.0 ** -7, "float32": 10 * 2.0 ** -13,
                   "float64": 10 * 2.0 ** -40}
FIXED_RUNS = ("unchanged", "unchanged again", "all widened")


class Bisection:
    def __init__(self, options, state):
        self.options = options
        self.state = state
        self.runs = state["runs"]
        self.reference = None  # the all-widened run's result, read once per session
        self.tolerance = options.tolerance

    # -- runs -------------------------------------------------------------------------------
    def _progress(self, text):
        sys.stderr.write("ophook bisect: %s\n" % text)
        sys.stderr.flush()

    def runs_for_one_culprit(self):
        """The most runs a bisection of one culprit takes: the fixed three, then 2 per halving."""
        count = len(self.state["groups"])
        return len(FIXED_RUNS) + (math.ceil(2 * math.log2(count)) if count > 1 else 0)

    def run(self, name, indices):
        """The outcome of the run `name` widening the groups at `indices` (None: nothing), from the
        state when it was done before. Raises BudgetSpent when it is new and no run is left."""
        if name in self.runs:
            return self.runs[name]
        if len(self.runs) >= self.options.max_runs:
            raise BudgetSpent()
        groups = self.state["groups"] or []
        calls = chosen_calls(groups, indices or [])
        bound = (" of at most %d for one culprit" % self.runs_for_one_culprit()
                 if self.state["groups"] is not None else "")
        self._progress("run %d%s (--max-runs %d): %s" % (
            len(self.runs) + 1, bound, self.options.max_runs,
            "%d of %d groups in %s" % (len(indices), len(groups), self.options.to) if indices else "unchanged"))
        outcome = run_program(self.options.ophook, self.options.command, self._run_dir(name), self.options.to,
                              calls, self.options.check)
        record = {"groups": sorted(indices) if indices is not None else None, "status": outcome["status"]}
        if outcome["status"] == "failed":
            record.update(why=outcome["why"], stderr=outcome["stderr"])
            self._progress("  the program failed (%s); this set is marked failed. Its stderr ends:\n%s" % (
                outcome["why"], _indent(outcome["stderr"])))
        elif "check" in outcome:
            record["check"] = outcome["check"]
        if name == FIXED_RUNS[0] and outcome["status"] == "ok":
            self.state["groups"] = build_groups(outcome["records"], self.options.by, self.options.to)
            record["result_dtype"] = outcome.get("result", {}).get("dtype")
        self.runs[name] = record
        if name not in FIXED_RUNS and outcome["status"] == "ok" and not self.options.check:
            record["error"] = relative_error(outcome["result"], self.reference_result())
            self._progress("  result error %s: %s" % (_number(record["error"]),
                                                       "good" if record["error"] <= self.tolerance else "not good"))
        save_state(self.options.state, self.state)
        return record

    def _run_dir(self, name):
        """The fixed runs keep their recordings (a resumed bisection reads their results again);
        the others share one directory."""
        label = name.replace(" ", "_") if name in FIXED_RUNS else "last_run"
        return os.path.join(self.options.output, label)

    def result_of(self, name):
        run_dir = self._run_dir(name)
        return read_result(run_dir, read_records(run_dir))

    def reference_result(self):
        if self.reference is None:
            self.reference = self.result_of(FIXED_RUNS[2])
        return self.reference

    # -- verdicts ---------------------------------------------------------------------------
    def choose_tolerance(self, baseline_error, result_dtype):
        """--tolerance, else a tenth of the unchanged program's error (a set must remove nine tenths
        of it), but never less than the result dtype's own rounding, which is also all there is
        when the unchanged result is not finite."""
        if self.tolerance is None:
            floor = DTYPE_TOLERANCE.get(result_dtype, DTYPE_TOLERANCE["float32"])
            self.tolerance = max(baseline_error / 10, floor) if math.isfinite(baseline_error) else floor
        return self.tolerance

    def name_of(self, indices):
        """The run's name in the state: the fixed runs' for no group and for every group."""
        if not indices:
            return FIXED_RUNS[0]
        if len(indices) == len(self.state["groups"]):
            return FIXED_RUNS[2]
        return "groups " + ",".join(map(str, sorted(indices)))

    def good(self, indices):
        """Whether widening the groups at `indices` brings the result within the tolerance (or
        makes --check pass); a failed run is not good."""
        record = self.run(self.name_of(indices), sorted(indices))
        if record["status"] != "ok":
            return False
        if self.options.check:
            return record["check"] == 0
        return record["error"] <= self.tolerance

    def error_of(self, indices):
        """The recorded verdict of a set already run: its error (or check status), None if failed."""
        record = self.runs[self.name_of(indices)]
        if record["status"] != "ok":
            return None
        return record.get("check") if self.options.check else record.get("error")


def _indent(text):
    return "\n".join("    " + line for line in text.splitlines())


def _number(value):
    return "%.3g" % value if value is not None else "-"
