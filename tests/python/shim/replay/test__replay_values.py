"""ophook._replay.values, recorded arguments back into Python: JSON pointers named as `compare`
names them; a {"kind", "repr"} value rebuilt only when its repr has the exact shape its kind
prints, never by evaluating an arbitrary repr; tuples, arrays (one file loaded once), views and
values that cannot be rebuilt, which say where and why. Called directly on the build tree's
package."""
import math
import sys

import numpy as np
import pytest

from harness import SHIM_DIR

sys.path.insert(0, str(SHIM_DIR))  # the package without starting it
from ophook._replay import values  # noqa: E402
from ophook._replay.values import CannotRebuild, Unreadable  # noqa: E402


@pytest.mark.parametrize("pointer, label", [("/args/1/0", "args[1][0]"), ("/args/0", "args[0]"), ("/args", "args"),
                                            ("/kwargs/dim", "kwargs.dim"), ("/kwargs/out/1", "kwargs.out[1]"),
                                            ("/kwargs/a~1b", "kwargs.a/b"), ("/kwargs/x~0y", "kwargs.x~y"),
                                            ("/outputs/0/2", "outputs[0][2]")])
def test_pointers_are_named_as_compare_names_them(pointer, label):
    assert values.pointer_label(pointer) == label


@pytest.mark.parametrize("key", ["dim", "a/b", "x~y", "~1", "~0/~1", "/"])
def test_a_keyword_name_survives_its_pointer(key):
    assert values.pointer_label("/kwargs/" + values.escape_pointer_key(key)) == "kwargs." + key


@pytest.mark.parametrize("kind, text, source", [
    ("float", "nan", 'float("nan")'), ("float", "inf", 'float("inf")'), ("float", "-inf", 'float("-inf")'),
    ("int", "-12", "-12"), ("int", "123456789012345678901234567890", "123456789012345678901234567890"),
    ("complex", "(1+2j)", "complex('(1+2j)')"), ("complex", "-1.5j", "complex('-1.5j')"),
    ("slice", "slice(1, None, -2)", "slice(1, None, -2)"),
    ("slice", "slice(None, None, None)", "slice(None, None, None)"),
    ("ellipsis", "Ellipsis", "Ellipsis"),
    ("type", "<class 'float'>", "float"), ("type", "<class 'numpy.float32'>", "np.float32"),
    ("_NoValueType", "<no value>", "np._NoValue"),
    ("torch.device", "device(type='cuda', index=1)", "torch.device(type='cuda', index=1)"),
    ("torch.device", "device(type='cpu')", "torch.device(type='cpu')"),
    ("torch.dtype", "torch.bfloat16", "torch.bfloat16"), ("torch.memory_format", "torch.channels_last",
                                                          "torch.channels_last"),
    ("numpy.dtype", "dtype('float32')", "np.dtype('float32')"),
    ("numpy.dtypes.StrDType", "dtype('<U5')", "np.dtype('<U5')"),
    ("numpy.dtypes.VoidDType", "dtype([('a', '<f4'), ('b', '<i8')])", "np.dtype([('a', '<f4'), ('b', '<i8')])"),
])
def test_known_kinds_are_rebuilt_from_the_shape_they_print(kind, text, source):
    assert values.other_source(kind, text) == source


@pytest.mark.parametrize("kind, text", [
    ("float", "1.5"), ("float", "nan; import os"), ("int", "1e3"), ("int", "12 "), ("int", "0x10"),
    ("complex", "abc"), ("slice", "slice(1, 2)"), ("slice", "slice('a', None, None)"),
    ("slice", "slice(True, None, None)"), ("slice", "slice(1.5, None, None)"), ("ellipsis", "..."),
    ("type", "<class 'os.system'>"), ("type", "<class 'numpy.linalg.LinAlgError'>"), ("type", "<class 'list'>"),
    ("torch.device", "device(type='cuda', index=x)"), ("torch.device", "device('cuda')"),
    ("torch.dtype", "torch.float32; import os"), ("torch.dtype", "float32"),
    ("numpy.dtype", "dtype(float32)"), ("numpy.dtype", "float32"), ("numpy.dtype", "dtype(__import__('os'))"),
    ("Generator", "Generator(PCG64)"), ("", ""), (None, "nan"), ("float", None),
])
def test_anything_else_is_not_rebuilt(kind, text):
    assert values.other_source(kind, text) is None


def test_a_slice_of_numpy_integers_is_rebuilt_with_their_values():
    """NumPy 2 prints slice(np.int64(1), None, None) for a[np.int64(1):]."""
    assert values.other_source("slice", "slice(np.int64(1), None, np.int32(-2))") == "slice(1, None, -2)"
    assert eval(values.other_source("slice", "slice(np.uint8(3), np.int64(9), None)")) == slice(3, 9, None)


@pytest.mark.parametrize("text", ["slice(np.float64(1.5), None, None)", "slice(np.int64(x), None, None)",
                                  "slice(__import__('os'), None, None)", "slice(1, 2"])
def test_a_slice_of_anything_but_integers_is_not_rebuilt(text):
    assert values.other_source("slice", text) is None


class Loads:
    """A `load` for the builders: hands out a fresh array per call, counting the calls."""

    def __init__(self):
        self.calls = []

    def __call__(self, spec, pointer):
        self.calls.append(pointer)
        return np.full(2, float(len(self.calls)))


def array(name=None, **fields):
    return {"kind": "array", "file": name, "dtype": "float64", "shape": [2], **fields}


def test_a_call_is_rebuilt_with_its_tuples_arrays_and_keywords():
    record = {"args": [[1, [2, 3]], array("a.npy"), {"kind": "slice", "repr": "slice(None, 2, None)"}, None, "text"],
              "kwargs": {"axis": [0, 1], "a/b": [4]},
              "tuples": ["/args/0/1", "/kwargs/axis", "/kwargs/a~1b"]}
    load = Loads()
    args, kwargs = values.walk_call(record, values.ObjectBuilder(load))
    assert args[0] == [1, (2, 3)] and type(args[0]) is list
    assert args[1].tolist() == [1.0, 1.0] and load.calls == ["/args/1"]
    assert args[2] == slice(None, 2, None) and args[3] is None and args[4] == "text"
    assert kwargs == {"axis": (0, 1), "a/b": (4,)}


def test_a_record_without_arguments_is_a_call_of_none():
    assert values.walk_call({"op": "numpy.random.random"}, values.ObjectBuilder(Loads())) == ([], {})


def test_one_file_named_twice_is_one_array():
    """`a += b` is add(a, b, out=(a,)): the rebuilt call must write into its own input."""
    record = {"args": [array("a.npy"), array("b.npy")], "kwargs": {"out": [array("a.npy")]}, "tuples": ["/kwargs/out"]}
    load = Loads()
    args, kwargs = values.walk_call(record, values.ObjectBuilder(load))
    assert kwargs["out"][0] is args[0] and args[1] is not args[0]
    assert load.calls == ["/args/0", "/args/1"]


def test_arrays_without_a_file_are_loaded_each_by_its_pointer():
    load = Loads()
    values.walk_call({"args": [array(), array()]}, values.ObjectBuilder(load))
    assert load.calls == ["/args/0", "/args/1"]


def test_a_view_is_rebuilt_from_the_array_it_views():
    shared = []

    def share(base, spec, loaded):
        shared.append((base.tolist(), spec["view_of"], loaded.tolist()))
        return base[:1]

    record = {"args": [array("x.npy"), array("y.npy", view_of="/args/0"), array("z.npy", view_of="/args/9")]}
    args, _ = values.walk_call(record, values.ObjectBuilder(Loads(), share=share))
    assert shared == [([1.0, 1.0], "/args/0", [2.0, 2.0])]  # a view of an unknown pointer: its own file
    assert args[1].tolist() == [1.0] and args[2].tolist() == [3.0, 3.0]


@pytest.mark.parametrize("value, why", [
    ({"kind": "truncated", "repr": "[1, 2, ..."}, "args[0] was cut short in the record ([1, 2, ...)"),
    ({"kind": "Generator", "repr": "Generator(PCG64)"}, "args[0] (Generator 'Generator(PCG64)') cannot be rebuilt"),
    ({"kind": "float", "repr": "0.1"}, "args[0] (float '0.1') cannot be rebuilt"),
])
def test_a_value_that_cannot_be_rebuilt_says_where_and_why(value, why):
    with pytest.raises(CannotRebuild) as raised:
        values.walk_call({"args": [value]}, values.ObjectBuilder(Loads()))
    assert str(raised.value) == why


def test_a_keyword_value_that_cannot_be_rebuilt_names_its_keyword():
    with pytest.raises(CannotRebuild, match=r"^kwargs\.generator\[1\] \(Generator"):
        values.walk_call({"kwargs": {"generator": [0, {"kind": "Generator", "repr": "?"}]}},
                         values.ObjectBuilder(Loads()))


def test_the_source_builder_writes_python_that_makes_the_same_values():
    record = {"args": [[1, [2]], float("nan"), {"kind": "float", "repr": "-inf"}, "it's", array("a.npy")],
              "kwargs": {"axis": [0], "keepdims": True}, "tuples": ["/args/0/1", "/kwargs/axis"]}
    args, kwargs = values.walk_call(record, values.SourceBuilder(lambda spec, pointer: "load(%r)" % spec["file"]))
    assert args == ["[1, (2,)]", 'float("nan")', 'float("-inf")', '"it\'s"', "load('a.npy')"]
    assert kwargs == {"axis": "(0,)", "keepdims": "True"}
    assert values.SourceBuilder(None).sequence([], True) == "()"
    rebuilt = eval(args[0])  # noqa: S307 - the builder's own output
    assert rebuilt == [1, (2,)]


@pytest.mark.parametrize("source, check", [
    ("slice(1, None, 2)", lambda v: v == slice(1, None, 2)),
    ('float("-inf")', lambda v: v == -math.inf),
    ('float("nan")', lambda v: math.isnan(v)),
    ("complex('(1+2j)')", lambda v: v == 1 + 2j),
    ("np.float32", lambda v: v is np.float32),
    ("np.dtype([('a', '<f4')])", lambda v: v == np.dtype([("a", "<f4")])),
    ("np._NoValue", lambda v: v is np._NoValue),
    ("Ellipsis", lambda v: v is Ellipsis),
])
def test_rebuilt_sources_evaluate_to_the_recorded_value(source, check):
    assert check(values.evaluate_source(source))


def test_an_evaluated_source_is_the_same_object_each_time():
    assert values.evaluate_source("np.dtype('<U5')") is values.evaluate_source("np.dtype('<U5')")


def test_a_source_this_numpy_cannot_evaluate_cannot_be_rebuilt():
    with pytest.raises(CannotRebuild, match=r"^np\.float1024 cannot be rebuilt here: AttributeError: "):
        values.evaluate_source("np.float1024")


def test_evaluation_has_no_builtins_beyond_the_values_own():
    with pytest.raises(CannotRebuild, match="NameError"):
        values.evaluate_source("open('/etc/passwd')")


@pytest.mark.parametrize("spec, error, why", [
    ({"file": None, "reason": "larger than OPHOOK_MAX_BYTES"}, CannotRebuild,
     "args[2] has no file (larger than OPHOOK_MAX_BYTES)"),
    ({"file": ""}, CannotRebuild, "args[2] has no file (recorded without data)"),
    ({"file": "../secret.npy"}, Unreadable, "args[2] names '../secret.npy', which is not a file of the run directory"),
    ({"file": "sub/a.npy"}, Unreadable, "args[2] names 'sub/a.npy', which is not a file of the run directory"),
    ({"file": ".."}, Unreadable, "args[2] names '..', which is not a file of the run directory"),
])
def test_an_array_names_its_own_file_in_the_run_directory_or_says_why_not(spec, error, why):
    with pytest.raises(error) as raised:
        values.array_file(spec, "/args/2")
    assert str(raised.value) == why


def test_an_array_file_is_its_own_not_the_one_it_equals():
    assert values.array_file({"file": "op_numpy.add_input0_000001.npy", "same_as": "op_numpy.add_input0_000000.npy"},
                             "/args/0") == "op_numpy.add_input0_000001.npy"


@pytest.mark.parametrize("spec, framework, python_type", [
    ({}, "numpy", "numpy.ndarray"), ({}, "torch", "torch.Tensor"), ({}, None, "numpy.ndarray"),
    ({"python_type": "numpy.generic"}, "numpy", "numpy.generic"),
    ({"python_type": "numpy.ndarray"}, "torch", "numpy.ndarray"),
])
def test_an_array_is_what_its_record_says_or_its_frameworks(spec, framework, python_type):
    assert values.python_type_of(spec, framework) == python_type
