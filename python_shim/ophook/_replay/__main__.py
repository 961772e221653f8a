"""The replay package's command line, for `ophook replay` and `ophook compare --referee` (the C++
tool checks the user's options and starts this with a Python that has numpy/torch):

    python -m ophook._replay replay DIR --mode exact|reference|random [--include RE] [--exclude RE]
        [--seq N ...] [--json FILE] [--html FILE] [--jobs N] [--seed N]
    python -m ophook._replay script DIR SEQ
    python -m ophook._replay referee REQUEST.json RESPONSE.json [--jobs N]

Exit status: 0 all replayed calls match (or are within the thresholds), 1 otherwise, 2 input error."""
import argparse
import json
import os
import sys

from .trace_file import InputError, read_records, select

EXIT_OK, EXIT_DIFFERENT, EXIT_INPUT = 0, 1, 2


def main(argv=None):
    parser = argparse.ArgumentParser(prog="ophook replay package")
    commands = parser.add_subparsers(dest="command", required=True)
    replay = commands.add_parser("replay")
    replay.add_argument("dir")
    replay.add_argument("--mode", choices=("exact", "reference", "random"), default="exact")
    replay.add_argument("--include")
    replay.add_argument("--exclude")
    replay.add_argument("--seq", type=int, nargs="*")
    replay.add_argument("--json")
    replay.add_argument("--html")
    replay.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    replay.add_argument("--seed", type=int, default=0)
    script = commands.add_parser("script")
    script.add_argument("dir")
    script.add_argument("seq", type=int)
    referee = commands.add_parser("referee")
    referee.add_argument("request")
    referee.add_argument("response")
    referee.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    options = parser.parse_args(argv)
    try:
        return {"replay": _replay, "script": _script, "referee": _referee}[options.command](options)
    except InputError as error:
        sys.stderr.write("ophook %s: error: %s\n" % ("compare" if options.command == "referee" else "replay", error))
        return EXIT_INPUT


def _replay(options):
    from . import report
    from .runner import run_tasks

    records = select(read_records(options.dir), options.include, options.exclude, options.seq)
    tasks = [(options.dir, record, options.mode, options.seed) for record in records]
    results = run_tasks(tasks, options.jobs)
    report.print_text(options.dir, options.mode, results, sys.stdout)
    for path, write in ((options.json, report.write_json), (options.html, report.write_html)):
        if path:
            try:
                write(path, options.dir, options.mode, results)
            except OSError as error:
                raise InputError("%s: cannot be written: %s" % (path, error.strerror or error))
    return EXIT_DIFFERENT if any(r["status"] == "mismatch" for r in results) else EXIT_OK


def _script(options):
    from .script import emit

    records = select(read_records(options.dir), seqs=[options.seq])
    sys.stdout.write(emit(options.dir, records[0]))
    return EXIT_OK


def _referee(options):
    from .referee import judge

    try:
        with open(options.request, encoding="utf-8") as f:
            request = json.load(f)
    except (OSError, ValueError) as error:
        raise InputError("referee request %s: %s" % (options.request, error))
    response = judge(request, options.jobs)
    with open(options.response, "w", encoding="utf-8") as f:
        json.dump(response, f)
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
