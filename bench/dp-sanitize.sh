#!/usr/bin/env bash
# test_dp (data parallelism over NCCL, issue 14) under compute-sanitizer, its parts in parallel
# processes (GD_TEST_DP_PART) so that racecheck fits a device call. memcheck runs with
# --report-api-errors no: libnccl probes kernels this toolkit's NCCL has no image for
# (cudaErrorNoKernelImageForDevice) and enables peer access graphdirect enabled already, and
# each probe is an "error" of the API; graphdirect checks every CUDA call it makes itself, so a
# failing call of ours fails the test. Memory access errors are still reported.
# racecheck and synccheck skip NCCL's and cuBLAS's kernels (not ours).
# Usage (on a machine of >= 2 GPUs, after bench/run-device.sh built build-device):
#   bash bench/dp-sanitize.sh [TOOLS] [PARTS] [LIMIT_S]
# A part PART:PLACEMENT (staged:replicate, staged:partition, staged:auto) runs one placement of
# that part (GD_TEST_DP_PLACE), for racecheck's slowest part; staged needs one GPU only.
set -uo pipefail
tools=${1:-memcheck racecheck synccheck}
parts=${2:-staged nccl nccl-place}
limit=${3:-540}
out=${OUT:-$PWD/device-out}/dp-san
mkdir -p "$out"
san=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
export NCCL_NVLS_ENABLE=0 GD_TEST_COMM_TIMEOUT=120
pids=()
for tool in $tools; do
    for part in $parts; do
        extra=(--report-api-errors no)
        [ "$tool" = memcheck ] || extra=(--kernel-name-exclude kns=gemm --kernel-name-exclude kns=nccl)
        (
            cd build-device/tests || exit 1
            t0=$(date +%s)
            GD_TEST_DP_PART=${part%%:*} GD_TEST_DP_PLACE=$([ "${part#*:}" = "$part" ] || echo "${part#*:}") \
                timeout "$limit" "$san" --tool "$tool" --error-exitcode 99 \
                --print-limit 20 "${extra[@]}" ./test_dp >"$out/$tool-${part/:/-}.log" 2>&1
            rc=$?
            echo "$tool test_dp part $part: rc $rc in $(( $(date +%s) - t0 )) s;" \
                "$(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$out/$tool-${part/:/-}.log" | tail -1)"
        ) &
        pids+=($!)
    done
done
for p in "${pids[@]}"; do wait "$p"; done
