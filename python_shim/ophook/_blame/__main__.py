"""The blame package's command line, for `ophook blame` (the C++ tool checks the user's options and
starts this with a Python that has numpy/torch):

    python -m ophook._blame RUN [--by op|module|line] [--top N] [--candidates N] [--tolerance T]
        [--json FILE] [--html FILE]

Exit status: 0 the final result is within the tolerance of the float64 chain (nothing needs more
precision); 1 it is not (the report names the calls whose rounding explains it); 2 input error."""
import argparse
import sys

from .._bisect.bisection import DTYPE_TOLERANCE
from .._bisect.result import relative_error
from .._replay.trace_file import InputError, read_records
from . import html_page, report
from .chain import Chain
from .links import blamed_calls, output_arrays, producers
from .shares import chain_result, measure_shares, recorded_result, result_call, result_pointers

EXIT_OK, EXIT_ABOVE, EXIT_INPUT = 0, 1, 2


def parse(argv):
    parser = argparse.ArgumentParser(prog="ophook blame engine")
    parser.add_argument("run")
    parser.add_argument("--by", choices=("op", "module", "line"), default="op")
    parser.add_argument("--top", type=int, default=10)
    parser.add_argument("--candidates", type=int, default=16)
    parser.add_argument("--tolerance", type=float)
    parser.add_argument("--json")
    parser.add_argument("--html")
    return parser.parse_args(argv)


def main(argv=None):
    options = parse(argv)
    try:
        blame = run_blame(options)
        report.print_text(blame, options.by, options.top, sys.stdout)
        for path, write in ((options.json, lambda: report.write_json(options.json, blame)),
                            (options.html, lambda: html_page.write_html(options.html, blame, options.by,
                                                                        options.top))):
            if not path:
                continue
            try:
                write()
            except OSError as error:
                raise InputError("%s: cannot be written: %s" % (path, error.strerror or error))
    except InputError as error:
        sys.stderr.write("ophook blame: error: %s\n" % error)
        return EXIT_INPUT
    final = blame["final"]
    return EXIT_OK if final["error"] <= final["tolerance"] else EXIT_ABOVE


def run_blame(options):
    """The chain over RUN's blamed calls, the final error and, when it is above the tolerance, the
    shares of the most severe calls: {"run", "calls", "replayed", "chained", "final", "results"}."""
    records = read_records(options.run)
    calls = blamed_calls(records)
    links = producers(calls)
    # the chain keeps what a later call reads, and every floating output a final result may be
    kept = {producer for found in links.values() for producer in found.values()}
    kept |= {(r["seq"], p) for r in calls for p in result_pointers(r)}
    chain = Chain(options.run, calls, links, kept)
    results = chain.run()
    final_record = result_call(calls, results)
    if final_record is None:
        raise InputError("%s: no call with a floating output could be replayed in float64 (record the run with "
                         "--mode dump)" % options.run)
    recorded = recorded_result(options.run, final_record)
    error = relative_error(recorded, chain_result(final_record, chain.values))
    tolerance = options.tolerance if options.tolerance is not None else \
        DTYPE_TOLERANCE.get(recorded["dtype"], DTYPE_TOLERANCE["float32"])
    if error > tolerance:
        measure_shares(chain, final_record, error, options.candidates)
    replayed = [r for r in results if r["status"] != "skipped"]
    return {"run": options.run, "calls": len(results), "replayed": len(replayed),
            "chained": sum(1 for r in replayed if r["chained"]),
            "final": {"seq": final_record["seq"], "op": final_record["op"], "source": final_record.get("source"),
                      "dtype": recorded["dtype"], "error": error, "tolerance": tolerance,
                      "outputs": [p for p, _ in output_arrays(final_record)]},
            "results": results}


if __name__ == "__main__":
    sys.exit(main())
