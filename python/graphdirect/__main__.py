"""`python -m graphdirect ARGS` (and the `graphdirect` script that `pip install` puts on PATH):
run the graphdirect command bundled with this package.

The command is searched next to the package (bin/graphdirect: `pip install .` and wheels put it
there), where `make install` put it (_installed.py), and beside $GRAPHDIRECT_LIB (a build
folder). It replaces this process, so its exit status and signals are the command's own.
"""
import os
import sys


def _command():
    here = os.path.dirname(os.path.abspath(__file__))
    tried = []
    candidates = [os.path.join(here, "bin", "graphdirect")]
    try:
        from . import _installed
        candidates.append(getattr(_installed, "CLI", ""))
    except ImportError:
        pass
    lib = os.environ.get("GRAPHDIRECT_LIB")
    if lib:
        candidates.append(os.path.join(os.path.dirname(os.path.abspath(lib)), "graphdirect"))
    for path in candidates:
        if not path:
            continue
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path, tried
        tried.append(path)
    return None, tried


def main(argv=None):
    args = sys.argv[1:] if argv is None else list(argv)
    path, tried = _command()
    if path is None:
        sys.stderr.write(
            "graphdirect: the graphdirect command was not found (looked at: %s). Install the "
            "package with `pip install .` from the source tree, which bundles it, or `make "
            "install`.\n" % (", ".join(tried) or "nothing"))
        return 127
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(path, [path] + args)
    return 127  # not reached: execv replaces the process or raises OSError


if __name__ == "__main__":
    sys.exit(main())
