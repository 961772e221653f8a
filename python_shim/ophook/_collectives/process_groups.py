"""What every collective's record says of its process group, the same whichever op family issued
it (c10d's ops, the functional collectives): the group's name, its members' global ranks and the
collective's number in the group."""


class ProcessGroup:
    """How a call's process group appears among its recorded arguments: {"kind": "ProcessGroup",
    "repr": "ProcessGroup(group='0', ranks=[0, 1])"}, the same on every run (no address)."""
    __slots__ = ("text",)

    def __init__(self, text):
        self.text = text

    def __repr__(self):
        return self.text


class Groups:
    """Each group's facts, by its name (unique in a process): its members' global ranks and the
    number of collectives this process issued on it so far, of either family, which every member
    counts alike."""

    def __init__(self, distributed):
        self.distributed = distributed
        self.facts = {}

    def issue(self, group):
        """The facts of a collective issued on `group` (a ProcessGroup), counted."""
        facts = self.facts.get(group.group_name) or self._learn(group)
        facts[3] += 1
        return facts

    def issue_named(self, name):
        """The same for the group named `name`, as the functional collectives name theirs."""
        facts = self.facts.get(name)
        if facts is None:
            facts = self._learn(self.distributed.distributed_c10d._resolve_process_group(name))
        facts[3] += 1
        return facts

    def _learn(self, group):
        name = group.group_name
        try:
            ranks = self.distributed.get_process_group_ranks(group)
        except Exception:  # a group torch.distributed does not know (made by hand): its size
            ranks = list(range(group.size()))
        facts = self.facts[name] = [name, ranks, "[%s]" % ",".join(str(r) for r in ranks), 0,
                                    ProcessGroup("ProcessGroup(group=%r, ranks=%r)" % (name, ranks))]
        return facts

    @staticmethod
    def global_peer(peer, ranks):
        """The ops take group ranks; records name global ones (-1: none)."""
        if isinstance(peer, int) and 0 <= peer < len(ranks):
            return ranks[peer]
        return -1 if peer is None else peer


def traced(tensor):
    """A tensor that stands for one (meta, a fake or functional tensor while a graph is traced)."""
    return tensor.device.type == "meta" or type(tensor).__name__ in ("FakeTensor", "FunctionalTensor")


def holds_tensors(value):
    return hasattr(value, "device") or (isinstance(value, (list, tuple)) and any(holds_tensors(v) for v in value))


def tensors(args, positions):
    """The tensors among args[i] for i in positions, lists opened."""
    for i in positions:
        value = args[i] if i < len(args) else None
        stack = [value]
        while stack:
            item = stack.pop()
            if isinstance(item, (list, tuple)):
                stack.extend(item)
            elif hasattr(item, "device"):
                yield item
