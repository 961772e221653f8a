"""ophook._replay.trace_file, how `ophook replay` reads a run: the records of trace.jsonl with the
torch thread count each call ran with, a killed run's cut-off last line left out with a warning,
any other bad line an input error naming the file and line, and the calls chosen by op regex and
seq. Called directly on the build tree's package, on run directories written here."""
import json
import re
import sys

import pytest

from harness import SHIM_DIR

sys.path.insert(0, str(SHIM_DIR))  # the package without starting it
from ophook._replay import trace_file  # noqa: E402
from ophook._replay.trace_file import TORCH_THREADS, InputError  # noqa: E402


def record(seq, op="numpy.add"):
    return {"seq": seq, "op": op}


def write_run(directory, text, summary=None):
    directory.mkdir(exist_ok=True)
    (directory / "trace.jsonl").write_bytes(text.encode() if isinstance(text, str) else text)
    if summary is not None:
        (directory / "summary.json").write_text(json.dumps(summary))
    return directory


def lines(*records):
    return "".join(json.dumps(r) + "\n" for r in records)


def test_the_records_are_read_in_order_blank_lines_left_out(tmp_path):
    run = write_run(tmp_path / "run", lines(record(0)) + "\n  \n" + lines(record(1, "numpy.multiply")))
    assert trace_file.read_records(run) == [record(0), record(1, "numpy.multiply")]


def test_an_empty_trace_has_no_records(tmp_path):
    assert trace_file.read_records(write_run(tmp_path / "run", "")) == []


def test_a_run_without_a_trace_is_an_input_error(tmp_path):
    with pytest.raises(InputError) as raised:
        trace_file.read_records(tmp_path / "missing")
    assert str(raised.value) == "%s: No such file or directory" % (tmp_path / "missing" / "trace.jsonl")


def test_a_cut_off_last_line_is_left_out_with_a_warning(tmp_path, capsys):
    run = write_run(tmp_path / "run", lines(record(0), record(1)) + '{"seq": 2, "op": "numpy.ad')
    assert trace_file.read_records(run) == [record(0), record(1)]
    assert capsys.readouterr().err == ("ophook replay: warning: %s:3: truncated last line ignored\n"
                                       % (run / "trace.jsonl"))


@pytest.mark.parametrize("bad", ['{"seq": 1, "op": "numpy.ad\n', "[1, 2]\n", '{"seq": 1}\n', '{"op": "numpy.add"}\n',
                                 "not json\n", b"\xff\xfe\n"])
def test_any_other_bad_line_names_its_file_and_line(tmp_path, bad):
    """A whole line that is no record, even the last one (it ends in a newline: it was written)."""
    text = lines(record(0)).encode() + (bad if isinstance(bad, bytes) else bad.encode())
    run = write_run(tmp_path / "run", text)
    with pytest.raises(InputError, match="^%s:2: malformed trace line: " % re.escape(str(run / "trace.jsonl"))):
        trace_file.read_records(run)
    run = write_run(tmp_path / "run", text + lines(record(2)).encode())  # in the middle
    with pytest.raises(InputError, match=r":2: malformed trace line: "):
        trace_file.read_records(run)


def test_each_call_gets_the_torch_thread_count_it_ran_with(tmp_path):
    changes = [{"seq": 10, "threads": 1}, {"seq": 3, "threads": 4}]  # in any order
    summary = {"notes": {"torch_threads": {"changes": changes}}}
    run = write_run(tmp_path / "run", lines(*(record(seq) for seq in (0, 2, 3, 9, 10, 40))), summary)
    counts = {r["seq"]: r.get(TORCH_THREADS) for r in trace_file.read_records(run)}
    assert counts == {0: None, 2: None, 3: 4, 9: 4, 10: 1, 40: 1}


@pytest.mark.parametrize("summary", ["{", {"notes": {}}, {"notes": {"torch_threads": {"changes": [{"seq": 1}]}}},
                                     {"notes": {"torch_threads": None}}, []])
def test_a_run_without_a_usable_thread_note_gives_no_counts(tmp_path, summary):
    run = write_run(tmp_path / "run", lines(record(0), record(5)))
    (run / "summary.json").write_text(summary if isinstance(summary, str) else json.dumps(summary))
    assert all(TORCH_THREADS not in r for r in trace_file.read_records(run))


RECORDS = [record(0, "numpy.add"), record(1, "numpy.add.reduce"), record(2, "torch.nn.functional.linear"),
           record(3, "aten.mm.default"), record(4, "numpy.matmul")]


@pytest.mark.parametrize("include, exclude, seqs, chosen", [
    (None, None, None, [0, 1, 2, 3, 4]),
    ("add", None, None, [0, 1]),
    (r"^numpy\.add$", None, None, [0]),
    ("mm|matmul", None, None, [3, 4]),
    (None, "reduce|linear", None, [0, 3, 4]),
    ("numpy", "reduce", None, [0, 4]),
    (None, None, [4, 0], [0, 4]),
    ("numpy", None, [2, 4], [4]),
    ("", "", [], [0, 1, 2, 3, 4]),
])
def test_calls_are_chosen_by_op_and_seq(include, exclude, seqs, chosen):
    assert [r["seq"] for r in trace_file.select(RECORDS, include, exclude, seqs)] == chosen


def test_an_unknown_seq_is_an_input_error_naming_each():
    with pytest.raises(InputError, match=r"^no call with seq 7, 9 in the trace$"):
        trace_file.select(RECORDS, seqs=[9, 1, 7])


@pytest.mark.parametrize("include, exclude", [("(", None), (None, "[a-")])
def test_a_bad_regular_expression_is_an_input_error(include, exclude):
    with pytest.raises(InputError, match=r"^bad regular expression '(\(|\[a-)': "):
        trace_file.select(RECORDS, include, exclude)
