"""ophook._replay.ops, which op a record names and which ones replay must not call again: random
draws (but a dropout that draws nothing; attention with a dropout_p above 0 draws), uninitialized memory, answers about memory layout or the
autograd graph, process state, attribute writes, compiled kernels and dispatch records of no aten
or prims op — each with the reason a report shows; every other qualified name resolved to its
callable, submodules imported as needed. Called directly on the build tree's package."""
import sys

import numpy as np
import pytest
import torch

from harness import SHIM_DIR

sys.path.insert(0, str(SHIM_DIR))  # the package without starting it
from ophook._replay import ops  # noqa: E402
from ophook._replay.values import CannotRebuild  # noqa: E402


@pytest.mark.parametrize("op, name", [("torch.Tensor.new_empty", "new_empty"), ("aten.empty.memory_format", "empty"),
                                      ("prims.mul.default", "mul"), ("torch.Tensor.grad.__get__", "grad"),
                                      ("torch.Tensor.data.__set__", "data"), ("numpy.add.reduce", "reduce"),
                                      ("numpy", "numpy"), ("aten", "aten")])
def test_the_function_name_of_an_op(op, name):
    assert ops.function_name(op) == name


def record(op, level="torch_function", **fields):
    return {"op": op, "level": level, **fields}


@pytest.mark.parametrize("call, reason", [
    (record("compiled.triton_poi_fused_add_0", level="compiled"), "a compiled kernel"),
    (record("c10d.allreduce_", level="collective"), "a collective: it needs the recorded job's other ranks"),
    (record("autograd.SqrtBackward0", level="torch_dispatch"), "not an aten or prims operator (autograd)"),
    (record("torch.randn"), "random: draws from a random generator"),
    (record("aten.bernoulli_.float", level="torch_dispatch"), "random: draws from a random generator"),
    (record("torch.nn.init.kaiming_uniform_"), "random: draws from a random generator"),
    (record("numpy.random.mtrand.RandomState.normal", level="ufunc"), "random: draws from a random generator"),
    (record("torch.nn.functional.dropout", args=[{"kind": "array"}, 0.5]), "random: draws from a random generator"),
    (record("torch.nn.functional.scaled_dot_product_attention", args=[{"kind": "array"}] * 3,
            kwargs={"attn_mask": None, "dropout_p": 0.1}), "random: draws from a random generator"),
    (record("aten._scaled_dot_product_flash_attention_for_cpu.default", level="torch_dispatch",
            args=[{"kind": "array"}] * 3 + [0.1, True]), "random: draws from a random generator"),
    (record("torch.empty_like"), "returns uninitialized memory"),
    (record("torch.Tensor.resize_"), "returns uninitialized memory"),
    (record("torch.Tensor.data_ptr"), "depends on the memory layout of the inputs, which is not recorded"),
    (record("torch.Tensor.is_contiguous"), "depends on the memory layout of the inputs, which is not recorded"),
    (record("torch.Tensor.grad_fn.__get__"), "needs the recorded program's autograd graph"),
    (record("torch.Tensor.backward"), "needs the recorded program's autograd graph"),
    (record("torch.set_grad_enabled"), "sets process state, computes no value"),
    (record("torch.ops.profiler._record_function_enter_new"), "sets process state, computes no value"),
    (record("torch.Tensor.requires_grad.__set__"), "needs the recorded program's autograd graph"),
    (record("torch.Tensor.names.__set__"), "changes an attribute, returns nothing to compare"),
    (record("torch.Tensor.shape.__delete__"), "changes an attribute, returns nothing to compare"),
])
def test_calls_replay_must_not_make_again_say_why(call, reason):
    assert ops.skip_reason(call).startswith(reason)


@pytest.mark.parametrize("call", [
    record("torch.add"), record("numpy.add", level="ufunc"), record("aten.mm.default", level="torch_dispatch"),
    record("prims.convert_element_type.default", level="torch_dispatch"), record("torch.Tensor.shape.__get__"),
    record("torch.nn.functional.dropout", kwargs={"training": False}),
    record("torch.nn.functional.dropout", args=[{"kind": "array"}, 0.0]),
    record("torch.nn.functional.dropout", args=[{"kind": "array"}], kwargs={"p": 0}),
    record("aten.native_dropout.default", level="torch_dispatch", args=[{"kind": "array"}, 0.5, False]),
    record("torch.nn.functional.scaled_dot_product_attention", args=[{"kind": "array"}] * 3, kwargs={"dropout_p": 0.0}),
    record("torch.nn.functional.scaled_dot_product_attention", args=[{"kind": "array"}] * 3),
    record("torch.Tensor.emptyish"), record("numpy.random_sample_like_name_that_is_not_random"),
])
def test_every_other_call_is_replayed(call):
    assert ops.skip_reason(call) is None


@pytest.mark.parametrize("op, expected", [
    ("numpy.add", np.add), ("numpy.add.reduce", np.add.reduce), ("numpy.linalg.norm", np.linalg.norm),
    ("numpy.ndarray.sum", np.ndarray.sum), ("torch.add", torch.add), ("torch.Tensor.sum", torch.Tensor.sum),
    ("torch.nn.functional.linear", torch.nn.functional.linear), ("aten.mm.default", torch.ops.aten.mm.default),
    ("prims.mul.default", torch.ops.prims.mul.default),
])
def test_an_op_resolves_to_its_callable(op, expected):
    assert ops.resolve(op) == expected  # bound methods are equal, not one object


def test_a_submodule_not_imported_yet_is_imported(monkeypatch):
    monkeypatch.delitem(sys.modules, "json.tool", raising=False)
    import json

    monkeypatch.delattr(json, "tool", raising=False)
    assert ops.resolve("json.tool.main") is sys.modules["json.tool"].main


@pytest.mark.parametrize("op", ["numpy.no_such_function", "no_such_module_anywhere.f", "torch.Tensor.no_such_method",
                                "aten.no_such_op.default"])
def test_an_op_that_does_not_exist_here_cannot_be_rebuilt(op):
    with pytest.raises(CannotRebuild, match=r"^%s is not found here \(" % op.replace(".", r"\.")):
        ops.resolve(op)
