"""The host's side of the device path (issue 34), on a machine without a GPU: what the value modes
cost the program's thread beyond `trace` when the tensors' statistics, NaN counts and copies are a
device's work. The fake device (OPHOOK_TENSOR_COPY=fake-device) runs that work on the host;
OPHOOK_TEST_FAKE_DEVICE_IDLE=1 makes it do none of it (its results say every value is finite and
zero), so what is left is what a GPU run costs the program: queueing, launches, events, held
records, the backward check, the copies out of the staging memory. The program is small enough
that Python, not arithmetic, sets its pace, as a small model's does on a GPU."""
from figures_values import measure_loop
from measure import Group

ROWS = [
    ("device-host-trace", "MLP loop (`tests/bench/mlp_loop.py`: width 64, depth 8, batch 16, 200 SGD steps), "
     "`trace`: loop time (baseline: unhooked)", "—"),
    ("device-host-stats", "same, `stats`, the idle fake device (baseline: `trace`)", "—"),
    ("device-host-nan", "same, `OPHOOK_NAN=warn` with its defaults (`dump` with the ring), the idle fake device "
     "(baseline: `trace`)", "—"),
    ("device-host-nan-trace", "same, `trace` + `OPHOOK_NAN=warn`, the idle fake device (baseline: `trace`)", "—"),
    ("device-host-dump", "same, `dump`, the idle fake device (baseline: `trace`)", "—"),
]

IDLE = {"OPHOOK_TENSOR_COPY": "fake-device", "OPHOOK_TEST_FAKE_DEVICE_IDLE": "1"}


def measure(group, ctx):
    options = ["--width", "64", "--batch", "16", "--steps", str(ctx.size(200, 2))]
    settings = {"device-host-trace": {"OPHOOK_MODE": "trace"},
                "device-host-stats": {"OPHOOK_MODE": "stats", **IDLE},
                "device-host-nan": {"OPHOOK_NAN": "warn", **IDLE},
                "device-host-nan-trace": {"OPHOOK_MODE": "trace", "OPHOOK_NAN": "warn", **IDLE},
                "device-host-dump": {"OPHOOK_MODE": "dump", "OPHOOK_MAX_BYTES": "100G", **IDLE}}
    against_trace = {key: "device-host-trace" for key in settings if key != "device-host-trace"}
    return measure_loop(group, ctx, options, settings, {key: None for key in settings}, against_trace)


GROUPS = [Group("device_host", ROWS, measure)]
