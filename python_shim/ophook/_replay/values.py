"""Recorded values back into Python: the arguments of a trace record rebuilt as objects (to call
the op again) or as Python source (for --emit-script), by one walk over the JSON.

JSON scalars are themselves; arrays are lists unless the record's "tuples" field names their JSON
Pointer; {"kind": "array"} values come from their own .npy file; any other {"kind", "repr"} is
rebuilt only when its kind is known below and its repr has the exact shape that kind prints, and
then as the Python source that makes it — never by evaluating a repr as such."""
import ast
import re


class CannotRebuild(Exception):
    """A value the record does not hold enough of to rebuild it: the call is skipped."""


class Unreadable(Exception):
    """A recorded file that is missing or not a valid .npy: the call's data is damaged."""


def pointer_label(pointer):
    """'/args/1/0' -> 'args[1][0]', '/kwargs/dim' -> 'kwargs.dim' (the names `compare` uses)."""
    parts = pointer.strip("/").split("/")
    label = parts[0]
    if parts[0] == "kwargs" and len(parts) > 1:
        label += "." + parts[1].replace("~1", "/").replace("~0", "~")
        parts = parts[1:]
    return label + "".join("[%s]" % p for p in parts[1:])


def escape_pointer_key(key):
    return key.replace("~", "~0").replace("/", "~1")


def _slice_source(text):
    """slice(1, None, 2); NumPy 2 prints a bound that is a NumPy integer as np.int64(1), which
    slices as the int does."""
    match = re.fullmatch(r"slice\((.*)\)", text)
    if not match:
        return None
    bounds = re.sub(r"\bnp\.u?int(?:8|16|32|64)\((-?\d+)\)", r"\1", match.group(1))
    try:
        parts = ast.literal_eval("(%s,)" % bounds)
    except (ValueError, SyntaxError):
        return None
    if not (isinstance(parts, tuple) and len(parts) == 3
            and all(p is None or type(p) is int for p in parts)):
        return None
    return "slice(%r, %r, %r)" % parts


def _numpy_dtype_source(text):
    match = re.fullmatch(r"dtype\((.*)\)", text, re.S)
    if not match:
        return None
    try:
        spec = ast.literal_eval(match.group(1))
    except (ValueError, SyntaxError):
        return None
    return "np.dtype(%r)" % (spec,)


def _type_source(text):
    match = re.fullmatch(r"<class '([\w.]+)'>", text)
    if not match:
        return None
    name = match.group(1)
    if name in ("bool", "int", "float", "complex", "str", "object"):
        return name
    if re.fullmatch(r"numpy\.(\w+)", name):
        return "np." + name[len("numpy."):]
    return None


def _torch_device_source(text):
    if re.fullmatch(r"device\(type='\w+'(, index=\d+)?\)", text):
        return "torch." + text
    return None


def _complex_source(text):
    try:
        complex(text)
    except ValueError:
        return None
    return "complex(%r)" % text


# kind -> the Python source that rebuilds a value of that kind from its repr, or None.
_KIND_SOURCES = {
    "float": lambda t: {"nan": 'float("nan")', "inf": 'float("inf")', "-inf": 'float("-inf")'}.get(t),
    "int": lambda t: t if re.fullmatch(r"-?\d+", t) else None,
    "complex": _complex_source,
    "slice": _slice_source,
    "ellipsis": lambda t: "Ellipsis" if t == "Ellipsis" else None,
    "type": _type_source,
    "_NoValueType": lambda t: "np._NoValue" if t == "<no value>" else None,
    "torch.device": _torch_device_source,
}
_TORCH_SINGLETON_KINDS = ("torch.dtype", "torch.layout", "torch.memory_format", "torch.qscheme")


def other_source(kind, text):
    """The source rebuilding a recorded {"kind", "repr"} value, or None when it cannot be."""
    if not isinstance(kind, str) or not isinstance(text, str):
        return None
    if kind in _TORCH_SINGLETON_KINDS:
        return text if re.fullmatch(r"torch\.\w+", text) else None
    if kind == "numpy.dtype" or kind.startswith("numpy.dtypes."):
        return _numpy_dtype_source(text)
    make = _KIND_SOURCES.get(kind)
    return make(text) if make else None


def walk(value, pointer, tuples, builder):
    """Rebuilds one recorded value through `builder` (ObjectBuilder or SourceBuilder)."""
    if isinstance(value, list):
        items = [walk(v, "%s/%d" % (pointer, i), tuples, builder) for i, v in enumerate(value)]
        return builder.sequence(items, pointer in tuples)
    if isinstance(value, dict):
        kind = value.get("kind")
        if kind == "array":
            return builder.array(value, pointer)
        if kind == "truncated":
            raise CannotRebuild("%s was cut short in the record (%s)" % (pointer_label(pointer), value.get("repr")))
        source = other_source(kind, value.get("repr"))
        if source is None:
            raise CannotRebuild("%s (%s %r) cannot be rebuilt" % (pointer_label(pointer), kind, value.get("repr")))
        return builder.other(source)
    return builder.scalar(value)


def walk_call(record, builder):
    """(args, kwargs) of a record, through `builder`."""
    tuples = set(record.get("tuples") or ())
    args = [walk(v, "/args/%d" % i, tuples, builder) for i, v in enumerate(record.get("args") or [])]
    kwargs = {k: walk(v, "/kwargs/" + escape_pointer_key(k), tuples, builder)
              for k, v in (record.get("kwargs") or {}).items()}
    return args, kwargs


def python_type_of(spec, framework):
    """What a recorded array was: its "python_type" when the record says, else the array of its
    call's framework."""
    return spec.get("python_type") or ("torch.Tensor" if framework == "torch" else "numpy.ndarray")


def array_file(spec, pointer):
    """The .npy name a recorded array value names itself (never its same_as)."""
    name = spec.get("file")
    if not name:
        why = spec.get("reason") or "recorded without data"
        raise CannotRebuild("%s has no file (%s)" % (pointer_label(pointer), why))
    if "/" in name or name in (".", ".."):
        raise Unreadable("%s names %r, which is not a file of the run directory" % (pointer_label(pointer), name))
    return name


class ObjectBuilder:
    """Rebuilds values as Python objects; arrays through `load(spec, pointer)`. One array file
    named twice in a record (`a += b` is add(a, b, out=(a,))) is loaded once: the same object. An
    array recorded as a view into an earlier one ("view_of": its pointer) goes through
    `share(earlier, spec, loaded)`, which may make it that view."""

    def __init__(self, load, share=None):
        self._load = load
        self._share = share
        self._loaded = {}
        self._built = {}  # pointer -> array, for the views after it

    def array(self, spec, pointer):
        key = spec.get("file") or pointer
        if key not in self._loaded:
            self._loaded[key] = self._load(spec, pointer)
        value = self._loaded[key]
        if self._share is not None and spec.get("view_of") in self._built:
            value = self._share(self._built[spec["view_of"]], spec, value)
        self._built[pointer] = value
        return value

    def sequence(self, items, is_tuple):
        return tuple(items) if is_tuple else items

    def scalar(self, value):
        return value

    def other(self, source):
        return evaluate_source(source)


class SourceBuilder:
    """Rebuilds values as Python source text; arrays through `load(spec, pointer)` -> text."""

    def __init__(self, load):
        self._load = load

    def array(self, spec, pointer):
        return self._load(spec, pointer)

    def sequence(self, items, is_tuple):
        if is_tuple:
            return "(%s)" % (items[0] + "," if len(items) == 1 else ", ".join(items))
        return "[%s]" % ", ".join(items)

    def scalar(self, value):
        if isinstance(value, float) and value != value:
            return 'float("nan")'
        return repr(value)

    def other(self, source):
        return source


_evaluated = {}


def evaluate_source(source):
    """The object `source` (made by other_source, so one of a few known shapes) stands for."""
    if source not in _evaluated:
        namespace = {"__builtins__": {}, "float": float, "complex": complex, "slice": slice, "bool": bool,
                     "int": int, "str": str, "object": object, "Ellipsis": Ellipsis}
        if "np." in source:
            import numpy as np
            namespace["np"] = np
        if "torch." in source:
            import torch
            namespace["torch"] = torch
        try:
            _evaluated[source] = eval(source, namespace)  # noqa: S307 - validated shapes only
        except Exception as error:
            raise CannotRebuild("%s cannot be rebuilt here: %s: %s" % (source, type(error).__name__, error))
    return _evaluated[source]
