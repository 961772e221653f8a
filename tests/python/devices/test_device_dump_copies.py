"""`dump` on the device (the statistics kernel on the fake device): a tensor's bytes cross to the
host again only when they changed, staged bytes are lent to the record instead of copied (the
program waits for the writer when the staging memory is full), and bfloat16 and float8 tensors
are widened by the writer's threads. Every file holds the tensor as it was at its call,
recomputed here, and the program's output is the unhooked one."""
import torch

from harness import arrays, load, ops, run_script, same_bits, summary, trace


UNCHANGED_WEIGHT = """
import torch
torch.manual_seed(0)
w = torch.randn(256, 128)  # 128 KiB: large enough for shared copies
v = torch.randn(128)
for i in range(3000):
    y = torch.mv(w, v)
    if i % 600 == 599:
        w.mul_(1.5)  # new bytes at the same address
h = torch.tanh(w)
g = torch.exp(h)  # tanh's output read again while still in flight
hb = torch.tanh(w).bfloat16()
gb = torch.exp(hb)  # so too in bfloat16, widened for its file
print(float(y.sum()), float(g.sum()), float(gb.float().sum()))
"""


def test_dump_sends_a_tensors_bytes_again_only_when_they_changed(tmp_path):
    """`dump` on the device: a tensor read again at the same address is compared on the device,
    by the fingerprint of its bytes, with its latest read still in flight or else the copy the host
    holds, and copied to the host only when its bytes changed since. A weight read 3,000 times and
    multiplied in place every 600th, then an activation read right after it is made: every file
    holds the tensor as it was at that call (recomputed here), the copies not sent are counted, and
    every tensor is read by the kernel to the end (the earlier reads kept for later ones to compare
    with are let go: the 8,192 result slots are used several times over)."""
    proc = run_script(tmp_path, UNCHANGED_WEIGHT, levels="torch_function", mode="dump", tensor_copy="fake-device")
    out = tmp_path / "out"
    records = trace(out)
    torch.manual_seed(0)
    w = torch.randn(256, 128)
    expected_reads, expected_after = [], []
    for i in range(3000):
        expected_reads.append(w.numpy().copy())
        if i % 600 == 599:
            w.mul_(1.5)
            expected_after.append(w.numpy().copy())
    h = torch.tanh(w)
    mv, mul = ops(records, "torch.mv"), ops(records, "torch.Tensor.mul_")
    assert len(mv) == 3000 and len(mul) == 5
    assert all(same_bits(load(out, arrays(r)[0]), want) for r, want in zip(mv, expected_reads))
    assert all(same_bits(load(out, arrays(r, "outputs")[0]), want) for r, want in zip(mul, expected_after))
    exp = ops(records, "torch.exp")
    assert same_bits(load(out, arrays(exp[0])[0]), h.numpy())
    assert same_bits(load(out, arrays(exp[1])[0]), h.bfloat16().float().numpy())
    note = summary(out)["notes"]["device_statistics"]
    recorded = [a for r in records for a in arrays(r) + arrays(r, "outputs")]
    assert note["tensors_read"] == len(recorded) > 9000, note
    assert note["copies_unchanged"] >= 2900, note  # about every read of the weight but the first of each value
    float32_unchanged = note["copies_unchanged"] - 1  # the bfloat16 activation's (64 KiB) besides
    assert note["bytes_unchanged"] == float32_unchanged * 128 * 1024 + 64 * 1024
    # every float32 read found unchanged shares a copy, and nothing else does (the bfloat16 one is
    # widened, so copied)
    assert summary(out)["copies_shared"]["shared"] == float32_unchanged, summary(out)["copies_shared"]
    # every tensor's result crossed, and the bytes of every one not found unchanged
    staged = sum(load(out, a).nbytes // (2 if a["dtype"] == "bfloat16" else 1) for a in recorded)  # bf16: widened
    assert note["bytes_to_host"] == 72 * note["tensors_read"] + staged - note["bytes_unchanged"]
    (tmp_path / "plain").mkdir()
    assert proc.stdout == run_script(tmp_path / "plain", UNCHANGED_WEIGHT, preload=False).stdout


STAGED_CHAIN = """
import torch
torch.manual_seed(0)
x = torch.randn(64, 1024)  # 256 KiB a tensor
for i in range(80):
    y = torch.mul(x, 0.5)
    x = torch.add(y, float(i))
    s = torch.sum(x)  # 4 bytes: copied out, not lent
parts = [torch.mul(x, k) for k in range(5)]
z = torch.stack(parts)  # its fifth input finds the staging memory full of its own four
print(float(s), float(z.sum()))
"""


def test_dump_lends_staged_bytes_and_waits_for_the_writer_when_staging_is_full(tmp_path):
    """`dump` on the device: a tensor's bytes the device copied into the staging memory are the
    record's copy where they lie (lent, not copied again by the program's thread) until the writer
    has written them; small arrays are copied out. With a staging memory of 1 MiB (four of these
    tensors) the program waits for the writer to give ranges back instead of reading tensors
    through torch: every tensor is read by the kernel, every file holds the tensor as it was at its
    call (recomputed here), and the program's output is the unhooked one. A call whose own
    tensors fill the staging memory has the one that finds no room read through torch, as is one
    larger than half of it."""
    proc = run_script(tmp_path, STAGED_CHAIN, levels="torch_function", mode="dump", tensor_copy="fake-device",
                      test_staging_bytes=str(1 << 20))
    out = tmp_path / "out"
    records = trace(out)
    torch.manual_seed(0)
    x = torch.randn(64, 1024)
    muls, adds, sums = ops(records, "torch.mul"), ops(records, "torch.add"), ops(records, "torch.sum")
    muls, parts = muls[:80], muls[80:]
    assert len(muls) == len(adds) == len(sums) == 80 and len(parts) == 5
    for i, (mul, add, total) in enumerate(zip(muls, adds, sums)):
        y = torch.mul(x, 0.5)
        assert same_bits(load(out, arrays(mul)[0]), x.numpy()) and same_bits(load(out, arrays(mul, "outputs")[0]), y.numpy())
        x = torch.add(y, float(i))
        assert same_bits(load(out, arrays(add)[0]), y.numpy()) and same_bits(load(out, arrays(add, "outputs")[0]), x.numpy())
        assert same_bits(load(out, arrays(total, "outputs")[0]), torch.sum(x).numpy())
    stack = ops(records, "torch.stack")[0]
    want = [torch.mul(x, k) for k in range(5)]
    assert all(same_bits(load(out, a), w.numpy()) for a, w in zip(arrays(stack), want))
    assert same_bits(load(out, arrays(stack, "outputs")[0]), torch.stack(want).numpy())
    note = summary(out)["notes"]["device_statistics"]
    recorded = [a for r in records for a in arrays(r) + arrays(r, "outputs")]
    # none read through torch for want of room but the stack's fifth input, its output and the
    # sum's input (1.25 MiB, more than half the staging memory); the sum's output waits for the
    # stack's record to be written
    assert note["tensors_read"] == len(recorded) - 3, note
    assert note["staging_waits"] > 0, note
    # the program's thread copied only the small ones (the sums' outputs and float()'s inputs)
    sizes = [load(out, a).nbytes for a in recorded]
    assert min(sizes) == 4 and max(sizes) == 5 * 256 * 1024
    assert note["bytes_copied_from_staging"] == sum(n for n in sizes if n < 64 * 1024), note
    assert note["bytes_to_host"] - 72 * note["tensors_read"] >= 161 * 256 * 1024, note  # randn, then 2 a step
    (tmp_path / "plain").mkdir()
    assert proc.stdout == run_script(tmp_path / "plain", STAGED_CHAIN, preload=False).stdout


NARROW_CHAIN = """
import torch
torch.manual_seed(0)
x = torch.randn(256, 512)
for i in range(20):
    b = x.to(torch.bfloat16)  # 256 KiB
    c = torch.mul(b, 0.5)  # b read again while its read is still in flight
    f = c.to(torch.float8_e4m3fn)  # 128 KiB
    x = torch.add(x, c.float())
print(float(x.sum()), float(f.float().sum()))
"""


def test_dump_lends_narrow_staged_bytes_and_the_writer_widens_them(tmp_path):
    """`dump` on the device: bfloat16 and float8 tensors are widened to float32 for their files,
    and that is done by the writer's threads from the staged bytes, as for a float32 tensor's lent
    copy, not by the program's thread: it copies nothing out of the staging memory. Every file
    holds the tensor as it was at its call, widened (recomputed here); the program's output is the
    unhooked one."""
    proc = run_script(tmp_path, NARROW_CHAIN, levels="torch_function", mode="dump", tensor_copy="fake-device")
    out = tmp_path / "out"
    records = trace(out)
    torch.manual_seed(0)
    x = torch.randn(256, 512)
    conversions, muls, adds = ops(records, "torch.Tensor.to"), ops(records, "torch.mul"), ops(records, "torch.add")
    assert len(conversions) == 40 and len(muls) == len(adds) == 20
    for mul, add in zip(muls, adds):
        b = x.to(torch.bfloat16)
        c = torch.mul(b, 0.5)
        f = c.to(torch.float8_e4m3fn)
        for array, want in ((arrays(mul)[0], b), (arrays(mul, "outputs")[0], c)):
            assert array["dtype"] == "bfloat16" and same_bits(load(out, array), want.float().numpy())
        x = torch.add(x, c.float())
        assert same_bits(load(out, arrays(add, "outputs")[0]), x.numpy())
    to_fp8 = [r for r in conversions if arrays(r, "outputs")[0]["dtype"] == "float8_e4m3fn"]
    assert len(to_fp8) == 20 and same_bits(load(out, arrays(to_fp8[-1], "outputs")[0]), f.float().numpy())
    note = summary(out)["notes"]["device_statistics"]
    recorded = [a for r in records for a in arrays(r) + arrays(r, "outputs")]
    assert note["tensors_read"] == len(recorded), note
    # the program's thread copied out only the small ones (the last line's two sums, as outputs and
    # as float()'s inputs), where before it widened every bfloat16 and float8 tensor's bytes
    sizes = [load(out, a).nbytes for a in recorded]
    assert note["bytes_copied_from_staging"] == sum(n for n in sizes if n < 64 * 1024) == 4 * 4, note
    (tmp_path / "plain").mkdir()
    assert proc.stdout == run_script(tmp_path / "plain", NARROW_CHAIN, preload=False).stdout
