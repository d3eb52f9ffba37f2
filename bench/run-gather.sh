#!/usr/bin/env bash
# One call on the lent GPU machine for `graphdirect bench gather`: configure and build the
# command-line tool with CUDA (the same build-device folder and dependency flags as
# run-device.sh), run the quick benchmark first (seconds: catches a broken build or a crash
# before the full run spends device time), then the full one. Results go to $OUT (or
# ./device-out): gather.txt (the table and targets), gather.err (progress), gather.json.
# Usage: bash bench/run-gather.sh COMMIT [extra bench gather options...]
# Carry: .deps (libcjson/zlib headers, extracted Debian packages).
set -uo pipefail
commit=${1:-unknown}
shift || true
out=${OUT:-$PWD/device-out}
mkdir -p "$out"

echo "== bench gather: commit $commit, $(date -u +%Y-%m-%dT%H:%M:%SZ)"
nvidia-smi --query-gpu=name,memory.total,driver_version,pcie.link.gen.max,pcie.link.width.max \
    --format=csv,noheader || true
echo "cores: $(nproc), memory: $(free -g | awk '/Mem:/ {print $2}') GiB, memlock: $(ulimit -l)"

deps=$PWD/.deps/root
cmake_deps=()
if [ -d "$deps/usr/include/cjson" ]; then
    cmake_deps+=(-DGD_CJSON_INCLUDE_DIR="$deps/usr/include"
                 -DGD_CJSON_LIBRARY="$deps/usr/lib/x86_64-linux-gnu/libcjson.so.1")
    export LD_LIBRARY_PATH="$deps/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
if [ ! -f /usr/include/zlib.h ]; then
    zlib_so=$(ls /lib/x86_64-linux-gnu/libz.so.1 /usr/lib/x86_64-linux-gnu/libz.so.1 2>/dev/null | head -1)
    cmake_deps+=(-DZLIB_INCLUDE_DIR="$deps/usr/include" -DZLIB_LIBRARY="$zlib_so")
fi

t0=$(date +%s)
cmake -S . -B build-device -DCMAKE_BUILD_TYPE=Release -DGD_WITH_CUDA=ON \
    -DCMAKE_CUDA_ARCHITECTURES=90 "${cmake_deps[@]}" >"$out/cmake.log" 2>&1 \
    || { echo "configure failed"; tail -30 "$out/cmake.log"; exit 1; }
cmake --build build-device -j"$(nproc)" --target graphdirect_cli >"$out/build.log" 2>&1 \
    || { echo "build failed"; grep -E "error" -A3 "$out/build.log" | head -40; exit 1; }
echo "== build: $(( $(date +%s) - t0 )) s"

cli=build-device/graphdirect
echo "== quick run"
$cli bench gather --quick --commit "$commit" "$@" >"$out/gather-quick.txt" 2>"$out/gather-quick.err"
rc=$?
cat "$out/gather-quick.txt"
[ $rc -eq 0 ] || { echo "quick run failed ($rc)"; tail -20 "$out/gather-quick.err"; exit 1; }

echo "== full run"
$cli bench gather --json "$out/gather.json" --commit "$commit" "$@" \
    >"$out/gather.txt" 2>"$out/gather.err"
rc=$?
cat "$out/gather.txt"
[ $rc -eq 0 ] || { echo "full run failed ($rc)"; tail -20 "$out/gather.err"; exit 1; }
echo "== done: $(( $(date +%s) - t0 )) s"
