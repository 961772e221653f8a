"""ophook._settings, the OPHOOK_* mapping every start reads: the environment's variables (but empty
ones), Python API keywords on top with their values as the
recorder reads text, unknown keywords refused with the accepted list, a path that is not UTF-8
kept as its bytes, the switches and level lists as the recorder understands them, and the names of
the recorder's root variables as the preload hands them or the extension says. Called directly on
the build tree's package, the environment patched."""
import os
import sys

import pytest

from harness import SHIM_DIR

sys.path.insert(0, str(SHIM_DIR))  # the package without starting it
from ophook import _settings  # noqa: E402


@pytest.fixture(autouse=True)
def no_ophook_variables(monkeypatch):
    """The test process's own OPHOOK_* variables (ctest's OPHOOK_BUILD_DIR, ...) out of the way."""
    for name in [n for n in os.environ if n.startswith("OPHOOK_")]:
        monkeypatch.delenv(name)


@pytest.mark.parametrize("value, text", [(True, "1"), (False, "0"), (0, "0"), (1 << 20, "1048576"),
                                         (["numpy", "torch_function"], "numpy,torch_function"), (("mm",), "mm"),
                                         ([], ""), ("dumps", "dumps"), (0.5, "0.5")])
def test_keyword_values_become_the_text_the_recorder_reads(value, text):
    assert _settings._text(value) == text


def test_a_set_of_levels_becomes_a_list_of_each_once():
    assert sorted(_settings._text({"numpy", "torch_dispatch"}).split(",")) == ["numpy", "torch_dispatch"]


def test_the_environment_gives_its_ophook_variables_but_empty_ones(monkeypatch):
    """The root variables the recorder exports go along too: its parser ignores the variables it
    does not know (test_configuration checks that none of them is taken for a misspelling)."""
    monkeypatch.setenv("OPHOOK_MODE", "stats")
    monkeypatch.setenv("OPHOOK_LEVELS", "numpy")
    monkeypatch.setenv("OPHOOK_NAN", "")  # set but empty: as if unset
    monkeypatch.setenv("OPHOOK_ROOT_PID", "123")
    monkeypatch.setenv("NOT_OPHOOK_MODE", "dump")
    assert _settings.collect() == {"OPHOOK_MODE": "stats", "OPHOOK_LEVELS": "numpy", "OPHOOK_ROOT_PID": "123"}


def test_the_root_names_are_the_ones_handed_over_without_asking_the_extension(monkeypatch):
    monkeypatch.setattr(_settings, "_run_root", None)
    monkeypatch.setitem(sys.modules, "ophook._ophook", None)  # importing the extension would fail
    _settings.use_run_root(["ROOT_A", "ROOT_B", "dumps"])
    assert _settings.run_root() == ("ROOT_A", "ROOT_B", "dumps")


def test_without_a_hand_over_the_root_names_are_the_extensions():
    """The real extension of this build: the names the C++ core defines (process/run_root.hpp)."""
    from ophook import _ophook

    previous = _settings._run_root
    try:
        _settings._run_root = None
        assert _settings.run_root() == ("OPHOOK_ROOT_PID", "OPHOOK_ROOT_OUTPUT", "np_op_dumps")
        assert tuple(_ophook.run_root_names()) == _settings.run_root()
    finally:
        _settings._run_root = previous


def test_without_keywords_the_extension_is_not_asked(monkeypatch):
    """Every hooked interpreter collects its settings at start; the settings table lives in the
    extension, which must load only once a framework is imported."""
    def refuse():
        raise AssertionError("keywords() asked without keywords")

    monkeypatch.setattr(_settings, "keywords", refuse)
    monkeypatch.setenv("OPHOOK_MODE", "trace")
    assert _settings.collect() == {"OPHOOK_MODE": "trace"}


def test_keywords_override_the_environment_and_none_keeps_it(monkeypatch):
    monkeypatch.setenv("OPHOOK_MODE", "trace")
    monkeypatch.setenv("OPHOOK_NAN", "warn")
    settings = _settings.collect(mode="dump", nan=None, levels=["numpy", "torch_dispatch"], strict=True)
    assert settings == {"OPHOOK_MODE": "dump", "OPHOOK_NAN": "warn", "OPHOOK_LEVELS": "numpy,torch_dispatch",
                        "OPHOOK_STRICT": "1"}


def test_output_path_is_the_seed_tracers_name_for_output():
    assert _settings.collect(output_path="dumps") == {"OPHOOK_OUTPUT": "dumps"}
    assert _settings.collect(output="dumps") == {"OPHOOK_OUTPUT": "dumps"}


@pytest.mark.parametrize("key", ["MODE", "OPHOOK_MODE", "ring_byte", "", "root_pid"])
def test_an_unknown_keyword_names_itself_and_the_accepted_ones(key):
    with pytest.raises(TypeError) as raised:
        _settings.collect(**{key: "1"})
    message = str(raised.value)
    assert message.startswith("unknown ophook option %r (accepted: " % key)
    accepted = message[message.index("(accepted: ") + len("(accepted: "):-1].split(", ")
    assert accepted == _settings.keywords() and "mode" in accepted and "ring_bytes" in accepted


def test_every_keyword_is_the_lower_case_variable_name():
    keywords = _settings.keywords()
    assert len(keywords) == len(set(keywords)) > 10
    for keyword in keywords:
        assert keyword == keyword.lower() and keyword.isidentifier()
        assert _settings.collect(**{keyword: "x"}) == {"OPHOOK_" + keyword.upper(): "x"}


def test_a_variable_that_is_not_utf8_arrives_as_its_bytes(monkeypatch):
    """A path from a latin-1 locale: os.environ holds it surrogate-escaped, which the recorder
    could not take as text; its bytes are what it names."""
    monkeypatch.setenv("OPHOOK_OUTPUT", os.fsdecode(b"/tmp/caf\xe9"))
    monkeypatch.setenv("OPHOOK_MODE", "stats")
    assert _settings.collect() == {"OPHOOK_OUTPUT": b"/tmp/caf\xe9", "OPHOOK_MODE": "stats"}
    monkeypatch.setenv("OPHOOK_OUTPUT", "/tmp/café")  # UTF-8: text
    assert _settings.collect()["OPHOOK_OUTPUT"] == "/tmp/café"


@pytest.mark.parametrize("text", ["1", "true", "TRUE", "yes", "On", " 1 ", "yes\n"])
def test_switches_on(text):
    assert _settings.truthy({"OPHOOK_STRICT": text}, "STRICT")


@pytest.mark.parametrize("text", ["0", "", "false", "off", "no", "2", "y", "enabled"])
def test_switches_off(text):
    assert not _settings.truthy({"OPHOOK_STRICT": text}, "STRICT")


def test_a_switch_not_set_is_off():
    assert not _settings.truthy({"OPHOOK_DISABLE": "1"}, "STRICT")


@pytest.mark.parametrize("raw, expected", [
    (None, {"numpy", "torch_function", "collective"}),
    ("", {"numpy", "torch_function", "collective"}),
    ("numpy", {"numpy"}),
    (" numpy , torch_dispatch ", {"numpy", "torch_dispatch"}),
    ("torch_function,,torch_function,", {"torch_function"}),
])
def test_levels_default_to_numpy_torch_function_and_collective(raw, expected):
    settings = {} if raw is None else {"OPHOOK_LEVELS": raw}
    assert _settings.levels(settings) == expected
