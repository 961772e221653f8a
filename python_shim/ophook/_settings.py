"""OPHOOK_* settings: from the environment, overridden by Python API keywords."""
import os

ALIASES = {"output_path": "output"}  # the seed API tracer's keyword
# The recorder's names of its root variables and its default output directory (run_root).
_run_root = None


def _text(value):
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, (list, tuple, set)):
        return ",".join(str(v) for v in value)
    return str(value)


def _environment_value(name):
    """The variable's text; its raw bytes when it is not UTF-8 (a path from a latin-1 locale
    arrives surrogate-escaped, which the recorder could not take as text)."""
    value = os.environ[name]
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return os.environb[os.fsencode(name)]
    return value


def keywords():
    """The keyword of every setting (the settings table of the extension): mode, ring_bytes, ..."""
    from . import _ophook

    return [row["keyword"] for row in _ophook.settings()]


def use_run_root(names):
    """Keeps the names the preload's bootstrap handed over, before the extension is loaded."""
    global _run_root
    _run_root = tuple(names)


def run_root():
    """(the variable naming the run's root pid, the variable naming its output directory, the
    default output directory): the recorder's own names (src/core: process/run_root.hpp,
    config/config.hpp), as the preload handed them, else from the extension."""
    if _run_root is None:
        from . import _ophook

        use_run_root(_ophook.run_root_names())
    return _run_root


def collect(**options):
    """The OPHOOK_* mapping: environment values, then `options` (lower-case names) on top. The
    recorder reads the variables it knows and ignores the others (the root variables it exports
    to the processes below the root among them)."""
    settings = {name: _environment_value(name) for name in os.environ
                if name.startswith("OPHOOK_") and os.environ[name]}
    accepted = keywords() if options else ()
    for key, value in options.items():
        if value is None:
            continue
        name = ALIASES.get(key, key)
        if name not in accepted:
            raise TypeError("unknown ophook option %r (accepted: %s)" % (key, ", ".join(accepted)))
        settings["OPHOOK_" + name.upper()] = _text(value)
    return settings


def truthy(settings, name):
    return settings.get("OPHOOK_" + name, "0").strip().lower() in ("1", "true", "yes", "on")


def levels(settings):
    raw = settings.get("OPHOOK_LEVELS") or "numpy,torch_function,collective"
    return {part.strip() for part in raw.split(",") if part.strip()}
