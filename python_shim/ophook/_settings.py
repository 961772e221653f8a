"""OPHOOK_* settings: from the environment, overridden by Python API keywords."""
import os

NAMES = ("OUTPUT", "MODE", "LEVELS", "INCLUDE", "EXCLUDE", "NESTED", "MAX_BYTES", "QUEUE_BYTES",
         "STACK", "NAN", "COMPILE", "OVERRIDES", "LOG_LEVEL", "STRICT", "DISABLE")
ALIASES = {"output_path": "output"}  # the seed API tracer's keyword


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


def collect(**options):
    """The OPHOOK_* mapping: environment values, then `options` (lower-case names) on top."""
    settings = {"OPHOOK_" + n: _environment_value("OPHOOK_" + n) for n in NAMES if os.environ.get("OPHOOK_" + n)}
    for key, value in options.items():
        if value is None:
            continue
        name = ALIASES.get(key, key).upper()
        if name not in NAMES:
            raise TypeError("unknown ophook option %r (accepted: %s)"
                            % (key, ", ".join(n.lower() for n in NAMES)))
        settings["OPHOOK_" + name] = _text(value)
    return settings


def truthy(settings, name):
    return settings.get("OPHOOK_" + name, "0").strip().lower() in ("1", "true", "yes", "on")


def levels(settings):
    raw = settings.get("OPHOOK_LEVELS") or "numpy,torch_function"
    return {part.strip() for part in raw.split(",") if part.strip()}
