"""A dump on every rank (docs/ranks.md): when a trigger fires on one rank of a torch.distributed job
— its first NaN/Inf (made or received), an uncaught exception, a termination signal,
ophook.dump_ring() — every rank writes its ring, through the job's own store: the TCPStore that
init_process_group connected to (job_store: no new service, no new port, and no collective on the
program's groups, which could reorder or hang the program's own). Each rank opens two clients of its
own to that store — one its watcher waits on, one that sends.

The trigger's rank sets one key saying who and why (the first trigger of the job stands), then
wakes each rank by its own key; each rank's watcher thread waits on its key, off the program's
thread, so a rank stuck in a collective after the failure (the usual aftermath: a timeout) still
writes its ring. Each rank's summary.json says which rank triggered, why, and when it heard
(notes.rank_trigger).
"""
import datetime
import json
import threading
import time

from . import job_store as _job_store

_signals = None  # the running _Signals, once the job's store is known
_lock = threading.Lock()
_WAIT = datetime.timedelta(seconds=3600)  # a watcher's wait, renewed: no traffic while nothing fires


class _Signals:
    def __init__(self, native, distributed, address, rank, world):
        self.native, self.rank, self.world = native, rank, world
        self.prefix = _job_store.prefix()
        self.store, self.waiting = _job_store.client(distributed, address), _job_store.client(distributed, address)
        self.fired = False
        self.stopping = False
        self.watcher = threading.Thread(target=self._watch, name="ophook-rank-signals", daemon=True)
        self.watcher.start()

    def _key(self, name):
        return self.prefix + name

    def trigger(self, why):
        """Tells every rank to write its ring, once per run; the job's first trigger stands."""
        if self.fired:
            return
        self.fired = True
        message = json.dumps({"rank": self.rank, "why": why, "time": time.time()})
        try:
            stood = self.store.compare_set(self._key("dump"), "", message)
            for rank in range(self.world):
                if rank != self.rank:
                    self.store.set(self._key("wake/%d" % rank), "dump")
        except Exception as error:  # the store is gone (its host died): said once, the local ring stands
            self.native.log("warn", "could not ask the other ranks to write their rings: %s" % error)
            return
        told = json.loads(stood) if isinstance(stood, (bytes, str)) and stood else None
        if told is not None and told.get("rank") != self.rank:
            self._note(told, heard=False)  # another rank's trigger stood first
        else:
            self._note({"rank": self.rank, "why": why, "time": time.time()}, heard=False)

    def _note(self, told, heard):
        note = {"triggered_by_rank": told.get("rank"), "why": told.get("why"), "this_rank": self.rank}
        if heard:
            note["heard_after_s"] = round(max(0.0, time.time() - float(told.get("time", time.time()))), 6)
        self.native.add_note("rank_trigger", json.dumps(note))

    def _watch(self):
        key = self._key("wake/%d" % self.rank)
        while not self.stopping:
            try:
                self.waiting.wait([key], _WAIT)
            except Exception:
                if self.stopping:
                    return
                try:
                    self.waiting.check([key])  # a timeout: wait again; a store that is gone ends the watch
                except Exception:
                    return
                continue
            if self.stopping:
                return
            try:
                told = json.loads(self.waiting.get(self._key("dump")))
            except Exception:
                return
            self.fired = True  # told already: no trigger of this rank's goes out after it
            self._note(told, heard=True)
            self.native.dump_ring("rank %s asked every rank: %s" % (told.get("rank"), told.get("why")))
            return

    def stop(self):
        self.stopping = True
        try:
            self.store.set(self._key("wake/%d" % self.rank), "exit")  # the watcher returns at once
        except Exception:
            pass
        self.watcher.join(timeout=1.0)


def start(native):
    """Starts this rank's signals once torch.distributed is initialised (called as collectives are
    issued and at optimizer steps: the first points after init_process_group a job reaches)."""
    global _signals
    if _signals is not None:
        return
    import sys

    distributed = sys.modules.get("torch.distributed")
    if distributed is None or not distributed.is_available() or not distributed.is_initialized():
        return
    with _lock:
        if _signals is not None:
            return
        try:
            address = _job_store.address(distributed)
            if address is None:
                _signals = False
                native.log("warn", "this job's store has no address (a FileStore or HashStore): a trigger "
                                   "writes the ring of its own rank only")
                return
            _signals = _Signals(native, distributed, address, distributed.get_rank(), distributed.get_world_size())
            native.set_trigger_listener(trigger)  # the first NaN/Inf and a termination signal, from C++
        except Exception as error:
            _signals = False
            native.log("warn", "the ranks of this job cannot ask each other to write their rings: %s" % error)


def trigger(why):
    """A trigger fired on this rank: every rank writes its ring (no-op outside a started job)."""
    if _signals:
        _signals.trigger(why)


def stop():
    global _signals
    if _signals:
        _signals.native.set_trigger_listener(None)
        _signals.stop()
    _signals = None
