"""`python -m ophook ARGS` and the `ophook` console script of an installed package: replaces this
process with the packaged C++ `ophook` executable (same arguments, same pid, so its exit status and
signal handling are the command's own)."""
import os
import sys


def executable_path():
    """The command: beside this file and libophook.so where `pip install` puts them, or build/ophook
    when this is a build tree's package (build/python_shim/ophook/). The installed place when
    neither exists."""
    here = os.path.dirname(os.path.abspath(__file__))
    installed = os.path.join(here, "ophook")
    for path in (installed, os.path.join(os.path.dirname(os.path.dirname(here)), "ophook")):
        if os.access(path, os.X_OK) and not os.path.isdir(path):
            return path
    return installed


def main():
    path = executable_path()
    if not os.access(path, os.X_OK):
        sys.stderr.write("[ophook] no ophook executable at %s: this is neither an installed package "
                         "(pip install .) nor a build tree's (build/python_shim/ophook)\n" % path)
        return 2
    os.execv(path, ["ophook"] + sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
