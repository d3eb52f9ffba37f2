#!/usr/bin/env bash
# The runs behind this folder, on the lent GPU machine, from the repository root after
# bench/run-device.sh has built build-device (it is called as that script's cmd: step):
#   1. `graphdirect bench step` with the per-op breakdown, dumping the timed blocks;
#   2. bench/pyg_step.py on those blocks (PyTorch + PyG, every adjacency form it takes);
#   3. given BEFORE, a copy of src/nn/ops_cuda.cu from before the speed work (carried along),
#      the same benchmark built with that file instead, for the before/after.
# Usage: bash bench/results/2026-11-22-h100-step/run.sh COMMIT [BEFORE]
set -uo pipefail
commit=${1:-unknown}
before=${2:-}
out=${OUT:-$PWD/device-out}
mkdir -p "$out"
cli=build-device/graphdirect

echo "== bench step (ours, commit $commit)"
"$cli" bench step --breakdown --commit "$commit" --json "$out/step.json" --dump /tmp/gd-blocks \
    || echo "bench step failed"

echo "== PyTorch + PyG on the same blocks"
python3 -c 'import torch, torch_geometric; print("torch", torch.__version__, "pyg", torch_geometric.__version__, "cuda", torch.version.cuda)'
PYTHONUNBUFFERED=1 python3 bench/pyg_step.py /tmp/gd-blocks --json "$out/pyg.json" \
    || echo "pyg_step failed"

if [ -n "$before" ] && [ -f "$before" ]; then
    echo "== the same benchmark with the nn CUDA backend before the speed work"
    base=/tmp/gd-base
    rm -rf "$base" && mkdir -p "$base"
    tar --exclude=./build-device --exclude=./.data --exclude=./.deps --exclude=./scratch -cf - . |
        tar -xf - -C "$base"
    cp "$before" "$base/src/nn/ops_cuda.cu"
    deps=$PWD/.deps/root
    flags=(-DGD_CJSON_INCLUDE_DIR="$deps/usr/include"
           -DGD_CJSON_LIBRARY="$deps/usr/lib/x86_64-linux-gnu/libcjson.so.1")
    if [ ! -f /usr/include/zlib.h ]; then
        zlib_so=$(ls /lib/x86_64-linux-gnu/libz.so.1 /usr/lib/x86_64-linux-gnu/libz.so.1 2>/dev/null | head -1)
        flags+=(-DZLIB_INCLUDE_DIR="$deps/usr/include" -DZLIB_LIBRARY="$zlib_so")
    fi
    if cmake -S "$base" -B "$base/build" -DCMAKE_BUILD_TYPE=Release -DGD_WITH_CUDA=ON \
            -DCMAKE_CUDA_ARCHITECTURES=90 -DGD_BUILD_TESTS=OFF "${flags[@]}" >/tmp/gd-base-cmake.log 2>&1 &&
        cmake --build "$base/build" -j"$(nproc)" --target graphdirect_cli >/tmp/gd-base-build.log 2>&1; then
        "$base/build/graphdirect" bench step --breakdown --commit "$commit (ops_cuda.cu before)" \
            --json "$out/step-before.json" || echo "bench step (before) failed"
    else
        echo "the build with the earlier ops_cuda.cu failed"
        tail -20 /tmp/gd-base-cmake.log /tmp/gd-base-build.log
    fi
fi
