#!/usr/bin/env python3
"""Checks the project's include graph (docs/design.md, "Layout"): no include cycle between units
(a unit is a header and its source: name.hpp with name.cpp), every include across the layers goes
downwards, and no source folder holds more than MAX_FILES files: the C++ layers' folders, and the
Python package's and the tests' folders (their Python, C++ and shell files).

The layers, lowest first: the core (include/ophook, src/core); the device engine (src/device) and
the command-line tool (src/cli) above it; the extension (src/python) above the device engine, in
which only torch's part (src/python/torch) and the module that binds it (src/python/module.cpp)
may reach the device engine or torch's files: the neutral recording layer (src/python/recording,
src/python/numpy, the rest of src/python) reaches devices only through the interface torch
registers (src/python/recording/device_reads.hpp). src/preload sits on the core alone.

    scripts/include_graph.py [ROOT]     exit 0 when clean; else one line per finding, exit 1
"""
import os
import re
import sys
from collections import defaultdict

MAX_FILES = 16
SOURCE = re.compile(r"\.(cpp|hpp|cu|h)$")
SIZED = ("python_shim", "tests")
SIZED_FILE = re.compile(r"\.(py|cpp|hpp|c|sh)$")
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)
# Where a quoted include is looked up, by the folder of the file that includes it (as the build's
# include directories say: CMakeLists.txt of each target).
ROOTS = {
    "include": ["include"],
    "src/core": ["include", "src/core"],
    "src/device": ["include", "src"],
    "src/python": ["include", "src", "src/python"],
    "src/cli": ["include", "src/cli"],
    "src/preload": ["include", "src/preload"],
}
# What each layer may include, by the prefix of the included file's path.
ALLOWED = {
    "include": ("include/",),
    "src/core": ("include/", "src/core/"),
    "src/device": ("include/", "src/device/"),
    "src/cli": ("include/", "src/cli/"),
    "src/preload": ("include/", "src/preload/"),
    "src/python/torch": ("include/", "src/device/", "src/python/"),
    "src/python/module.cpp": ("include/", "src/python/"),
    "src/python": ("include/", "src/python/recording/", "src/python/numpy/", "src/python/"),
}
NEUTRAL_FORBIDDEN = ("src/python/torch/", "src/device/")


def layer(path, table):
    """The entry of `table` whose key is the longest prefix of `path`."""
    keys = [k for k in table if path == k or path.startswith(k + "/")]
    return max(keys, key=len) if keys else None


def files(root):
    for top in ROOTS:
        for folder, _, names in os.walk(os.path.join(root, top)):
            for name in names:
                if SOURCE.search(name):
                    yield os.path.relpath(os.path.join(folder, name), root)


def sized_files(root):
    """The Python package's and the tests' files whose folders are held to MAX_FILES too."""
    for top in SIZED:
        for folder, folders, names in os.walk(os.path.join(root, top)):
            folders[:] = [f for f in folders if f != "__pycache__"]
            for name in names:
                if SIZED_FILE.search(name):
                    yield os.path.relpath(os.path.join(folder, name), root)


def resolve(root, includer, name):
    candidates = [os.path.join(os.path.dirname(includer), name)]
    candidates += [os.path.join(d, name) for d in ROOTS[layer(includer, ROOTS)]]
    for candidate in candidates:
        if os.path.isfile(os.path.join(root, candidate)):
            return os.path.normpath(candidate)
    return None  # a system or third-party header


def unit(path):
    return os.path.splitext(path)[0]


def cycles(edges):
    """Strongly connected components of more than one unit (Tarjan's algorithm, iterative)."""
    index, low, on_stack, stack, found, counter = {}, {}, set(), [], [], [0]
    for start in list(edges):
        if start in index:
            continue
        work = [(start, iter(edges[start]))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
            elif child not in index:
                index[child] = low[child] = counter[0]
                counter[0] += 1
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(edges[child])))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return found


def main(root):
    findings = []
    edges = defaultdict(set)
    per_folder = defaultdict(int)
    for path in sized_files(root):
        per_folder[os.path.dirname(path)] += 1
    for path in sorted(files(root)):
        per_folder[os.path.dirname(path)] += 1
        edges[unit(path)]
        rules = ALLOWED[layer(path, ALLOWED)]
        with open(os.path.join(root, path), encoding="utf-8") as source:
            text = source.read()
        for name in INCLUDE.findall(text):
            target = resolve(root, path, name)
            if target is None:
                continue
            if not target.startswith(rules):
                findings.append("%s includes %s: across the layers upwards" % (path, target))
            elif layer(path, ALLOWED) == "src/python" and target.startswith(NEUTRAL_FORBIDDEN):
                findings.append("%s includes %s: the neutral layer reaches devices only through "
                                "recording/device_reads.hpp" % (path, target))
            if unit(target) != unit(path):
                edges[unit(path)].add(unit(target))
    for component in cycles(edges):
        findings.append("include cycle between the units %s" % ", ".join(component))
    for folder, count in sorted(per_folder.items()):
        if count > MAX_FILES:
            findings.append("%s holds %d files (at most %d: split it by responsibility)" % (folder, count, MAX_FILES))
    for line in findings:
        print(line)
    print("include graph: %d files, %d units, %d findings" % (sum(per_folder.values()), len(edges), len(findings)),
          file=sys.stderr)
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
