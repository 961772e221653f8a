"""Every figure group bench.py runs, in table order: one module per subject, each a tuple GROUPS of
(group, figures, function that measures them)."""
from . import bisect, compare, cpp, devices, monitor, numpy_ops, process, ranks, replay, storage, torch_ops, values

FIGURE_GROUPS = (numpy_ops.GROUPS + torch_ops.GROUPS + values.GROUPS + monitor.GROUPS + ranks.GROUPS
                 + devices.GROUPS + storage.GROUPS + process.GROUPS
                 + compare.GROUPS + replay.GROUPS + bisect.GROUPS + cpp.GROUPS)
