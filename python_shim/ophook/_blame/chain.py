"""The float64 chain: each blamed call run in float64 on the float64 outputs of the calls that made
its inputs (links.py), its other inputs widened from their files, in seq order. Beside it each
call's local error (its recorded outputs against the op in float64 on its *recorded* inputs, what
`replay --reference float64` judges) and its propagated error (its recorded inputs against the
chain's), and the chain's answer for every output a later call reads.

A call replay skips (a random op, the autograd graph, an input without a file) has no chain value:
the calls reading its outputs read them from their files, so error made before it does not reach
past it."""
import numpy as np

from .._replay import arrays, call, outputs, reference
from .._replay.values import CannotRebuild, Unreadable
from .links import input_arrays, output_arrays


# Methods that narrow a tensor to a dtype they name themselves, with no dtype argument that widening
# could widen: in the float64 program they keep float64 (so that their own rounding is their local
# error, and later calls get float64).
NARROWING_METHODS = ("torch.Tensor.float", "torch.Tensor.half", "torch.Tensor.bfloat16")


def float64_function(record):
    """The op to run for `record` in the float64 program (call.replayable: CannotRebuild when it
    cannot be replayed)."""
    function = call.replayable(record)
    if record["op"] in NARROWING_METHODS:
        import torch

        return torch.Tensor.double
    return function


def value_at(produced, pointer):
    """The item of a call's outputs (as the recorder lists them) at "/outputs/1/0"."""
    value = produced
    for part in pointer.split("/")[2:]:
        if not isinstance(value, (list, tuple)) or int(part) >= len(value):
            return None
        value = value[int(part)]
    return value


def detached(value):
    """A chain value kept for the calls after: off the autograd graph."""
    return value.detach() if hasattr(value, "detach") and not isinstance(value, np.ndarray) else value


def handed_over(value, spec):
    """A kept chain value as a fresh input (ops may write their inputs), requiring grad where the
    recorded input did (kernels choose their path by it; not a leaf, as arrays.load_array makes it)."""
    if isinstance(value, np.ndarray):
        return value.copy()
    if isinstance(value, np.generic):
        return value
    value = value.clone()
    if spec.get("requires_grad") and (value.is_floating_point() or value.is_complex()):
        value = value.requires_grad_(True).clone()
    return value


class Chain:
    """Runs the chain over `calls` (in seq order) with their `links`; `kept` are the (seq, output
    pointer) whose chain values are kept: those a later call reads, and the final result's."""

    def __init__(self, run_dir, calls, links, kept):
        self.run_dir = run_dir
        self.calls = calls
        self.links = links
        self.kept = kept
        self.values = {}  # (seq, output pointer) -> the chain's value
        self.results = []

    def run(self):
        for record in self.calls:
            self.results.append(self._step(record))
        return self.results

    def _step(self, record):
        result = call.new_result(record)
        result.update(module=record.get("module"), phase=record.get("phase"), step=record.get("step"),
                      propagated=None, output_rel=None, chained=False)
        try:
            function = float64_function(record)
            local = call.float64_outputs(self.run_dir, record, function)
            call.conclude(result, call.reference_tally(self.run_dir, record, local), "reference")
            inputs = self.chain_inputs(record, self.values)
            produced = local if not inputs else call.float64_outputs(
                self.run_dir, record, function, lambda spec, pointer: substitute(inputs, spec, pointer))
            result["propagated"] = self._propagated(record, inputs)
            result["chained"] = bool(inputs)
            result["output_rel"] = call.reference_tally(self.run_dir, record, produced).max_rel
            self.keep(record, produced, self.values)
        except CannotRebuild as why:
            result.update(status="skipped", reason=str(why))
        except Unreadable as why:
            result.update(status="mismatch", reason="recorded data unreadable: %s" % why)
        except Exception as error:  # a failure of the replay itself: visible in the report
            result.update(status="skipped", reason="replay failed: %s" % call.error_text(error))
        return result

    def chain_inputs(self, record, values):
        """{input pointer: the chain value of its producer's output} where `values` has one."""
        found = {}
        for pointer, producer in self.links.get(record["seq"], {}).items():
            if producer in values:
                found[pointer] = values[producer]
        return found

    def keep(self, record, produced, values):
        for pointer, _ in output_arrays(record):
            if (record["seq"], pointer) in self.kept:
                value = value_at(produced, pointer)
                if outputs.is_array(value):
                    values[(record["seq"], pointer)] = detached(value)

    def _propagated(self, record, inputs):
        """The largest relative error (MARE) of the recorded inputs the chain replaced, against
        the chain's values; 0 when it replaced none."""
        worst = 0.0
        for pointer, spec in input_arrays(record):
            if pointer not in inputs or reference.threshold_of(spec.get("dtype")) is None:
                continue  # an integer or bool input is equal or not: no relative error
            recorded = outputs.read_recorded(self.run_dir, spec, pointer)
            error = reference.reference_error(recorded, arrays.saved_form(inputs[pointer]), spec.get("dtype"))
            if error["max_rel"] is None:
                return None
            worst = max(worst, error["max_rel"])
        return worst


def substitute(inputs, spec, pointer):
    """The input at `pointer` from `inputs` (chain values), handed over fresh; None: its file."""
    value = inputs.get(pointer)
    return None if value is None else handed_over(value, spec)
