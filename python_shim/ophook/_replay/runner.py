"""Running replay tasks on all cores, with a progress bar on a terminal.

Calls are independent (each reads only its own files), so tasks go to a pool of worker processes.
The workers are forked before this process imports NumPy or torch, and import them themselves:
forking a process whose OpenMP pool is running can hang the child. Each call sets torch's
intra-op thread count to the recorded call's (call._use_torch_threads), because a large
reduction's result depends on it."""
import multiprocessing
import sys

from . import call

# Below this many tasks a pool costs more (each worker imports torch) than it saves.
MIN_TASKS_FOR_POOL = 64
CHUNK = 8


def run_tasks(tasks, jobs, label="replay"):
    """Replays `tasks` ((run_dir, record, mode, seed) tuples) and returns their results in order."""
    progress = _progress(len(tasks), label)
    results = []
    try:
        if jobs > 1 and len(tasks) >= MIN_TASKS_FOR_POOL:
            with multiprocessing.get_context("fork").Pool(min(jobs, len(tasks))) as pool:
                for result in pool.imap(_run_task, tasks, chunksize=CHUNK):
                    results.append(result)
                    progress.update(1)
        else:
            for task in tasks:
                results.append(_run_task(task))
                progress.update(1)
    finally:
        progress.close()
    return results


def _run_task(task):
    run_dir, record, mode, seed = task
    try:
        return call.replay(run_dir, record, mode, seed)
    except Exception as error:  # a failure of the replay itself: visible in the report, never a match
        return {"seq": record.get("seq"), "op": record.get("op"), "status": "skipped",
                "reason": "replay failed: %s" % call.error_text(error),
                "max_abs": None, "max_rel": None, "source": record.get("source")}


class _NoProgress:
    def update(self, n):
        pass

    def close(self):
        pass


def _progress(total, label):
    """A tqdm bar on stderr when it is a terminal (and tqdm is installed), else nothing."""
    if not sys.stderr.isatty() or total < 2:
        return _NoProgress()
    try:
        from tqdm import tqdm
    except ImportError:
        return _NoProgress()
    return tqdm(total=total, desc=label, unit="call", file=sys.stderr, leave=False, dynamic_ncols=True)
