"""Dump mode's ring (OPHOOK_RING_BYTES, and OPHOOK_NAN's default): the latest calls' arrays are held
in memory and written only on a trigger — the first NaN/Inf, an uncaught exception (any thread), a
termination signal, ophook.dump_ring() — so the files are those of the calls that led to it. Every
call keeps its trace line; one whose arrays left the ring unwritten says why; every file a line
names exists and loads; a killed run leaves whole files only."""
import json
import re
import signal
import time

import numpy as np

from cli_fixtures import run_ophook
from harness import arrays, consistent_records, load, start, summary as read_summary, wait_for_line

# 1 MiB arrays (float64): each call holds 2 MiB, so the 256 MiB default ring keeps about 128 calls
# of the 300 before the late NaN.
LATE_NAN = """
import numpy as np
x = np.full(131072, 0.5)
for _ in range(150):
    x = np.sqrt(x + 1.0)
late = np.log(x - 10.0)       # NaN: x is about 1.618
print(int(np.isnan(late).sum()), float(x[0]))
"""


def named_files(records):
    return {v["file"] for r in records for v in arrays(r) + arrays(r, "outputs") if v["file"]}


def check_every_name_loads(run, records):
    on_disk = {f.name for f in run.output.glob("op_*.npy")}
    assert named_files(records) == on_disk
    for name in on_disk:
        np.load(run.output / name, allow_pickle=False)


def test_a_nan_hunt_writes_only_the_calls_that_led_to_the_culprit(runner):
    plain = runner.run(LATE_NAN, how="plain")
    run = runner.run(LATE_NAN, env={"OPHOOK_NAN": "warn"})
    assert run.stdout == plain.stdout
    assert "256 MiB ring" in run.stderr and "OPHOOK_NAN's default" in run.stderr  # the start line
    records = run.records()
    culprit = next(r for r in records if r["op"] == "numpy.log")
    with_files = [r["seq"] for r in records if any(v["file"] for v in arrays(r) + arrays(r, "outputs"))]
    # A window of consecutive calls ending at the culprit, far shorter than the run.
    assert with_files[-1] == culprit["seq"]
    assert with_files == list(range(with_files[0], culprit["seq"] + 1))
    assert 100 <= len(with_files) <= 140 and with_files[0] > 150
    before = [v for r in records if r["seq"] < with_files[0] for v in arrays(r) + arrays(r, "outputs")]
    assert before and all(v["file"] is None and "left the OPHOOK_RING_BYTES ring" in v["reason"] for v in before)
    after = [v for r in records if r["seq"] > culprit["seq"] for v in arrays(r) + arrays(r, "outputs")]
    assert after and all(v["file"] is None and "without a trigger" in v["reason"] for v in after)
    # The culprit's files hold what it computed, its predecessors' what they did.
    x_in, produced = load(run.output, arrays(culprit)[0]), load(run.output, arrays(culprit, "outputs")[0])
    with np.errstate(invalid="ignore"):
        np.testing.assert_array_equal(produced, np.log(x_in))
    assert np.isnan(produced).all()
    check_every_name_loads(run, records)
    summary = run.summary()
    ring = summary["ring"]
    assert ring["nan_hunt_default"] is True and ring["bytes"] == 256 << 20
    (trigger,) = ring["triggers"]
    assert trigger["why"].startswith("first NaN/Inf") and trigger["after_seq"] == culprit["seq"]
    assert trigger["first_seq"] == with_files[0] and trigger["last_seq"] == culprit["seq"]
    assert summary["totals"]["bytes_written"] <= 256 << 20
    # `ophook replay` loads every name given: the window's calls replay as recorded (NaN included),
    # the others are skipped for the ring's reason.
    report = run.output.parent / "replay.json"
    done = run_ophook("replay", "--jobs", "1", "--json", report, run.output, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    results = {c["seq"]: c for c in json.loads(report.read_text())["calls"]}
    assert [seq for seq, c in sorted(results.items()) if c["status"] == "match"] == with_files
    assert all("OPHOOK_RING_BYTES ring" in c["reason"] for c in results.values() if c["status"] == "skipped")


TRIGGERS = """
import threading
import numpy as np
try:
    from ophook import dump_ring
except ImportError:  # the run without the hook
    def dump_ring(why):
        return True

a = np.arange(1024.0)
for _ in range(20):
    a = a + 1.0
print("api", dump_ring("checkpoint"), flush=True)
for _ in range(20):
    a = a * 2.0

def worker():
    b = a - 1.0
    raise RuntimeError("in a thread")

t = threading.Thread(target=worker, name="side")
t.start()
t.join()
for _ in range(20):
    a = a / 2.0
raise ValueError("boom")
"""


def test_dump_ring_and_uncaught_exceptions_write_the_ring(runner):
    plain = runner.run(TRIGGERS, how="plain", check=False)
    run = runner.run(TRIGGERS, env={"OPHOOK_RING_BYTES": "64K"}, check=False)
    assert (run.proc.returncode, run.stdout) == (plain.proc.returncode, plain.stdout) == (1, "api True\n")
    # The program's own reports of its exceptions come out as without the hook.
    ours = [l for l in run.stderr.splitlines() if "[ophook" not in l]
    assert [re.sub(r"prog\d+\.py", "prog.py", l) for l in ours] == [re.sub(r"prog\d+\.py", "prog.py", l)
                                                                   for l in plain.stderr.splitlines()]
    triggers = run.summary()["ring"]["triggers"]
    assert [t["why"] for t in triggers] == ["checkpoint", "uncaught exception RuntimeError in thread side",
                                            "uncaught exception ValueError"]
    records = run.records()
    by_seq = {r["seq"]: r for r in records}
    computed = {"numpy.add": lambda x: x + 1.0, "numpy.multiply": lambda x: x * 2.0,
                "numpy.subtract": lambda x: x - 1.0, "numpy.divide": lambda x: x / 2.0}
    for trigger in triggers:
        assert 1 <= trigger["calls"] <= 8 and trigger["files"] == 2 * trigger["calls"]
        for seq in range(trigger["first_seq"], trigger["last_seq"] + 1):
            r = by_seq[seq]
            (x,), (y,) = arrays(r), arrays(r, "outputs")
            np.testing.assert_array_equal(load(run.output, y), computed[r["op"]](load(run.output, x)))
    assert triggers[0]["last_seq"] == max(r["seq"] for r in records if r["op"] == "numpy.add")
    assert by_seq[triggers[1]["last_seq"]]["op"] == "numpy.subtract"
    check_every_name_loads(run, records)


def test_a_normal_exit_writes_nothing_more(runner):
    run = runner.run(TRIGGERS.replace('raise ValueError("boom")', "").replace("dump_ring(\"checkpoint\")", "bool(1)")
                     .replace("raise RuntimeError", "print"), env={"OPHOOK_RING_BYTES": "64K"})
    assert not list(run.output.glob("*.npy"))
    reasons = {v["reason"] for r in run.records() for v in arrays(r) + arrays(r, "outputs")}
    assert reasons == {"left the OPHOOK_RING_BYTES ring unwritten: no trigger while it was held",
                       "in the OPHOOK_RING_BYTES ring when the run ended without a trigger"}
    assert run.summary()["ring"]["triggers"] == [] and run.summary()["totals"]["files"] == 0


LOOP = """
import numpy as np, ophook
a = np.arange(65536.0)
n = 0
while True:
    a = a + 1.0
    n += 1
    if n % 40 == 0:
        ophook.dump_ring("every 40 calls")
    if n == 200:
        print("ready", flush=True)
"""


def start_loop(tmp_path, dumps=True, **settings):
    proc, out = start(LOOP if dumps else LOOP.replace("ophook.dump_ring", "bool"), tmp_path, **settings)
    wait_for_line(proc, "ready")
    return proc, out


def test_sigterm_writes_the_ring(tmp_path):
    proc, out = start_loop(tmp_path, dumps=False, ring_bytes="4M")
    time.sleep(0.2)
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGTERM
    summary = read_summary(out)
    last = summary["ring"]["triggers"][-1]
    assert [t["why"] for t in summary["ring"]["triggers"]] == ["termination signal SIGTERM"]
    assert last["calls"] >= 1
    records, _ = consistent_records(out)
    assert len(records) == summary["totals"]["calls"]
    held = [r for r in records if r["seq"] >= last["first_seq"]]
    assert len(held) == last["calls"]
    for r in held:  # every call held at the signal has its files, holding what it computed
        (x,), (y,) = arrays(r), arrays(r, "outputs")
        np.testing.assert_array_equal(np.load(out / y["file"]), np.load(out / x["file"]) + 1.0)


def test_sigkill_leaves_whole_files_only(tmp_path):
    proc, out = start_loop(tmp_path, ring_bytes="8M")
    time.sleep(0.3)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=60)
    # The lines held in the ring are lost with the process; the lines and files left are whole.
    records, files = consistent_records(out)
    for name, array in files.items():  # each an arange shifted by a whole number
        shift = array - np.arange(65536.0)
        assert (shift == shift[0]).all(), name
    assert named_files(records) <= set(files)
    assert not [f.name for f in out.iterdir() if f.name.startswith(".tmp.") and "reserve" not in f.name]


# Large in-place calls: the ring's copies of their inputs are the values before the call, of their
# outputs the values after it. torch.log is called once first, here and in the test's recomputation:
# a process's first large log, split over two threads, came back once (in CI's ring tests, 2026-11-29)
# with its second half a few ulp off, as the first tanh does (devices/test_device_ring.py, RING_PROGRAM).
IN_PLACE_CALLS = """
import torch
import torch.nn.functional as F

torch.log(torch.ones(8))
torch.manual_seed(0)
e = torch.rand(1 << 22) * 2.0 - 1.0    # 16 MiB of float32, half of it negative
before = e.clone()
F.relu(e, True)                         # in place at once (torch passes it on as inplace=True)
torch.save(before, "before.pt")
torch.save(e.clone(), "after.pt")
y = torch.full((1 << 22,), 2.0)
e.add_(y)                               # in place, by its name
z = torch.log(e - 2.5)                  # NaN where relu left zeros: the trigger
print(int(torch.isnan(z).sum()))
"""


def test_the_rings_copies_of_in_place_calls_hold_their_values(runner):
    plain = runner.run(IN_PLACE_CALLS, how="plain")
    run = runner.run(IN_PLACE_CALLS, env={"OPHOOK_NAN": "warn"})
    assert run.stdout == plain.stdout
    import torch

    before = torch.load(run.output.parent / "before.pt").numpy()
    after = torch.load(run.output.parent / "after.pt").numpy()
    records = run.records()
    relu = next(r for r in records if r["op"] == "torch.nn.functional.relu")
    np.testing.assert_array_equal(load(run.output, arrays(relu)[0]), before)  # not torn by the call
    np.testing.assert_array_equal(load(run.output, arrays(relu, "outputs")[0]), after)
    add_ = next(r for r in records if r["op"] == "torch.Tensor.add_")
    np.testing.assert_array_equal(load(run.output, arrays(add_)[0]), after)
    np.testing.assert_array_equal(load(run.output, arrays(add_, "outputs")[0]), after + 2.0)
    culprit = [r for r in records if r["op"] == "torch.log"][-1]  # after the warm-up's
    assert "first NaN/Inf from finite inputs: seq %d torch.log" % culprit["seq"] in run.stderr
    torch.log(torch.ones(8))
    logged = torch.log(torch.from_numpy(load(run.output, arrays(culprit)[0]))).numpy()
    np.testing.assert_array_equal(load(run.output, arrays(culprit, "outputs")[0]), logged)
