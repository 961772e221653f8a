"""OPHOOK_MONITOR_TRIGGER's rules, judged on the host from the step's statistics (already copied
there once per step): a step fires a rule when its value lies more than N standard deviations above
the mean of the window's earlier steps (`loss:6sigma`) or more than N times their median
(`grad_norm:10x`). Only rises fire: a spike is a value that grows. A value that is not finite always
fires. A value that fired does not enter the history, so that a spike does not raise the bar for the
next one; the first steps, until MIN_HISTORY values are known, fire on non-finite values only."""
import fnmatch
import math
from collections import deque

MIN_HISTORY = 8
# A window of equal values has no spread: a rise by this fraction of the mean still counts as one
# sigma, so that float noise on a flat series does not fire.
FLAT_SPREAD = 1e-3


class _Rule:
    def __init__(self, rule):
        self.text = rule["rule"]
        self.statistic = rule["statistic"]
        self.kind = rule["kind"]
        self.threshold = float(rule["threshold"])
        self.pattern = "*" in self.statistic

    def names(self, statistics):
        if not self.pattern:
            return [self.statistic] if self.statistic in statistics else []
        return [name for name in statistics if fnmatch.fnmatchcase(name, self.statistic)]

    def verdict(self, value, history):
        """The trigger's facts, or None when the value stays within the rule."""
        if not math.isfinite(value):
            return {"why": "not finite"}
        if len(history) < MIN_HISTORY:
            return None
        if self.kind == "sigma":
            mean = math.fsum(history) / len(history)
            std = math.sqrt(math.fsum((v - mean) ** 2 for v in history) / len(history))
            spread = max(std, FLAT_SPREAD * abs(mean), 1e-30)
            sigmas = (value - mean) / spread
            if sigmas > self.threshold:
                return {"mean": mean, "std": std, "sigmas": sigmas}
            return None
        median = sorted(history)[len(history) // 2]
        if median > 0 and value > self.threshold * median:
            return {"median": median, "times": value / median}
        return None


class SpikeRules:
    def __init__(self, rules, window):
        self._rules = [_Rule(rule) for rule in rules]
        self._window = int(window)
        self._history = {}  # (rule index, statistic) -> deque of earlier values

    def __bool__(self):
        return bool(self._rules)

    def judge(self, statistics):
        """The rules `statistics` ({name: value}) fire, each as a dict for monitor.jsonl."""
        fired = []
        for index, rule in enumerate(self._rules):
            for name in rule.names(statistics):
                value = statistics[name]
                if value is None:
                    continue
                history = self._history.setdefault((index, name), deque(maxlen=self._window))
                verdict = rule.verdict(value, history)
                if verdict is None:
                    history.append(value)
                    continue
                fired.append(dict(rule=rule.text, statistic=name, value=value if math.isfinite(value) else None,
                                  steps=len(history), **verdict))
        return fired


def describe(step, trigger):
    """One line for stderr and for the ring's reason."""
    value = trigger["value"]
    if "why" in trigger:
        detail = "is not finite"
    elif "sigmas" in trigger:
        detail = "%.4g is %.1f sigma above the mean of the %d steps before (%.4g, sigma %.3g)" % (
            value, trigger["sigmas"], trigger["steps"], trigger["mean"], trigger["std"])
    else:
        detail = "%.4g is %.1f times the median of the %d steps before (%.4g)" % (
            value, trigger["times"], trigger["steps"], trigger["median"])
    return "monitor: step %d: %s %s (%s)" % (step, trigger["statistic"], detail, trigger["rule"])
