"""How many SASS instructions the device statistics kernel's contiguous loop costs per element kind,
without a GPU: each kind's loop (summarise_whole_groups, src/device/kernel/statistics_kernel.hpp)
compiled alone by nvcc into a probe kernel for one GPU generation, disassembled by cuobjdump
(scripts/setup.sh installs NVIDIA's nvidia-cuda-cuobjdump and nvidia-cuda-nvdisasm packages into
.venv), and the instructions of its unrolled iteration counted: four 16-byte loads, the copy's
four stores, the values' and the fingerprint's arithmetic. The kernel was bound by these
instructions, not by memory, on the H200 (docs/performance.md, "The kernel's speed"), so a change
to the arithmetic is judged here before a GPU is at hand.

    .venv/bin/python tests/bench/kernel_instructions.py [--arch sm_90] [--at-most N] [KIND ...]

With --at-most it exits 1 when a kind's loop takes more than N instructions per value: ctest's
statistics_kernel.instructions holds the float kinds to their budget that way.
"""
import argparse
import collections
import os
import re
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# Element kinds (statistics_elements.hpp's ElementKind) and their elements per 16 bytes.
KINDS = {"bool": (1, 16), "int8": (2, 16), "uint8": (3, 16), "int16": (4, 8), "uint16": (5, 8), "int32": (6, 4),
         "uint32": (7, 4), "int64": (8, 2), "uint64": (9, 2), "float16": (10, 8), "bfloat16": (11, 8),
         "float32": (12, 4), "float64": (13, 2), "complex64": (14, 2), "complex128": (15, 1),
         "float8_e4m3fn": (16, 16), "float8_e5m2": (17, 16)}
PROBE = """#include "device/kernel/statistics_kernel.hpp"
using namespace ophook::device::statistics_kernel;
extern "C" __global__ void probe(const TensorJob job, Partial* out) {
  out[threadIdx.x] = summarise_whole_groups<%d>(job, threadIdx.x, blockDim.x);
}
"""
INSTRUCTION = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(.*?);")
BRANCH = re.compile(r"\bBRA\b.*?(0x[0-9a-f]+)")


def tool(name):
    """nvcc from PATH or /usr/local/cuda; cuobjdump (and the nvdisasm it runs) from NVIDIA's wheels."""
    found = shutil.which(name) or shutil.which(name, path="/usr/local/cuda/bin")
    if found:
        return found
    try:
        import nvidia
    except ImportError:
        nvidia = None
    for base in getattr(nvidia, "__path__", []):
        for sub in sorted(os.listdir(base)):
            candidate = os.path.join(base, sub, "bin", name)
            if os.access(candidate, os.X_OK):
                return candidate
    sys.exit("kernel_instructions: %s not found (run scripts/setup.sh; nvcc comes with CUDA)" % name)


def main_loop(sass):
    """The instructions of the probe's main loop: the backward branch's body holding the four 16-byte
    loads and the copy's 16-byte stores (a float kind's recount loop, without a copy, has none)."""
    instructions = [(int(address, 16), text) for address, text in INSTRUCTION.findall(sass)]
    index = {address: i for i, (address, _) in enumerate(instructions)}
    for i, (address, text) in enumerate(instructions):
        branch = BRANCH.search(text)
        target = int(branch.group(1), 16) if branch else None
        if target is None or target >= address or target not in index:
            continue
        body = [t for _, t in instructions[index[target]:i + 1]]
        if sum("LD.E.128" in t for t in body) == 4 and any("ST.E.128" in t for t in body):
            return body
    return None


def count(kind, arch, workdir, nvcc, cuobjdump):
    number, per_vector = KINDS[kind]
    source = os.path.join(workdir, kind + ".cu")
    cubin = os.path.join(workdir, kind + ".cubin")
    with open(source, "w") as f:
        f.write(PROBE % number)
    subprocess.run([nvcc, "-arch=" + arch, "-cubin", "-I", os.path.join(ROOT, "src"), "-o", cubin, source],
                   check=True, capture_output=True)
    env = dict(os.environ, PATH=os.path.dirname(cuobjdump) + os.pathsep + os.environ.get("PATH", ""))
    sass = subprocess.run([cuobjdump, "--dump-sass", cubin], check=True, capture_output=True, text=True,
                          env=env).stdout
    body = main_loop(sass)
    if body is None:
        return kind, None, None, None
    opcodes = collections.Counter(re.sub(r"^@!?U?P\w+\s+", "", t).split()[0] for t in body)
    return kind, len(body), 4 * per_vector, opcodes.most_common(4)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arch", default="sm_90", help="the GPU generation (default sm_90, an H100/H200)")
    parser.add_argument("--at-most", type=float, metavar="N",
                        help="exit 1 if a kind's loop takes more than N instructions per value")
    parser.add_argument("kinds", nargs="*", metavar="KIND", help="element kinds (default: all): " + ", ".join(KINDS))
    options = parser.parse_args()
    unknown = [k for k in options.kinds if k not in KINDS]
    if unknown:
        parser.error("unknown kind %s: one of %s" % (", ".join(unknown), ", ".join(KINDS)))
    nvcc, cuobjdump = tool("nvcc"), tool("cuobjdump")
    kinds = options.kinds or list(KINDS)
    with tempfile.TemporaryDirectory() as workdir, ThreadPoolExecutor(os.cpu_count() or 1) as pool:
        rows = list(pool.map(lambda k: count(k, options.arch, workdir, nvcc, cuobjdump), kinds))
    print("| kind | values per iteration | instructions | per value | most common |")
    print("| --- | --- | --- | --- | --- |")
    over = []
    for kind, instructions, values, common in rows:
        if instructions is None:
            print("| %s | — | loop not found | — | — |" % kind)
            over.append(kind + " (its loop was not found)")
            continue
        print("| %s | %d | %d | %.1f | %s |" % (kind, values, instructions, instructions / values,
                                               ", ".join("%s %d" % c for c in common)))
        if options.at_most is not None and instructions / values > options.at_most:
            over.append("%s (%.1f per value)" % (kind, instructions / values))
    if options.at_most is not None and over:
        sys.exit("kernel_instructions: over %g instructions per value: %s" % (options.at_most, ", ".join(over)))


if __name__ == "__main__":
    main()
