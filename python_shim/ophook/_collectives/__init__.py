"""Collectives as records (docs/ranks.md): every c10d collective and point-to-point call this
process makes — DDP's bucket allreduce, FSDP2's all-gather and reduce-scatter, explicit
torch.distributed calls (c10d_ops), and the functional collectives of funcol, DTensor and
compiled graphs (functional_ops) — is recorded at level `collective` with its process group, the
group's members, the collective's number in the group (both families counted together), its
peer, and its tensors' values as the mode reads them: the inputs when it is issued, the outputs
when it has completed (never by a wait of ophook's).

Kernels are registered with torch.library and exactly undone by uninstall(). Nothing in torch's
Python namespace is replaced; the ops keep their identity and behaviour.

Usage::

    LD_PRELOAD=libophook.so OPHOOK_MODE=stats torchrun --nproc-per-node 4 train.py
    # rank<R>/trace.jsonl: {"op": "c10d.allreduce_", "level": "collective",
    #   "collective": {"group": "0", "ranks": [0, 1, 2, 3], "group_seq": 7, "peer": null, ...}}
"""
from .._ranks import rank_signals as _rank_signals
from . import c10d_ops, functional_ops
from .process_groups import Groups

_libraries = []  # the torch.library.Library objects holding the kernels, while installed


def install(torch):
    """Registers the kernels once torch.distributed is there; a torch without it records none."""
    distributed = getattr(torch, "distributed", None)
    if _libraries or distributed is None or not distributed.is_available():
        return
    import torch.distributed  # noqa: F401  (the ops' groups and works are its types)

    groups = Groups(torch.distributed)
    _libraries.append(c10d_ops.register(torch, groups))
    functional = functional_ops.register(torch, groups)
    if functional is not None:
        _libraries.append(functional)


def uninstall():
    """Removes the kernels; the works seen completed by now are judged, the others are submitted
    unread by the recorder's exit hook (not completed when the run ended)."""
    c10d_ops.settle_unfinished()
    _rank_signals.stop()
    while _libraries:
        _libraries.pop()._destroy()
