"""Replaying one recorded call, in one of three modes:

- "exact": the op on the recorded inputs, its result compared bit for bit with the recorded outputs;
- "reference": the op on the inputs widened to float64, the recorded outputs judged against that
  result by the per-dtype thresholds (reference.py);
- "random": the op on inputs made from the recorded shapes, dtypes and ranges, the result judged
  against the same op on those inputs widened to float64 (config replay).

Each returns a result dict: seq, op, status ("match", "mismatch", "skipped"), reason, max_abs,
max_rel, and for the last two modes mean_rel and threshold."""
import contextlib
import os
import sys
import warnings

from . import arrays, ops, outputs, reference
from .random_inputs import RandomArrays
from .trace_file import TORCH_THREADS
from .values import CannotRebuild, ObjectBuilder, Unreadable, array_file, pointer_label, python_type_of, walk_call

MODES = ("exact", "reference", "random")


def replay(run_dir, record, mode, seed=0):
    result = new_result(record)
    try:
        _replay_into(result, run_dir, record, mode, seed)
    except CannotRebuild as why:
        result.update(status="skipped", reason=str(why))
    except Unreadable as why:
        result.update(status="mismatch", reason="recorded data unreadable: %s" % why)
    return result


def new_result(record):
    """A call's result before it is replayed: skipped, no errors."""
    return {"seq": record.get("seq"), "op": record.get("op"), "status": "skipped", "reason": "",
            "max_abs": None, "max_rel": None, "source": record.get("source")}


def replayable(record, mode="reference"):
    """The op to call for `record`, with torch's threads set as the call had them; CannotRebuild
    with the reason when the call must not be replayed (in a float64 mode: also one that raised)."""
    skip = ops.skip_reason(record)
    if skip:
        raise CannotRebuild(skip)
    if record.get("error") and mode != "exact":
        raise CannotRebuild("the recorded call raised: no output to judge")
    function = ops.resolve(record["op"])
    _use_torch_threads(record.get(TORCH_THREADS))
    return function


def float64_outputs(run_dir, record, function, substitute=None):
    """The outputs (as the recorder lists them) of `function` run on the recorded call's inputs
    widened to float64, as --reference float64 runs it. `substitute(spec, pointer)` may give an
    input array's value instead of its file (None: the file); `ophook blame` feeds a call the
    float64 outputs of the calls that made its inputs so."""
    args, kwargs = _arguments(record, _file_loader(run_dir, record.get("framework"), substitute))
    produced = _call(function, *_widened((args, kwargs)), record.get("grad_enabled", True))
    _raise_if_failed(produced, "the float64 reference")
    return outputs.as_outputs(produced)


def reference_tally(run_dir, record, produced):
    """The recorded outputs of `record` judged against `produced` (outputs of a float64 run) by
    the per-dtype thresholds."""
    tally = outputs.Tally()
    tally.judge_plain_values = False  # a dtype argument widened to float64 returns float64 dtypes
    outputs.compare_recorded(record.get("outputs") or [], produced, run_dir, tally, outputs.reference_judge(tally))
    return tally


def _replay_into(result, run_dir, record, mode, seed):
    function = replayable(record, mode)
    tally = outputs.Tally()
    if mode == "random":
        default = _call(function, *_arguments(record, RandomArrays(record, seed)))
        golden = _call(function, *_widened(_arguments(record, RandomArrays(record, seed))))
        _raise_if_failed(golden, "the float64 reference")
        if isinstance(default, BaseException):
            raise CannotRebuild("the op refused the generated inputs: %s" % error_text(default))
        outputs.compare_produced(outputs.as_outputs(default), outputs.as_outputs(golden), tally)
    elif mode == "reference":
        tally = reference_tally(run_dir, record, float64_outputs(run_dir, record, function))
    else:
        args, kwargs = _arguments(record, _file_loader(run_dir, record.get("framework")))
        produced = _call(function, args, kwargs, record.get("grad_enabled", True))
        if isinstance(produced, BaseException) or record.get("error"):
            return _judge_error(result, record, produced)
        outputs.compare_recorded(record.get("outputs") or [], outputs.as_outputs(produced), run_dir, tally,
                                 outputs.exact_judge(tally))
    conclude(result, tally, mode)


def _arguments(record, load):
    return walk_call(record, ObjectBuilder(load, share=arrays.shared_view))


def _widened(call):
    args, kwargs = call
    return reference.widen(args), reference.widen(kwargs)


def _file_loader(run_dir, framework, substitute=None):
    """Loads an input from the file its own record names (never one that same_as points to), unless
    `substitute(spec, pointer)` gives its value."""
    def load(spec, pointer):
        if substitute is not None:
            value = substitute(spec, pointer)
            if value is not None:
                return value
        device = spec.get("device") or "cpu"
        python_type = python_type_of(spec, framework)
        if python_type == "torch.Tensor" and device != "cpu":
            _require_device(device, pointer)
        name = array_file(spec, pointer)
        try:
            return arrays.load_array(os.path.join(run_dir, name), spec.get("dtype"), python_type, device,
                                     spec.get("strides"), bool(spec.get("requires_grad")))
        except (OSError, ValueError, EOFError) as error:
            raise Unreadable("%s: %s: %s" % (pointer_label(pointer), name, error))
        except (TypeError, AttributeError) as error:  # a dtype this NumPy or torch does not have
            raise CannotRebuild("%s: dtype %s: %s" % (pointer_label(pointer), spec.get("dtype"), error))
    return load


def _require_device(device, pointer):
    import torch

    try:
        torch.empty(0, device=device)
    except (RuntimeError, AssertionError) as error:
        raise CannotRebuild("%s: device %s is not available here (%s)" % (pointer_label(pointer), device, error))


def _call(function, args, kwargs, grad_enabled=True):
    """The op's result, or the exception it raised; with torch's grad mode off where the recorded
    call ran with it off (`"grad_enabled": false`, noted when an input required grad)."""
    try:
        with warnings.catch_warnings(), _grad_mode(grad_enabled):
            warnings.simplefilter("ignore")
            return function(*args, **kwargs)
    except Exception as error:  # the op's own exception is a result to compare
        return error


_default_torch_threads = []


def _use_torch_threads(count):
    """torch's intra-op threads as the recorded call ran with them (`count`), else as this process
    started with them."""
    torch = sys.modules.get("torch")
    if torch is None:
        return
    if not _default_torch_threads:
        _default_torch_threads.append(torch.get_num_threads())
    wanted = count or _default_torch_threads[0]
    if torch.get_num_threads() != wanted:
        torch.set_num_threads(wanted)


def _grad_mode(enabled):
    if enabled:
        return contextlib.nullcontext()
    import torch

    return torch.no_grad()


def _raise_if_failed(produced, what):
    if isinstance(produced, BaseException):
        raise CannotRebuild("%s failed: %s" % (what, error_text(produced)))


def error_text(error):
    return ("%s: %s" % (type(error).__name__, error)).splitlines()[0][:300]


def _judge_error(result, record, produced):
    """A call that raised, or should have: the same exception type is a match."""
    recorded = record.get("error")
    if not isinstance(produced, BaseException):
        return result.update(status="mismatch", reason="returned a value; recorded: %s" % recorded[:300])
    if not recorded:
        return result.update(status="mismatch", reason="raised %s" % error_text(produced))
    recorded_type = recorded.split(":", 1)[0].rsplit(".", 1)[-1]
    if type(produced).__name__ == recorded_type:
        return result.update(status="match", reason="raised as recorded: %s" % error_text(produced))
    return result.update(status="mismatch", reason="raised %s; recorded: %s" % (error_text(produced), recorded[:300]))


def conclude(result, tally, mode):
    """`result` updated with what `tally` found: the errors, and match, mismatch or skipped."""
    result.update(max_abs=tally.max_abs, max_rel=tally.max_rel)
    if mode != "exact":
        result.update(mean_rel=tally.mean_rel, threshold=tally.threshold)
    if tally.differences:
        result.update(status="mismatch", reason="; ".join(tally.differences[:3]))
    elif tally.unavailable and not tally.arrays:
        result.update(status="skipped", reason="; ".join(tally.unavailable[:3]))
    else:
        result.update(status="match", reason="" if tally.arrays else "no array output")
