"""The timing of the training-loop benchmarks (mlp_loop.py, gpt2_loop.py): untimed steps first,
then the timed ones; prints the timed loop's wall time in seconds and the last loss, the line
figures.values.measure_loop reads."""
import time


def run(step, steps, warmup):
    """Runs step() `warmup` times untimed, then `steps` times timed, and prints "<seconds> <loss>"."""
    for _ in range(warmup):
        step()
    start = time.perf_counter()
    for _ in range(steps):
        loss = step()
    print("%.6f %r" % (time.perf_counter() - start, loss.item()))
