"""The user's guide keeps working: README.md stays short and opens with the two commands that
matter, every relative link in README.md, CHANGELOG.md and docs/*.md reaches a file (and a heading,
for `#anchor` links), the configuration table has one well-formed row per variable, and every
fenced block marked ```bash runnable``` runs and exits 0 — in a fresh temporary directory that
has `build`, `.venv`, `examples` and `scripts` linked into it, so nothing lands in the repository.

Blocks for features that are not built yet are plain ```bash``` and are not run."""
import os
import re
import subprocess
import sys
import unicodedata
from pathlib import Path

import pytest

from harness import BUILD_DIR, SOURCE_DIR

README = SOURCE_DIR / "README.md"
PAGES = [README, SOURCE_DIR / "CHANGELOG.md", *sorted((SOURCE_DIR / "docs").glob("*.md"))]
BLOCK_TIMEOUT = 120  # seconds per runnable block; each is meant to take a few


def settings_table():
    """The recorder's settings table (src/core/settings_table.cpp), through the extension."""
    sys.path.insert(0, str(BUILD_DIR / "python_shim"))
    try:
        from ophook import _ophook
    finally:
        sys.path.pop(0)
    return _ophook.settings()


# The variables in the table's order, which is the settings table's (src/core/settings_table.cpp).
VARIABLES = [row["variable"][len("OPHOOK_"):] for row in settings_table()]

FENCE = re.compile(r"^\s*(```+|~~~+)\s*(.*)$")


def blocks(path):
    """(info string, first line number, text) of every fenced block of a Markdown file."""
    out, fence, info, start, body = [], None, "", 0, []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        match = FENCE.match(line)
        if fence is None and match:
            fence, info, start, body = match.group(1), match.group(2).strip(), number, []
        elif fence is not None and match and match.group(1).startswith(fence) and not match.group(2):
            out.append((info, start, "\n".join(body) + "\n"))
            fence = None
        elif fence is not None:
            body.append(line)
    assert fence is None, "%s: the block opened at line %d is never closed" % (path.name, start)
    return out


def prose(path):
    """The file's text outside fenced blocks and inline code spans."""
    lines, inside = [], None
    for line in path.read_text(encoding="utf-8").splitlines():
        match = FENCE.match(line)
        if inside is None and match:
            inside = match.group(1)
        elif inside is not None and match and match.group(1).startswith(inside) and not match.group(2):
            inside = None
        elif inside is None:
            lines.append(re.sub(r"`[^`]*`", "", line))
    return "\n".join(lines)


def slug(heading):
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"`([^`]*)`", r"\1", heading.strip()).lower()
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    kept = "".join(c for c in text if c in " -_" or unicodedata.category(c)[0] in "LNM")
    return kept.replace(" ", "-")


def anchors(path):
    seen, out = {}, set()
    for line in prose(path).splitlines():
        match = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if match:
            base = slug(match.group(1))
            count = seen.get(base, 0)
            seen[base] = count + 1
            out.add(base if count == 0 else "%s-%d" % (base, count))
    return out


def runnable_blocks():
    found = []
    for page in filter(Path.is_file, PAGES):  # a missing page fails the link test
        for info, line, text in blocks(page):
            if info.split() == ["bash", "runnable"]:
                found.append(pytest.param(text, id="%s:%d" % (page.relative_to(SOURCE_DIR), line)))
    return found


def test_readme_is_short_and_opens_with_the_two_commands():
    text = README.read_text(encoding="utf-8")
    lines = text.splitlines()
    assert len(lines) <= 400, "README.md has %d lines (limit 400; aim for about 300)" % len(lines)
    assert len(text.encode()) <= 30_000, "README.md has %d bytes (limit 30 kB)" % len(text.encode())
    top = "\n".join(lines[:40])
    assert "scripts/demo.sh" in top and "scripts/test.sh" in top, "the first 40 lines must show both commands"
    assert top.index("scripts/demo.sh") < top.index("scripts/test.sh")


def test_every_page_is_linked_from_the_readme():
    linked = set(re.findall(r"\]\(([^)#\s]+)", prose(README)))
    for page in PAGES[1:]:
        assert str(page.relative_to(SOURCE_DIR)) in linked, "%s is not linked from README.md" % page.name


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(SOURCE_DIR)))
def test_relative_links_reach_files_and_headings(page):
    assert page.is_file(), page
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)", prose(page)):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        if not linked.exists():
            broken.append("%s: no such file" % target)
        elif anchor and linked.suffix == ".md" and anchor not in anchors(linked):
            broken.append("%s: no heading with that anchor in %s" % (target, linked.name))
    assert not broken, "%s:\n  %s" % (page.name, "\n  ".join(broken))


def test_configuration_table_has_one_row_per_variable_with_its_option():
    rows = {}
    header = "| variable | option | values | default |"
    text = README.read_text(encoding="utf-8")
    assert header in text, "README.md needs the table `%s`" % header
    table = text[text.index(header):].split("\n\n", 1)[0].splitlines()[2:]
    for row in table:
        cells = [c.strip() for c in row.strip().strip("|").split("|")]
        match = re.fullmatch(r"`OPHOOK_([A-Z_]+)`", cells[0])
        assert match, "bad variable cell: %r" % row
        name = match.group(1)
        assert name not in rows, "two rows for OPHOOK_%s" % name
        assert cells[1] == "`--%s`" % name.lower().replace("_", "-"), "OPHOOK_%s: option %s" % (name, cells[1])
        assert len(cells) == 4 and cells[2] and cells[3], "OPHOOK_%s: empty values or default" % name
        rows[name] = cells
    assert list(rows) == VARIABLES, "rows differ from the settings table: %s" % sorted(set(rows) ^ set(VARIABLES))


def test_the_readme_runs_its_main_examples():
    ids = [p.id for p in runnable_blocks() if p.id.startswith("README.md")]
    assert len(ids) >= 5, "README.md should keep its runnable examples marked ```bash runnable```: %s" % ids


def repository_files():
    """Files under the linked repository directories, except Python's byte-code caches."""
    out = set()
    for top in ("examples", "scripts"):
        for path in (SOURCE_DIR / top).rglob("*"):
            if "__pycache__" not in path.parts:
                out.add(path)
    return out


@pytest.mark.parametrize("text", runnable_blocks())
def test_runnable_block(text, tmp_path):
    assert (BUILD_DIR / "libophook.so").is_file() and (BUILD_DIR / "ophook").is_file(), \
        "no build in %s (OPHOOK_BUILD_DIR)" % BUILD_DIR
    work = tmp_path / "work"
    work.mkdir()
    for name, target in (("build", BUILD_DIR), (".venv", SOURCE_DIR / ".venv"),
                         ("examples", SOURCE_DIR / "examples"), ("scripts", SOURCE_DIR / "scripts")):
        (work / name).symlink_to(target)
    script = tmp_path / "block.sh"
    script.write_text(text)
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPHOOK_") and k != "LD_PRELOAD"}
    before = repository_files()
    proc = subprocess.run(["bash", "-euo", "pipefail", str(script)], cwd=work, env=env, capture_output=True,
                          text=True, timeout=BLOCK_TIMEOUT, errors="backslashreplace")
    assert proc.returncode == 0, "exit %d\n--- block\n%s--- stdout\n%s\n--- stderr\n%s" % (
        proc.returncode, text, proc.stdout[-4000:], proc.stderr[-4000:])
    assert repository_files() == before, "the block wrote into the repository: %s" % (repository_files() - before)
