"""Every figure group bench.py runs, in table order."""
import figures_bisect
import figures_compare
import figures_cpp
import figures_devices
import figures_monitor
import figures_numpy
import figures_process
import figures_ranks
import figures_replay
import figures_storage
import figures_torch
import figures_values

FIGURE_GROUPS = (figures_numpy.GROUPS + figures_torch.GROUPS + figures_values.GROUPS + figures_monitor.GROUPS + figures_ranks.GROUPS
                 + figures_devices.GROUPS + figures_storage.GROUPS + figures_process.GROUPS
                 + figures_compare.GROUPS + figures_replay.GROUPS + figures_bisect.GROUPS + figures_cpp.GROUPS)
