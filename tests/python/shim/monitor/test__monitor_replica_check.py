"""ophook._monitor.replica_check's way to the DDP modules it compares: a global hook sees each one
as it is built (a DistributedDataParallel subclass too), so a check looks at no other object; a
check started after the model was wrapped finds the same modules among all the program's objects.
Called directly on the build tree's package, in a gloo group of one process."""
import socket
import sys

import pytest
import torch
import torch.distributed as dist

from harness import SHIM_DIR

sys.path.insert(0, str(SHIM_DIR))  # the package without starting it
from ophook._monitor import replica_check  # noqa: E402


@pytest.fixture()
def group():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    dist.init_process_group("gloo", init_method="tcp://127.0.0.1:%d" % port, rank=0, world_size=1)
    yield dist
    dist.destroy_process_group()


class Wrapped(torch.nn.parallel.DistributedDataParallel):
    pass


def test_ddp_modules_are_seen_as_they_are_built_and_found_by_a_late_check(group):
    import weakref

    found = weakref.WeakSet()
    watch = replica_check._watch_ddp_modules(torch, found)
    try:
        plain = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(3, 2))
        wrapped = Wrapped(torch.nn.Sequential(torch.nn.Linear(2, 2)))
        torch.nn.Sequential(torch.nn.Linear(2, 2))  # no DDP module: not seen
    finally:
        watch.remove()
    after = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(1, 1))  # built once the hook is gone
    assert set(found) == {plain, wrapped}
    late = replica_check._every_ddp_module(torch)
    assert {id(m) for m in late} >= {id(plain), id(wrapped), id(after)}
    owners = replica_check._replica_groups(torch, group, [plain, wrapped])
    expected = {id(p) for p in [*plain.parameters(), *wrapped.parameters()]}
    assert set(owners) == expected
    assert set(owners.values()) == {(group.group.WORLD.group_name, (0,))}
