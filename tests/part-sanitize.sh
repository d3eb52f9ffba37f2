#!/usr/bin/env bash
# One GPU test under compute-sanitizer, its parts in parallel processes, each chosen by an
# environment variable of the test, so that a slow tool (racecheck) fits a device call:
#   bash tests/part-sanitize.sh BUILD "TEST [ARGS]" VAR "TOOLS" "PARTS" [LIMIT_S]
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
# On a machine of several GPUs the processes take them in turn (one GPU each), unless the
# caller chose the GPUs with CUDA_VISIBLE_DEVICES; GD_PART_FIRST_GPU=K starts the turn at GPU K.
ngpus=1
if [ -z "${CUDA_VISIBLE_DEVICES:-}" ] && command -v nvidia-smi >/dev/null; then
    ngpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
    [ "$ngpus" -ge 1 ] || ngpus=1
fi
k=${GD_PART_FIRST_GPU:-0}
pids=()
for tool in $tools; do
    for part in $parts; do
        extra=()
        gpu=()
        [ "$ngpus" -gt 1 ] && gpu=("CUDA_VISIBLE_DEVICES=$((k % ngpus))")
        k=$((k + 1))
        [ "$tool" = memcheck ] || extra=(--kernel-name-exclude kns=gemm)
        (
            cd "$build/tests" || exit 1
            read -r -a cmd <<<"$test"
            log="$out/$tool-$(echo "$test" | tr -c 'A-Za-z0-9_\n' -)-$part.log"
            t0=$(date +%s)
            env "${gpu[@]}" "$var=$part" timeout "$limit" "$san" --tool "$tool" --error-exitcode 99 \
                --print-limit 20 "${extra[@]}" "./${cmd[0]}" "${cmd[@]:1}" >"$log" 2>&1
            rc=$?
            echo "$tool $test part $part: rc $rc in $(( $(date +%s) - t0 )) s;" \
                "$(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$log" | tail -1)" \
                "${gpu[*]}; last line: $(tail -1 "$log" | cut -c1-160)"
            exit $rc
        ) &
        pids+=($!)
    done
done
bad=0
for p in "${pids[@]}"; do wait "$p" || bad=1; done
exit $bad
