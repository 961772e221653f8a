"""`python -m ophook ARGS` and the `ophook` console script of an installed package: replaces this
process with the packaged C++ `ophook` executable (same arguments, same pid, so its exit status and
signal handling are the command's own)."""
import os
import sys


def executable_path():
    """Where `pip install` puts the command: beside this file and libophook.so."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "ophook")


def main():
    path = executable_path()
    if not os.access(path, os.X_OK):
        sys.stderr.write("[ophook] no ophook executable at %s: this is not an installed package "
                         "(pip install .); in a build tree run build/ophook\n" % path)
        return 2
    os.execv(path, ["ophook"] + sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
