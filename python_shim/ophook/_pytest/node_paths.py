"""Test ids as directory paths for the pytest plugin: stable, readable and collision-free."""
import hashlib
import os
import re

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")
_MAX_PART = 100  # bytes of one path component, well under every file system's 255


def _safe_part(part):
    """`part` itself when it is a plain, short name; else its safe spelling ending in 8 hex digits
    of its SHA-1, so that two parts that read alike ("x[a/b]", "x[a_b]") never share a directory."""
    if not _UNSAFE.search(part) and len(part) <= _MAX_PART and part.strip("."):
        return part
    digest = hashlib.sha1(part.encode("utf-8", "surrogateescape")).hexdigest()[:8]
    return "%s-%s" % (_UNSAFE.sub("_", part)[:_MAX_PART - len(digest) - 1], digest)


def node_path(nodeid):
    """The relative directory of a test's recording: its file's path segments, then its class and
    function, one directory each — "tests/test_x.py::TestA::test_f[1-2]" becomes
    tests/test_x.py/TestA/test_f_1-2_-<digest>. Never absolute, never through "..": a segment
    that is not a plain name (".." for a file outside the root dir, a parameter id with "/" or
    "[") is spelled safely and made unique by its digest."""
    file_part, *names = nodeid.split("::")
    return os.path.join(*(_safe_part(part) for part in file_part.split("/") + names))
