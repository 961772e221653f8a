"""How much of the run's final error each call explains.

The final result is bisect's: the floating outputs of the last blamed call that has any and that
the chain replayed (the loss, the logits). Its error is bisect's `max |x - ref| / max |ref|`, the
recorded result against the chain's. A call's **share** is the final error it makes on its own:
the chain run again from that call on, everything in float64 except that call's output, which gets
its local error (recorded output minus the float64 output on its recorded inputs, added to the
chain's value; a NaN or Inf the call recorded where float64 has a number stays one), over the
recorded run's final error. Near 1 for a call whose rounding alone loses the result; near 0 for a
call whose rounding the result does not feel, whatever its local error; first-order (a call's share
is measured with every other call exact), so shares need not add up to 1.

Shares are measured for the calls whose local error is largest against their dtype's threshold
(the `candidates` most severe), since each costs a run of the chain below it."""
import numpy as np

from .._bisect.result import FLOAT_DTYPES, read_result, relative_error
from .._replay import arrays, call, outputs
from .._replay.values import CannotRebuild, Unreadable
from .chain import float64_function, substitute, value_at
from .links import output_arrays


def result_pointers(record):
    """The output pointers bisect reads as a call's result: its floating arrays with a file."""
    return [p for p, spec in output_arrays(record) if spec.get("dtype") in FLOAT_DTYPES and spec.get("file")]


def result_call(calls, results):
    """The last blamed call with a floating output file that the chain replayed, or None."""
    for record, result in zip(reversed(calls), reversed(results)):
        if result["status"] != "skipped" and result_pointers(record):
            return record
    return None


def recorded_result(run_dir, record):
    return read_result(run_dir, [record])


def chain_result(record, values):
    found = [values.get((record["seq"], p)) for p in result_pointers(record)]
    if any(v is None for v in found):
        return None
    return {"arrays": [np.asarray(arrays.saved_form(v), dtype=np.float64) for v in found]}


def severity(result):
    """How many times its local error is over its dtype's pass line (mean rel < T, max rel < 10 T),
    the larger of the two; 0 for a call without a floating error."""
    threshold = result.get("threshold")
    if not threshold or result.get("max_rel") is None:
        return 0.0
    mean = result.get("mean_rel") or 0.0
    return max(mean / threshold, result["max_rel"] / (10 * threshold))


def with_local_error(chain, record, values):
    """The chain's values of `record`'s kept outputs with the call's local error added; {} when it
    has none to add."""
    local = call.float64_outputs(chain.run_dir, record, float64_function(record))
    changed = {}
    for pointer, spec in output_arrays(record):
        key = (record["seq"], pointer)
        base, golden = values.get(key), value_at(local, pointer)
        if base is None or not outputs.is_array(golden) or not spec.get("file"):
            continue
        base_array = np.asarray(arrays.saved_form(base))
        if base_array.dtype.kind not in "fc":
            continue
        recorded = outputs.read_recorded(chain.run_dir, spec, pointer).astype(base_array.dtype)
        gold = np.asarray(arrays.saved_form(golden)).astype(base_array.dtype)
        if recorded.shape != base_array.shape or gold.shape != base_array.shape:
            continue
        with np.errstate(all="ignore"):
            kept_special = ~np.isfinite(recorded) & np.isfinite(gold)
            injected = np.where(kept_special, recorded, base_array + (recorded - gold))
        changed[key] = _like(base, injected)
    return changed


def _like(base, array):
    """`array` as the kind of value `base` is (ndarray, NumPy scalar or tensor on its device)."""
    if isinstance(base, np.ndarray):
        return array
    if isinstance(base, np.generic):
        return array[()]
    import torch

    return torch.from_numpy(np.ascontiguousarray(array)).to(device=base.device, dtype=base.dtype)


def final_error_alone(chain, index, final_record, reference_result):
    """The final error when only the call at `index` of the chain rounds as recorded."""
    values = chain.values
    changed = with_local_error(chain, chain.calls[index], values)
    if not changed:
        return 0.0
    for record in chain.calls[index + 1:]:
        inputs = chain.chain_inputs(record, changed)
        if not inputs:
            continue
        everything = {**chain.chain_inputs(record, values), **inputs}
        try:
            produced = call.float64_outputs(chain.run_dir, record, float64_function(record),
                                            lambda spec, pointer, i=everything: substitute(i, spec, pointer))
        except (CannotRebuild, Unreadable):
            continue  # its outputs stay the chain's: error stops here, as it does in the chain
        chain.keep(record, produced, changed)
        if record is final_record:
            break
    merged = {**values, **changed}
    result = chain_result(final_record, merged)
    return float("inf") if result is None else relative_error(result, reference_result)


def measure_shares(chain, final_record, final_error, candidates):
    """Each call's `share` (None where not measured) for the `candidates` most severe calls."""
    reference_result = chain_result(final_record, chain.values)
    order = sorted((i for i, r in enumerate(chain.results) if severity(r) > 0 and r["seq"] <= final_record["seq"]),
                   key=lambda i: -severity(chain.results[i]))[:candidates]
    for i in order:
        alone = final_error_alone(chain, i, final_record, reference_result)
        chain.results[i]["final_alone"] = alone
        chain.results[i]["share"] = _share(alone, final_error)


def _share(alone, final_error):
    if final_error == 0:
        return 0.0
    if np.isinf(final_error):
        return 1.0 if np.isinf(alone) else 0.0
    return alone / final_error
