"""How this machine's fresh memory costs depend on how long ago it was freed: --mib MiB allocated
and written by NumPy right after the previous such array was freed, and after --idle-s seconds
idle. A virtual machine whose host takes back free guest memory (virtio-balloon free page
reporting) makes the second case fault on the host; every fresh copy buffer of the dump rows pays
the same. Prints one JSON line: median milliseconds of each."""
import statistics
import time

import numpy as np

from worker_support import arguments, emit

args = arguments(__doc__, mib=1024, idle_s=3)


def touch_ms():
    start = time.perf_counter()
    array = np.empty(args.mib * (1 << 20) // 8)
    array.fill(1.0)
    elapsed = time.perf_counter() - start
    del array
    return elapsed * 1e3


def main():
    touch_ms()
    freed_just_now, freed_idle = [], []
    for _ in range(args.rounds):
        freed_just_now.append(touch_ms())
        time.sleep(args.idle_s)
        freed_idle.append(touch_ms())
    emit({"ms": {"just_freed": statistics.median(freed_just_now), "idle": statistics.median(freed_idle)}})


if __name__ == "__main__":
    main()
