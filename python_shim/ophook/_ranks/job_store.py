"""The job's own store (docs/ranks.md): the TCPStore that init_process_group connected to, through
which ophook's ranks speak to each other — a trigger's word to write the rings (rank_signals), the
replicas' digests (_monitor/replica_exchange) — each over clients of ophook's own: no new service,
no new port, and no collective on the program's groups, which could reorder or hang the program's
own."""
import datetime
import os


def address(distributed):
    """(host, port) of the TCPStore under the default group's store, or None (a FileStore, a
    HashStore)."""
    store = distributed.distributed_c10d._get_default_store()
    while hasattr(store, "underlying_store"):  # PrefixStore
        store = store.underlying_store
    host, port = getattr(store, "host", None), getattr(store, "port", None)
    return (host, port) if host and port else None


def client(distributed, where):
    """A client of ophook's own to the store at `where`: a client serves one call at a time, so
    each waiting thread of ophook's has its own, and none holds one that another call needs."""
    return distributed.TCPStore(where[0], where[1], is_master=False, wait_for_workers=False,
                                timeout=datetime.timedelta(seconds=30))


def prefix():
    """The start of this run's keys: a restarted job's (TORCHELASTIC_RESTART_COUNT) are its own."""
    run = os.environ.get("TORCHELASTIC_RUN_ID", "") + "." + os.environ.get("TORCHELASTIC_RESTART_COUNT", "0")
    return "ophook/%s/" % run
