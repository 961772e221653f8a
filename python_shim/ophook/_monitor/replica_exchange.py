"""The replicas' digests through the job's store (OPHOOK_REPLICAS, docs/ranks.md). On each rank a
thread of ophook's, never the program's, takes what replica_check hands it: a member of a group
publishes each check step's digests under a key of its own, `replicas/<group>/<step>/<rank>`; the
group's first rank waits for every member's key of that step (its own client, its own thread: a
rank that is late or gone holds up nothing of the program's), reads and deletes them, and names
the first parameter whose digests part, with the ranks — one warning, and a key the members read
at their next check without waiting, so that every summary that hears of it says it
(notes.replicas). The first rank also says which step it has compared up to: at the end of the run
a member waits (within the grace) until its own last check is compared, so that the parting found
at the last check is in its summary too. Replicas that parted stay apart: the first parting is the answer, and checking
stops there."""
import datetime
import json
import queue
import threading
import time

from .._ranks import job_store as _job_store

_WAIT = datetime.timedelta(seconds=1)  # the first rank's waits, renewed: the end of the run is heard within this
_GRACE_S = 10.0  # at the end of the run, how long the last check may wait for the others' digests
_POLL_S = 0.02  # a member's look at the first rank's progress, at the end of the run
_RANKS_SHOWN = 8  # a warning names at most this many ranks, then counts them


def parting(names, digests):
    """The first parameter whose digests differ between ranks — `digests` {rank: [digest per name]}
    — or None: {"parameter", "ranks": those outside the value most ranks hold (every rank when no
    value is held by more ranks than each other one), "agreeing": that value's ranks,
    "digests": {rank: digest}}. A rank holding fewer parameters parts at the first it lacks."""
    ranks = sorted(digests)
    for i in range(max(len(values) for values in digests.values())):
        holders = {}
        for rank in ranks:
            holders.setdefault(digests[rank][i] if i < len(digests[rank]) else None, []).append(rank)
        if len(holders) == 1:
            continue
        sizes = sorted((len(held) for held in holders.values()), reverse=True)
        agreeing = max(holders.values(), key=len) if sizes[0] > sizes[1] else []
        return {"parameter": names[i] if i < len(names) else "parameter #%d" % i,
                "ranks": [rank for rank in ranks if rank not in agreeing], "agreeing": agreeing,
                "digests": {str(rank): digests[rank][i] if i < len(digests[rank]) else None for rank in ranks}}
    return None


def _ranks(ranks):
    if len(ranks) == 1:
        return "rank %d" % ranks[0]
    shown = ", ".join(str(rank) for rank in ranks[:_RANKS_SHOWN])
    return "ranks %s%s" % (shown, " … (%d ranks)" % len(ranks) if len(ranks) > _RANKS_SHOWN else "")


def describe(verdict):
    """The warning's words for a parting."""
    where = "replicas parted at step %d: %s" % (verdict["step"], verdict["parameter"])
    if verdict["agreeing"]:
        return "%s on %s differs from %s (process group %s)" % (
            where, _ranks(verdict["ranks"]), _ranks(verdict["agreeing"]), verdict["group"])
    return "%s differs between %s, no value held by most (process group %s)" % (
        where, _ranks(verdict["ranks"]), verdict["group"])


class ReplicaExchange:
    @classmethod
    def start(cls, native, distributed, every):
        """The exchange of this rank, or False (said once) where the job's store cannot carry it."""
        try:
            where = _job_store.address(distributed)
            if where is None:
                native.log("warn", "OPHOOK_REPLICAS: this job's store has no address (a FileStore or HashStore): "
                                   "replicas are not compared")
                return False
            return cls(native, distributed, where, distributed.get_rank(), every)
        except Exception as error:
            native.log("warn", "OPHOOK_REPLICAS: the ranks cannot exchange digests: %s" % error)
            return False

    def __init__(self, native, distributed, where, rank, every):
        self._native, self._rank, self._every = native, rank, every
        self._store = _job_store.client(distributed, where)
        self._prefix = _job_store.prefix() + "replicas/"
        self._jobs = queue.Queue()
        self._groups = {}  # group name -> what notes.replicas says of it
        self._submitted = {}  # group name -> the last step this member published
        self._deadline = None  # set at the end: the last checks wait for the others until then
        self._failure = None
        self.parted = None
        self._thread = threading.Thread(target=self._run, name="ophook-replicas", daemon=True)
        self._thread.start()

    def submit(self, step, group, ranks, names, digests):
        """Hands one group's digests of `step` (ints, in the order of `names`) to the thread."""
        self._jobs.put((step, group, ranks, names, ["%016x" % digest for digest in digests]))

    def _key(self, group, step, rank):
        return self._prefix + "%s/%d/%d" % (group, step, rank)

    def _run(self):
        while True:
            job = self._jobs.get()
            if job is not None and self.parted is not None:
                continue
            try:
                if job is None:
                    self._hear_the_last_checks()
                    return
                self._check(*job)
            except Exception as error:  # the store is gone (its host ended): said once, no more checks
                self._failure = str(error)
                self._native.log("warn", "OPHOOK_REPLICAS: the check stopped: %s" % error)
                return

    def _check(self, step, group, ranks, names, mine):
        first = min(ranks)
        facts = self._groups.setdefault(group, {"group": group, "ranks": list(ranks), "compared_by_rank": first,
                                                "parameters": len(names), "checks": 0, "unanswered": 0})
        if self._rank != first:
            self._store.set(self._key(group, step, self._rank), json.dumps(mine))
            facts["checks"] += 1
            self._submitted[group] = step
            self._hear(group)
            return
        digests = {self._rank: mine}
        for rank in ranks:
            if rank == self._rank:
                continue
            key = self._key(group, step, rank)
            if not self._arrived(key):
                facts["unanswered"] += 1
                self._store.set(self._prefix + "%s/compared" % group, str(step))  # no member waits for it
                return
            digests[rank] = json.loads(self._store.get(key))
            self._store.delete_key(key)  # read by this rank only: the store holds a check's keys until then
        facts["checks"] += 1
        verdict = parting(names, digests)
        if verdict is not None:
            verdict.update(step=step, group=group)
            self.parted = verdict
            self._native.log("warn", describe(verdict))
            self._store.set(self._prefix + "%s/parted" % group, json.dumps(verdict))
        self._store.set(self._prefix + "%s/compared" % group, str(step))  # after the verdict: read in that order

    def _hear(self, group):
        """A member: takes the group's parting when the first rank has told of one."""
        told = self._prefix + "%s/parted" % group
        if self._store.check([told]):
            self.parted = json.loads(self._store.get(told))
        return self.parted is not None

    def _hear_the_last_checks(self):
        """A member at the end of the run: waits, until the grace has passed, for the first rank to
        have compared this member's last check of each group, then takes any parting."""
        for group, step in self._submitted.items():
            compared = self._prefix + "%s/compared" % group
            while not self._hear(group):
                if self._store.check([compared]) and int(self._store.get(compared)) >= step:
                    self._hear(group)  # the verdict is set before the step it compared
                    break
                if time.monotonic() > self._deadline:
                    break
                time.sleep(_POLL_S)

    def _arrived(self, key):
        """Waits for `key`; False once the end of the run has come and its grace has passed."""
        while True:
            try:
                self._store.wait([key], _WAIT)
                return True
            except Exception:
                if self._deadline is not None and time.monotonic() > self._deadline:
                    return False
                self._store.check([key])  # a timeout waits again; a store that is gone raises here

    def stop(self, left_out, program_thread_s):
        """Lets the last checks finish (within the grace), then notes what was checked and what the
        checks took of the program's thread (`program_thread_s`: the digests; the store is ours)."""
        self._deadline = time.monotonic() + _GRACE_S
        self._jobs.put(None)
        self._thread.join(timeout=_GRACE_S + 2 * _WAIT.total_seconds())
        note = {"every": self._every, "this_rank": self._rank, "groups": list(self._groups.values()),
                "left_out": left_out, "parted": self.parted, "program_thread_ms": round(program_thread_s * 1e3, 3)}
        if self._failure is not None:
            note["failure"] = self._failure
        self._native.add_note("replicas", json.dumps(note))
