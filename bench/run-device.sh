#!/usr/bin/env bash
# One call on the lent GPU machine: build with CUDA, then the steps asked for (default: tests).
# Results go to $OUT (or ./device-out).
# Usage: bash bench/run-device.sh COMMIT [STEP...]
#   tests        the whole test suite (GPU tests included; none may skip)
#   ctest:REGEX  only the tests matching REGEX
#   gather       graphdirect bench gather (JSON to $OUT/bench-gather.json)
#   sample       graphdirect bench sample (JSON to $OUT/bench-sample.json)
#   foundation   generate / CSC benchmarks of the foundation
#   cmd:TEXT     run TEXT with bash (e.g. cmd:"GD_GATHER_SHAPE=8x8 build-device/graphdirect ...")
# Carry: .deps (libcjson/zlib/dlpack/liburing, extracted Debian packages) and .data (cora).
set -uo pipefail
commit=${1:-unknown}
out=${OUT:-$PWD/device-out}
mkdir -p "$out"
log="$out/device.log"
exec > >(tee -a "$log") 2>&1

echo "== graphdirect device run: commit $commit, $(date -u +%Y-%m-%dT%H:%M:%SZ)"
nvidia-smi --query-gpu=name,memory.total,driver_version,pcie.link.gen.max,pcie.link.width.max \
    --format=csv,noheader || true
echo "cores: $(nproc), memory: $(free -g | awk '/Mem:/ {print $2}') GiB"

deps=$PWD/.deps/root
cmake_deps=(-DGD_DLPACK_INCLUDE_DIR="$deps/usr/include"
            -DGD_CJSON_INCLUDE_DIR="$deps/usr/include"
            -DGD_CJSON_LIBRARY="$deps/usr/lib/x86_64-linux-gnu/libcjson.so.1")
if [ ! -f /usr/include/zlib.h ]; then
    zlib_so=$(ls /lib/x86_64-linux-gnu/libz.so.1 /usr/lib/x86_64-linux-gnu/libz.so.1 2>/dev/null | head -1)
    cmake_deps+=(-DZLIB_INCLUDE_DIR="$deps/usr/include" -DZLIB_LIBRARY="$zlib_so")
fi
export LD_LIBRARY_PATH="$deps/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# liburing (the SSD tier's io_uring engine) from the carried Debian packages when the machine
# has none: a .pc file pointing at them.
if ! pkg-config --exists liburing 2>/dev/null && [ -f "$deps/usr/include/liburing.h" ]; then
    mkdir -p "$PWD/.deps/pc"
    sed "s|^prefix=.*|prefix=$deps/usr|; s|^libdir=.*|libdir=$deps/usr/lib/x86_64-linux-gnu|; s|^includedir=.*|includedir=$deps/usr/include|" \
        "$deps/usr/lib/x86_64-linux-gnu/pkgconfig/liburing.pc" > "$PWD/.deps/pc/liburing.pc"
    export PKG_CONFIG_PATH="$PWD/.deps/pc${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
fi

t0=$(date +%s)
cmake -S . -B build-device -DCMAKE_BUILD_TYPE=Release -DGD_WITH_CUDA=ON \
    -DCMAKE_CUDA_ARCHITECTURES=90 -DGD_SHARED_DATA="$PWD/.data" "${cmake_deps[@]}" \
    >"$out/cmake.log" 2>&1 || { echo "configure failed"; tail -30 "$out/cmake.log"; exit 1; }
cmake --build build-device -j"$(nproc)" >"$out/build.log" 2>&1 \
    || { echo "build failed"; grep -E "error" -A3 "$out/build.log" | head -40; exit 1; }
echo "== build: $(( $(date +%s) - t0 )) s"

cli=build-device/graphdirect
[ $# -ge 2 ] || set -- "$commit" tests
shift
for step in "$@"; do
    ts=$(date +%s)
    case "$step" in
    tests)
        echo "== tests (GPU present: GPU tests run, none may skip)"
        (cd build-device && ctest --output-on-failure -j8 --timeout 600) | tee "$out/ctest.log"
        echo "skipped tests: $(grep -c "Skipped" "$out/ctest.log" || true)"
        ;;
    ctest:*)
        echo "== tests matching ${step#ctest:}"
        (cd build-device && ctest --output-on-failure --timeout 600 -R "${step#ctest:}") \
            | tee -a "$out/ctest.log"
        ;;
    gather)
        echo "== benchmark: graphdirect bench gather"
        $cli bench gather --commit "$commit" --json "$out/bench-gather.json"
        ;;
    sample)
        echo "== benchmark: graphdirect bench sample"
        $cli bench sample --commit "$commit" --json "$out/bench-sample.json"
        ;;
    foundation)
        $cli info --params
        echo "== benchmark: generate products in memory (all cores)"
        $cli generate --preset products --seed 1 </dev/null
        echo "== benchmark: generate products to disk"
        $cli generate --preset products --seed 1 --out /tmp/gd-products --overwrite </dev/null
        $cli info /tmp/gd-products
        echo "== benchmark: COO -> CSC, 62M random edges over 2.45M nodes"
        GD_BENCH_CSC=62000000 build-device/tests/test_csc
        ;;
    cmd:*)
        echo "== ${step#cmd:}"
        bash -c "${step#cmd:}"
        ;;
    *)
        echo "unknown step '$step'"
        ;;
    esac
    echo "== $step: $(( $(date +%s) - ts )) s"
done
echo "== done: $(( $(date +%s) - t0 )) s"
