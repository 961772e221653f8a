"""The training monitor (OPHOOK_MONITOR, docs/monitor.md): at each optimizer step, statistics of
every parameter the optimizer updates, of the loss and of the gradients, computed by multi-tensor
ops and copied to the host once per step, written to monitor.jsonl (and to TensorBoard where it is
installed), judged by the trigger rules (OPHOOK_MONITOR_TRIGGER). No code change in the program:
optimizer step hooks, the torch_function level's view of backward(), and, for `modules`, a global
module forward hook."""

_monitor = None  # the running TrainingMonitor


def install(torch, native, config):
    """Starts the monitor when the running configuration asks for one (once per process)."""
    global _monitor
    if _monitor is not None or not config.get("monitor"):
        return
    from .training_monitor import TrainingMonitor

    _monitor = TrainingMonitor(torch, native, config)
    _monitor.start()


def uninstall():
    """Writes what is pending and removes the hooks."""
    global _monitor
    monitor, _monitor = _monitor, None
    if monitor is not None:
        monitor.stop()
