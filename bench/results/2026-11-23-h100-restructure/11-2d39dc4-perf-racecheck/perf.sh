#!/usr/bin/env bash
# Side by side on one machine: the restructure (this tree) and the base commit 64d05dc (carried
# as scratch/base.tar): bench epoch on products (all-gpu, zero-copy, cpu-centric), twice each,
# alternating, and bench gather once each.
set -u
out=${OUT:-$PWD/device-out}
mkdir -p "$out"
exec > >(tee -a "$out/perf.log") 2>&1
commit=${1:-unknown}
deps=$PWD/.deps/root
export LD_LIBRARY_PATH="$deps/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
flags=(-DCMAKE_BUILD_TYPE=Release -DGD_WITH_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DGD_BUILD_TESTS=OFF
       -DGD_DLPACK_INCLUDE_DIR="$deps/usr/include" -DGD_CJSON_INCLUDE_DIR="$deps/usr/include"
       -DGD_CJSON_LIBRARY="$deps/usr/lib/x86_64-linux-gnu/libcjson.so.1")
if [ ! -f /usr/include/zlib.h ]; then
    zlib_so=$(ls /lib/x86_64-linux-gnu/libz.so.1 /usr/lib/x86_64-linux-gnu/libz.so.1 2>/dev/null | head -1)
    flags+=(-DZLIB_INCLUDE_DIR="$deps/usr/include" -DZLIB_LIBRARY="$zlib_so")
fi
echo "== perf: new $commit vs base 64d05dc, $(date -u +%Y-%m-%dT%H:%M:%SZ)"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
mkdir -p /tmp/base && tar -xf scratch/base.tar -C /tmp/base
t0=$(date +%s)
(cmake -S /tmp/base -B /tmp/base/b "${flags[@]}" >/tmp/cmake-base.log 2>&1 && cmake --build /tmp/base/b -j8 --target graphdirect_cli >/tmp/build-base.log 2>&1) &
pb=$!
(cmake -S . -B build-perf "${flags[@]}" >/tmp/cmake-new.log 2>&1 && cmake --build build-perf -j8 --target graphdirect_cli >/tmp/build-new.log 2>&1) &
pn=$!
# Wait for the two builds only: a bare `wait` would also wait for the tee of the log.
wait $pb $pn
echo "== builds: $(($(date +%s) - t0)) s"
ls -la /tmp/base/b/graphdirect build-perf/graphdirect || { tail -20 /tmp/build-*.log /tmp/cmake-*.log; exit 1; }
for r in 1 2; do
    for v in base new; do
        bin=$([ $v = base ] && echo /tmp/base/b/graphdirect || echo build-perf/graphdirect)
        c=$([ $v = base ] && echo 64d05dc || echo "$commit")
        echo "== epoch products, $v ($c), round $r"
        $bin bench epoch --preset products --modes all-gpu,zero-copy,cpu-centric --warmup 10 \
            --commit "$c" --json "$out/epoch-$v-$r.json" 2>&1 | grep -v -E 'generate:|building|timing|warm-up'
    done
done
for v in base new; do
    bin=$([ $v = base ] && echo /tmp/base/b/graphdirect || echo build-perf/graphdirect)
    c=$([ $v = base ] && echo 64d05dc || echo "$commit")
    echo "== gather, $v ($c)"
    $bin bench gather --commit "$c" --json "$out/gather-$v.json" 2>&1 | grep -E 'DMA|512|ceiling|PASS|FAIL' | head -12
done
echo "== done: $(($(date +%s) - t0)) s"
