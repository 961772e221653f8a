"""ophook's work at each optimizer step, behind one pair of optimizer step hooks (step_hooks).

The training monitor (OPHOOK_MONITOR, docs/monitor.md): at each optimizer step, statistics of
every parameter the optimizer updates, of the loss and of the gradients, computed by multi-tensor
ops and copied to the host once per step, written to monitor.jsonl (and to TensorBoard where it is
installed), judged by the trigger rules (OPHOOK_MONITOR_TRIGGER). No code change in the program:
optimizer step hooks, the torch_function level's view of backward(), and, for `modules`, a global
module forward hook.

The replica check (OPHOOK_REPLICAS, docs/ranks.md): every K steps, the digests of DDP's replicas
compared across the ranks through the job's store."""

_running = None  # (StepHooks, [what stops with them]) while installed


def install(torch, native, config):
    """Starts the monitor and the replica check that the running configuration asks for (once per
    process)."""
    global _running
    if _running is not None or not (config.get("monitor") or config.get("replicas")):
        return
    from .step_hooks import StepHooks

    before, after, parts = [], [], []
    if config.get("monitor"):
        from .training_monitor import TrainingMonitor

        monitor = TrainingMonitor(torch, native, config)
        monitor.start()
        before.append(monitor.before_step), after.append(monitor.after_step), parts.append(monitor)
    if config.get("replicas"):
        from .replica_check import ReplicaCheck

        check = ReplicaCheck(torch, native, config["replicas"])
        after.append(check.after_step), parts.append(check)
    hooks = StepHooks(torch, native, before, after)
    hooks.start()
    _running = (hooks, parts)


def uninstall():
    """Removes the hooks, then writes what is pending."""
    global _running
    running, _running = _running, None
    if running is not None:
        hooks, parts = running
        hooks.stop()
        for part in parts:
            part.stop()
