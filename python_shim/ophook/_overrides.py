"""Operator overrides (the seeds' hijacking): `@ophook.override("aten.mm.default")` registers a
replacement that receives the original callable first. Rules are looked up in C++ by op name;
this module registers them, loads OPHOOK_OVERRIDES files and checks what a rule returns."""
import os
import sys

_rules = {}  # qualified op name -> rule


def _describe(rule):
    code = getattr(rule, "__code__", None)
    where = "%s:%d" % (os.path.basename(code.co_filename), code.co_firstlineno) if code else "?"
    return "%s (%s)" % (getattr(rule, "__qualname__", repr(rule)), where)


def override(op_name):
    """Decorator: replace every call of `op_name` (a qualified name as it appears in trace.jsonl:
    "numpy.add", "numpy.add.reduce", "numpy.concatenate", "torch.nn.functional.linear",
    "aten.mm.default") with `rule(original, *args, **kwargs)`. Calling `original` falls through to
    the real operator. When several rules name one op, the first registered wins."""
    if not isinstance(op_name, str) or not op_name:
        raise TypeError("ophook.override needs a qualified op name such as 'aten.mm.default'")

    def register(rule):
        if not callable(rule):
            raise TypeError("ophook.override(%r) must decorate a callable" % op_name)
        if op_name in _rules:
            from . import _ophook

            _ophook.log("warn", "override for %s by %s ignored: %s came first"
                        % (op_name, _describe(rule), _describe(_rules[op_name])))
            return rule
        _rules[op_name] = rule
        from . import _ophook

        _ophook.set_override(op_name, rule)
        return rule

    return register


def load_rules_file(path):
    """Imports an OPHOOK_OVERRIDES file (its @ophook.override decorators register the rules). The
    module is also importable by its file name (unless that name is taken), so that the program can
    reach the rules' state: `import rules_numpy_mm` gives this module, not a second copy."""
    import importlib.util  # only runs with OPHOOK_OVERRIDES: keeps it off every interpreter's start

    spec = importlib.util.spec_from_file_location("ophook_overrides_rules", path)
    if spec is None:
        raise ValueError("OPHOOK_OVERRIDES=%r is not a Python file" % path)
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("ophook_overrides_rules", module)
    stem = os.path.splitext(os.path.basename(path))[0]
    if stem.isidentifier() and stem not in sys.modules:
        sys.modules[stem] = module
    spec.loader.exec_module(module)
    return module


def rules_needing(level_prefix):
    """Names of the registered rules whose op names start with `level_prefix` ("aten.", "torch.")."""
    return sorted(name for name in _rules if name.startswith(level_prefix))


def _is_array_result(value, framework):
    if framework == "torch":
        torch = sys.modules.get("torch")
        return torch is not None and isinstance(value, torch.Tensor)
    np = sys.modules.get("numpy")
    return np is not None and isinstance(value, (np.ndarray, np.generic))


def invoke(rule, original, op_name, level, args, kwargs):
    """Runs `rule` for one call and checks that its result has the kind of value the op returns.
    Called from C++ for every overridden call; exceptions of the rule propagate unchanged."""
    result = rule(original, *args, **kwargs)
    expected = _expected_kind(op_name, level, args, kwargs)
    if expected is None:
        return result
    framework = "torch" if level.startswith("torch") else "numpy"
    kind, shape = expected
    if kind == "array" and not _is_array_result(result, framework):
        raise TypeError("ophook override %s for %s returned %s; the op returns %s"
                        % (_describe(rule), op_name, type(result).__name__,
                           "a Tensor" if framework == "torch" else "an ndarray"))
    if shape is not None and tuple(getattr(result, "shape", ())) != tuple(shape):
        raise TypeError("ophook override %s for %s returned shape %s; the op returns shape %s"
                        % (_describe(rule), op_name, tuple(result.shape), tuple(shape)))
    return result


def _expected_kind(op_name, level, args, kwargs):
    """("array", shape or None) when the op's result kind is known, else None."""
    if level == "ufunc":
        np = sys.modules["numpy"]
        ufunc_name = op_name.split(".", 1)[1]
        ufunc = getattr(np, ufunc_name, None)
        if not isinstance(ufunc, np.ufunc) or ufunc.nout != 1 or ufunc.signature is not None:
            return None
        try:
            shape = np.broadcast_shapes(*(np.shape(a) for a in args[:ufunc.nin]))
        except (ValueError, TypeError):
            return None
        return ("array", shape)
    if level == "torch_dispatch":
        torch = sys.modules["torch"]
        packet = op_name.split(".")
        try:
            func = getattr(getattr(getattr(torch.ops, packet[0]), packet[1]), packet[2])
            returns = func._schema.returns
        except (AttributeError, IndexError):
            return None
        if len(returns) == 1 and str(returns[0].type) == "Tensor":
            return ("array", _meta_shape(torch, func, args, kwargs))
    return None


def _meta_shape(torch, func, args, kwargs):
    """The shape of func's result, computed on meta tensors (shapes only, no data, no kernel
    run); None when the op has no meta implementation."""
    from torch.utils._pytree import tree_map

    def to_meta(value):
        if not isinstance(value, torch.Tensor):
            return value
        return torch.empty_strided(value.shape, value.stride(), dtype=value.dtype, device="meta")

    try:
        with torch._C.DisableTorchFunction():  # not an op of the program: no torch_function mode sees it
            return tuple(func(*tree_map(to_meta, args), **tree_map(to_meta, kwargs)).shape)
    except Exception:
        return None
