#!/usr/bin/env bash
# `pip install .` into a fresh virtual environment (issue 18, item 1): scikit-build-core builds
# the library with CMake (here without CUDA, the quicker build; the same path takes the toolkit
# where there is one) and bundles it and the `graphdirect` command into the package. Then, with
# no PYTHONPATH and no GRAPHDIRECT_LIB: the package loads its own library, `python -m graphdirect`
# and the `graphdirect` script run the command, and a model trains through the Python Trainer.
# Skips (77) without scikit-build-core (`make deps` installs it) or python3-venv.
set -u
src=$(cd "$1" && pwd)
skip() { echo "skip: $*"; exit 77; }
fail() { echo "FAIL: $*"; [ -f "$tmp/log" ] && tail -40 "$tmp/log"; exit 1; }
command -v python3 >/dev/null || skip "no python3"
python3 -c 'import scikit_build_core' 2>/dev/null ||
    skip "scikit-build-core is not installed (make deps installs it, or: python3 -m pip install scikit-build-core)"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# --system-site-packages: the build backend (and numpy) from the system, nothing of graphdirect.
python3 -m venv --system-site-packages "$tmp/venv" >/dev/null 2>&1 || skip "python3 -m venv failed (apt-get install python3-venv)"
py=$tmp/venv/bin/python
# A build backend that the system python finds outside its site-packages (the user's
# site-packages of `pip install --user`, or PYTHONPATH, which the install below drops) is not
# what a venv sees even with --system-site-packages (the device image has it so): point the
# venv at the folder the system python imports it from.
if ! env -u PYTHONPATH "$py" -c 'import scikit_build_core' 2>/dev/null; then
    where=$(python3 -c 'import os, scikit_build_core as m; print(os.path.dirname(os.path.dirname(m.__file__)))')
    site=$("$py" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
    echo "$where" >"$site/graphdirect_build_backend.pth"
    env -u PYTHONPATH "$py" -c 'import scikit_build_core' 2>/dev/null ||
        skip "scikit-build-core ($where) cannot be imported in a virtual environment"
fi
cd "$tmp"
# GD_PIP_CMAKE_ARGS (set by ctest): where the surrounding build found cJSON, zlib and DLPack.
# GD_PIP_CUDA=ON (the device runs): the CUDA backend, and the venv trains on the GPU.
cuda=${GD_PIP_CUDA:-OFF}
env -u PYTHONPATH -u GRAPHDIRECT_LIB CMAKE_ARGS="${GD_PIP_CMAKE_ARGS:-}" "$py" -m pip install --no-build-isolation --no-deps -q \
    -C cmake.define.GD_WITH_CUDA="$cuda" -C build-dir="$tmp/build" "$src" >"$tmp/log" 2>&1 ||
    fail "pip install $src"
run() { env -u PYTHONPATH -u GRAPHDIRECT_LIB "$@"; }
run "$py" -c "
import graphdirect, sys
assert graphdirect._lib.path.startswith('$tmp/venv'), graphdirect._lib.path
print('pip install: graphdirect', graphdirect.version(), 'from', graphdirect._lib.path)
" >"$tmp/log" 2>&1 || fail "import graphdirect from the venv"
cat "$tmp/log"
run "$py" -m graphdirect info >"$tmp/log" 2>&1 || fail "python -m graphdirect info"
grep -q "^graphdirect [0-9]" "$tmp/log" || fail "python -m graphdirect info printed no version"
run "$tmp/venv/bin/graphdirect" generate --preset tiny --out "$tmp/ds" >"$tmp/log" 2>&1 ||
    fail "the graphdirect script"
run "$py" -c "
import graphdirect
ds = graphdirect.Dataset('$tmp/ds')
with graphdirect.Trainer(ds, mode='cpu', fanouts=[5, 5], hidden=16) as t:
    r = t.fit(2)
assert r['test_acc'] > 0.3, r
print('pip install: trained 2 epochs in the venv, test accuracy %.3f' % r['test_acc'])
" >"$tmp/log" 2>&1 || fail "training from the venv"
cat "$tmp/log"
run "$py" -m graphdirect no-such-command >"$tmp/log" 2>&1 && fail "an unknown command succeeded"
if [ "$cuda" = ON ]; then
    run "$py" -c "
import graphdirect
assert graphdirect.device_count() > 0, 'the CUDA build of the package sees no GPU'
ds = graphdirect.Dataset('$tmp/ds')
with graphdirect.Trainer(ds, mode='zero-copy', fanouts=[5, 5], hidden=16) as t:
    r = t.fit(2)
assert r['test_acc'] > 0.3, r
print('pip install: trained 2 epochs on the GPU (zero-copy), test accuracy %.3f' % r['test_acc'])
" >"$tmp/log" 2>&1 || fail "training on the GPU from the venv"
    cat "$tmp/log"
fi
# A wheel (python -m build where the build module is installed, else pip wheel: the same
# scikit-build-core backend, the CMake build above reused), installed into a second fresh venv.
# (build.__main__: the source tree's own build/ folder imports as a namespace package `build`.)
if env -u PYTHONPATH "$py" -c 'import importlib.util as u, sys; sys.exit(u.find_spec("build.__main__") is None)' 2>/dev/null; then
    wheel_cmd=("$py" -m build --wheel --no-isolation --outdir "$tmp/wheels"
               -C cmake.define.GD_WITH_CUDA="$cuda" -C build-dir="$tmp/build" "$src")
else
    wheel_cmd=("$py" -m pip wheel --no-build-isolation --no-deps -q -w "$tmp/wheels"
               -C cmake.define.GD_WITH_CUDA="$cuda" -C build-dir="$tmp/build" "$src")
fi
env -u PYTHONPATH -u GRAPHDIRECT_LIB CMAKE_ARGS="${GD_PIP_CMAKE_ARGS:-}" "${wheel_cmd[@]}" \
    >"$tmp/log" 2>&1 || fail "building a wheel (${wheel_cmd[*]:1:3})"
whl=$(ls "$tmp"/wheels/graphdirect-*.whl 2>/dev/null | head -1)
[ -n "$whl" ] || fail "no wheel in $tmp/wheels"
python3 -m venv --system-site-packages "$tmp/venv2" >/dev/null 2>&1 || fail "a second venv"
env -u PYTHONPATH -u GRAPHDIRECT_LIB "$tmp/venv2/bin/python" -m pip install --no-deps -q "$whl" \
    >"$tmp/log" 2>&1 || fail "pip install $(basename "$whl")"
run "$tmp/venv2/bin/python" -c "
import graphdirect
assert graphdirect._lib.path.startswith('$tmp/venv2'), graphdirect._lib.path
ds = graphdirect.Dataset('$tmp/ds')
with graphdirect.Trainer(ds, mode='cpu', fanouts=[5, 5], hidden=16) as t:
    r = t.fit(1)
print('wheel: %s installed and trained, test accuracy %.3f' % ('$(basename "$whl")', r['test_acc']))
" >"$tmp/log" 2>&1 || fail "the installed wheel"
cat "$tmp/log"
echo "pip install: ok"
