"""ophook._blame.chain: each call in float64 on its recorded inputs (local error, as replay
--reference float64 judges it) and on the chain's values of the inputs earlier calls made
(propagated error), on synthetic NumPy runs written here."""
import sys

import numpy as np

from cli_fixtures import RunDir
from harness import SHIM_DIR

sys.path.insert(0, str(SHIM_DIR))  # the package without starting it
from ophook._blame.chain import Chain, value_at  # noqa: E402
from ophook._blame.links import producers  # noqa: E402


def _chain(run):
    run.write()
    links = producers(run.records)
    kept = {p for found in links.values() for p in found.values()} | {(len(run.records) - 1, "/outputs/0")}
    chain = Chain(str(run.path), run.records, links, kept)
    return chain, chain.run()


def _cancellation_between_calls(run):
    """(x + 1e8) - 1e8 as two float32 calls: each call's own rounding is tiny, the second is
    handed the first's rounding, which it turns into the whole result."""
    x = np.linspace(1.0, 2.0, 8).astype(np.float32)
    big = np.float32(1e8)
    shifted = x + big
    run.call("numpy.add", [x, 1e8], [shifted])
    run.call("numpy.subtract", [shifted, 1e8], [shifted - big])
    return x


def test_a_call_fed_the_chain_shows_the_error_it_was_handed_and_its_own_is_small(tmp_path):
    run = RunDir(tmp_path)
    x = _cancellation_between_calls(run)
    chain, results = _chain(run)
    first, second = results
    assert first["status"] == "match" and second["status"] == "match"  # both round well on their inputs
    assert first["propagated"] == 0.0 and first["max_rel"] < 1e-7
    assert 1e-9 < second["propagated"] < 1e-7  # x + 1e8 in float32 against float64
    assert second["output_rel"] > 0.1  # against the chain, the difference is the result's size
    final = chain.values[(1, "/outputs/0")]
    assert np.allclose(final, x.astype(np.float64), rtol=1e-12)  # the chain keeps x


def test_a_call_replay_skips_has_no_chain_value_and_its_readers_read_their_files(tmp_path):
    run = RunDir(tmp_path)
    noise = np.random.default_rng(0).standard_normal(4).astype(np.float32)
    run.call("numpy.random.normal", [], [noise])
    run.call("numpy.exp", [noise], [np.exp(noise)])
    chain, results = _chain(run)
    assert results[0]["status"] == "skipped"
    assert results[1]["status"] == "match" and results[1]["propagated"] == 0.0


def test_value_at_walks_the_outputs_as_the_recorder_lists_them():
    assert value_at(["a", ["b", "c"]], "/outputs/1/0") == "b"
    assert value_at(["a"], "/outputs/3") is None
