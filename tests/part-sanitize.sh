#!/usr/bin/env bash
# One GPU test under compute-sanitizer, its parts in parallel processes, each chosen by an
# environment variable of the test, so that a slow tool (racecheck) fits a device call:
#   bash tests/part-sanitize.sh BUILD TEST VAR "TOOLS" "PARTS" [LIMIT_S]
# e.g. bash tests/part-sanitize.sh build-device test_train_hetero GD_TEST_TRAIN_HETERO_GPU \
#        "memcheck racecheck synccheck" "rsage half rgat exact caches igbh" 500
# racecheck and synccheck skip cuBLAS's GEMM kernels (not ours), as tests/gpu_suite.sh does.
# Logs under $OUT/part-san (or ./device-out/part-san); one summary line per (tool, part).
set -uo pipefail
build=$(cd "$1" && pwd)
test=$2 var=$3 tools=$4 parts=$5 limit=${6:-500}
out=${OUT:-$PWD/device-out}/part-san
mkdir -p "$out"
san=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
# Each process gets its share of the cores (GD_THREADS, OMP_NUM_THREADS): 18 processes of 16
# threads each on 16 cores left every one of them short of its limit (s8, call 5).
set -- $tools
ntools=$#
set -- $parts
nprocs=$((ntools * $#))
share=$(( $(nproc) / (nprocs > 0 ? nprocs : 1) ))
[ "$share" -ge 1 ] || share=1
export GD_THREADS=${GD_THREADS:-$share} OMP_NUM_THREADS=${OMP_NUM_THREADS:-$share}
pids=()
for tool in $tools; do
    for part in $parts; do
        extra=()
        [ "$tool" = memcheck ] || extra=(--kernel-name-exclude kns=gemm)
        (
            cd "$build/tests" || exit 1
            log="$out/$tool-$test-$part.log"
            t0=$(date +%s)
            env "$var=$part" timeout "$limit" "$san" --tool "$tool" --error-exitcode 99 \
                --print-limit 20 "${extra[@]}" "./$test" >"$log" 2>&1
            rc=$?
            echo "$tool $test part $part: rc $rc in $(( $(date +%s) - t0 )) s;" \
                "$(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$log" | tail -1)"
            exit $rc
        ) &
        pids+=($!)
    done
done
bad=0
for p in "${pids[@]}"; do wait "$p" || bad=1; done
exit $bad
