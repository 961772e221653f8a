"""The state file (--state): what a bisection is (its command and options), its groups, and every
run done with its outcome, rewritten after each run so that an interrupted bisection continues
where it stopped when started again with the same command and options."""
import json
import os

from .._replay.trace_file import InputError

FORMAT = 1
IDENTITY = ("command", "by", "to", "tolerance", "check")  # what must match for a state to be reused


def load_state(path, identity):
    """The state at `path` for the bisection `identity` (a dict with the IDENTITY keys), or a new
    one when there is no file. A file of another bisection is an InputError: continuing it would
    mix two programs' runs."""
    if not os.path.exists(path):
        return dict(identity, format=FORMAT, groups=None, runs={})
    try:
        with open(path, encoding="utf-8") as f:
            state = json.load(f)
    except (OSError, ValueError) as error:
        raise InputError("--state %s: unreadable (%s)" % (path, error))
    if not isinstance(state, dict) or state.get("format") != FORMAT:
        raise InputError("--state %s: not an ophook bisect state file" % path)
    for key in IDENTITY:
        if state.get(key) != identity[key]:
            raise InputError("--state %s holds another bisection (its %s is %s, this one's %s): remove it or "
                             "choose another --state" % (path, key, json.dumps(state.get(key)), json.dumps(identity[key])))
    return state


def save_state(path, state):
    """Writes the state whole or not at all (a temporary file renamed over it)."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    temporary = path + ".tmp"
    with open(temporary, "w", encoding="utf-8") as f:
        json.dump(state, f, indent=1)
    os.replace(temporary, path)
