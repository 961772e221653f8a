"""OPHOOK_REPLICAS=K (docs/ranks.md#replicas-checked): every K optimizer steps, right after the
step, the parameters that DistributedDataParallel keeps identical on every rank of its group are
digested on the program's thread — XXH64 of their bytes, the digest a `stats` record carries, by
the extension with the GIL released — and handed to the exchange's thread (replica_exchange), which
publishes and compares them through the job's store. The program's thread never talks to the store.

Left out, and counted in the note: parameters no DDP module holds (nothing says they are copies of
anything) and DTensor parameters (FSDP2's fully_shard): a rank's local shard is its own part of the
parameter, not a replica of another rank's."""
import sys
import time
import weakref

from .._torch.device import Suspended
from .replica_exchange import ReplicaExchange


class _Plan:
    """What one optimizer's check compares: [(group name, group's global ranks, [Parameter])]."""
    __slots__ = ("count", "groups", "sharded", "not_replicated")

    def __init__(self, count, groups, sharded, not_replicated):
        self.count, self.groups, self.sharded, self.not_replicated = count, groups, sharded, not_replicated


def _watch_ddp_modules(torch, found):
    """A global hook that adds each DDP module to `found` as it takes the module it wraps
    (DistributedDataParallel.__init__ sets self.module): the modules a check compares, known without
    a look at every object of the program. None where torch has no such hook."""
    from torch.nn.modules import module as nn_module

    register = getattr(nn_module, "register_module_module_registration_hook", None)
    if register is None:
        return None
    ddp = torch.nn.parallel.DistributedDataParallel

    def on_submodule(module, name, submodule):
        if issubclass(type(module), ddp):  # type(), as parameter_names does: no __class__ read
            found.add(module)
        return None

    return register(on_submodule)


def _every_ddp_module(torch):
    """The live DDP modules, from all the objects the collector tracks: the fallback when none was
    seen being built (a check started after the model was wrapped), which costs some 100 ms on a
    process holding torch."""
    import gc

    ddp = torch.nn.parallel.DistributedDataParallel
    return [module for module in gc.get_objects() if issubclass(type(module), ddp)]


def _replica_groups(torch, distributed, modules):
    """{id(parameter): (group name, ranks)} for every parameter the DDP `modules` hold."""
    owners = {}
    for module in modules:
        group = module.process_group
        try:
            ranks = distributed.get_process_group_ranks(group)
        except Exception:  # a group torch.distributed does not know: its members as numbered in it
            ranks = list(range(group.size()))
        for parameter in module.parameters():
            owners.setdefault(id(parameter), (group.group_name, tuple(ranks)))
    return owners


def _bytes(torch, tensor):
    """The tensor's bytes in C order as a 1-d uint8 CPU array (a device tensor copied to the host)."""
    flat = tensor.detach().contiguous().reshape(-1).view(torch.uint8)
    return flat.cpu().numpy()


class ReplicaCheck:
    def __init__(self, torch, native, every):
        self._torch, self._native, self._every = torch, native, every
        self._plans = {}  # optimizer index -> _Plan
        self._exchange = None  # ReplicaExchange once the job is initialised; False: none can be had
        self._checked_alone = False  # a check step came while torch.distributed was not initialised
        self._spent_s = 0.0  # on the program's thread, at check steps
        self._ddp_modules = weakref.WeakSet()  # those built since the check started
        self._watch = _watch_ddp_modules(torch, self._ddp_modules)

    def after_step(self, optimizer, kept):
        if kept.step % self._every or self._exchange is False:
            return
        distributed = sys.modules.get("torch.distributed")
        if distributed is None or not distributed.is_available() or not distributed.is_initialized():
            self._checked_alone = True
            return
        if self._exchange is None:
            self._exchange = ReplicaExchange.start(self._native, distributed, self._every)
            if not self._exchange:
                return
        if self._exchange.parted is not None:
            return  # replicas that parted stay apart: the first parting is the answer
        torch = self._torch
        start = time.perf_counter()
        with Suspended():
            plan = self._plan(kept, distributed)
            for group, ranks, parameters in plan.groups:
                digests = self._native.digests([_bytes(torch, p.tensor) for p in parameters])
                self._exchange.submit(kept.step, group, ranks, [p.name for p in parameters], digests)
        self._spent_s += time.perf_counter() - start

    def _plan(self, kept, distributed):
        plan = self._plans.get(kept.index)
        if plan is not None and plan.count == kept.count:
            return plan
        modules = list(self._ddp_modules) or _every_ddp_module(self._torch)
        owners = _replica_groups(self._torch, distributed, modules)
        groups, sharded, not_replicated = {}, 0, 0
        for parameter in kept.parameters:
            owner = owners.get(id(parameter.parameter))
            if parameter.sharded:
                sharded += 1
            elif owner is None:
                not_replicated += 1
            else:
                groups.setdefault(owner, []).append(parameter)
        plan = self._plans[kept.index] = _Plan(kept.count, [(name, ranks, parameters) for (name, ranks), parameters
                                                            in groups.items()], sharded, not_replicated)
        if not plan.groups:
            self._native.log("warn", "OPHOOK_REPLICAS: no parameter of optimizer %d is held by a DistributedDataParallel "
                                     "module (%d DTensor shards, %d others): none is compared"
                             % (kept.index, sharded, not_replicated))
        return plan

    def stop(self):
        if self._watch is not None:
            self._watch.remove()
            self._watch = None
        if self._exchange:
            self._exchange.stop({"sharded": sum(plan.sharded for plan in self._plans.values()),
                                 "not_replicated": sum(plan.not_replicated for plan in self._plans.values())},
                                self._spent_s)
        elif self._checked_alone and self._exchange is None:
            self._native.log("warn", "OPHOOK_REPLICAS: torch.distributed was not initialised at the check steps: "
                                     "no replica was compared")
