"""The scalars of one step, gathered where the tensors live and read to the host once: one float64
vector per device, copied without blocking into pinned memory on an accelerator (its values are
read when its event has completed, a step or more later) and read at once on the CPU; values
computed on the host already (the CPU parameters' statistics) are kept as they are."""
from .._torch.device import Suspended


class ScalarBatch:
    def __init__(self, torch):
        self._torch = torch
        self._parts = {}  # device -> [(keys, float64 vector)]
        self._read = None  # device -> (keys, host vector, event or None)
        self._host = {}  # key -> float
        self._parameters = {}  # parameter name -> {statistic: value}, its line's

    def add(self, keys, values):
        """`values`: 0-d tensors of one device and dtype (a multi-tensor op's results), one per key."""
        if not values:
            return
        vector = self._torch.stack(values).to(self._torch.float64)
        self._parts.setdefault(vector.device, []).append((list(keys), vector))

    def add_host(self, keys, values):
        """`values`: floats, one per key."""
        self._host.update(zip(keys, values))

    def add_parameter(self, name, statistics):
        """A parameter's statistics read on the host already, as its line shows them."""
        self._parameters[name] = statistics

    def parameters(self):
        """{parameter name: {statistic: value}} of add_parameter."""
        return self._parameters

    def launch(self):
        """Starts every device's copy to the host."""
        torch = self._torch
        self._read = {}
        for device, parts in self._parts.items():
            keys = [key for part_keys, _ in parts for key in part_keys]
            vector = torch.cat([vector for _, vector in parts])
            if device.type == "cpu":
                self._read[device] = (keys, vector, None)
                continue
            host = torch.empty(vector.shape, dtype=vector.dtype, pin_memory=True)
            host.copy_(vector, non_blocking=True)
            event = torch.cuda.Event() if device.type == "cuda" else None
            if event is not None:
                event.record()
            self._read[device] = (keys, host, event)
        self._parts = {}

    def ready(self):
        return all(event is None or event.query() for _, _, event in self._read.values())

    def values(self):
        """{key: float}; waits for copies not complete yet (at the end of the run)."""
        out = dict(self._host)
        for keys, vector, event in self._read.values():
            if event is not None:
                event.synchronize()
            with Suspended():  # unseen by the program's own modes
                out.update(zip(keys, vector.tolist()))
        return out
