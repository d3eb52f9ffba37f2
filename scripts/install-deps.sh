#!/usr/bin/env bash
# Installs what graphdirect needs to build and test, from Debian packages (and numpy from pip
# when the python3 on PATH is not Debian's). As root it installs what is missing; otherwise it
# prints the exact command to run and fails. GD_NO_INSTALL=1 only checks.
set -u

missing_deb=()
need_numpy=0

have_header() { echo "#include <$1>" | ${CC:-cc} -E -x c - >/dev/null 2>&1; }
have_cmd() { command -v "$1" >/dev/null 2>&1; }

have_cmd cmake || missing_deb+=(cmake)
have_cmd make || missing_deb+=(make)
have_cmd cc || missing_deb+=(gcc)
have_cmd pkg-config || missing_deb+=(pkg-config)
have_header zlib.h || missing_deb+=(zlib1g-dev)
have_header cjson/cJSON.h || missing_deb+=(libcjson-dev)
# DLPack, header only: minibatches handed to PyTorch / CuPy / numpy without a copy.
have_header dlpack/dlpack.h || missing_deb+=(libdlpack-dev)
# OpenBLAS gives the CPU training path its GEMM (without it the build uses a slower built-in loop).
pkg-config --exists openblas 2>/dev/null || missing_deb+=(libopenblas-dev)
# liburing: the SSD tier's I/O engine reads with io_uring (without it, with pread threads).
pkg-config --exists liburing 2>/dev/null || missing_deb+=(liburing-dev)
have_cmd python3 || missing_deb+=(python3)
if have_cmd python3 && ! python3 -c 'import numpy' >/dev/null 2>&1; then need_numpy=1; fi
# Optional: clang builds the libFuzzer targets; without it `make test` skips them and says so.
have_cmd clang || missing_deb+=(clang)
# Optional: gnuplot draws the charts of `graphdirect plot`; without it that command says how to
# install it and the positive cases of tests/plot_smoke.sh are skipped.
have_cmd gnuplot || missing_deb+=(gnuplot-nox)
# Optional: Open MPI lets `mpirun -np N graphdirect train ...` start the ranks of a multi-GPU run
# (the tool alone links it); without it the build says so and `train --gpus N` still works.
have_cmd mpicc || missing_deb+=(libopenmpi-dev)
have_cmd mpirun || missing_deb+=(openmpi-bin)

# Optional: `pip install .` builds through scikit-build-core (tests/pip_install.sh skips
# without it); pip installs it below, and a failure (no network) only says so.
need_skbuild=0
if have_cmd python3 && ! python3 -c 'import scikit_build_core' >/dev/null 2>&1; then need_skbuild=1; fi
have_cmd python3 && ! python3 -c 'import venv, ensurepip' >/dev/null 2>&1 && missing_deb+=(python3-venv)

install_skbuild() {
    [ $need_skbuild -eq 1 ] || return 0
    local extra=()
    [ "$(command -v python3)" = /usr/bin/python3 ] && extra=(--break-system-packages)
    python3 -m pip install -q "${extra[@]}" "scikit-build-core>=0.8" >/dev/null 2>&1 ||
        echo "graphdirect: could not pip install scikit-build-core (no network?): \`pip install .\` and its test are skipped" >&2
}

if [ ${#missing_deb[@]} -eq 0 ] && [ $need_numpy -eq 0 ]; then
    [ "$(id -u)" = 0 ] && [ "${GD_NO_INSTALL:-0}" != 1 ] && install_skbuild
    exit 0
fi

pip_cmd="python3 -m pip install numpy"
if [ "${GD_NO_INSTALL:-0}" = 1 ] || [ "$(id -u)" != 0 ]; then
    echo "graphdirect: missing build dependencies." >&2
    [ ${#missing_deb[@]} -gt 0 ] && echo "  run: sudo apt-get install -y ${missing_deb[*]}" >&2
    [ $need_numpy -eq 1 ] && echo "  run: $pip_cmd   (or: sudo apt-get install python3-numpy)" >&2
    exit 1
fi

if [ ${#missing_deb[@]} -gt 0 ]; then
    echo "graphdirect: installing ${missing_deb[*]} (apt-get)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null && apt-get install -y -qq "${missing_deb[@]}" >/dev/null || {
        echo "graphdirect: apt-get install ${missing_deb[*]} failed" >&2
        exit 1
    }
fi
if [ $need_numpy -eq 1 ]; then
    echo "graphdirect: installing numpy for $(command -v python3)"
    if [ "$(command -v python3)" = /usr/bin/python3 ]; then
        apt-get install -y -qq python3-numpy >/dev/null || $pip_cmd --break-system-packages -q
    else
        $pip_cmd -q
    fi
    python3 -c 'import numpy' || { echo "graphdirect: could not install numpy" >&2; exit 1; }
fi
install_skbuild
exit 0
