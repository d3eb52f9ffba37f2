#!/usr/bin/env bash
# One call on a lent machine of several GPUs (docs/multi_gpu.md): build with bench/run-device.sh's
# recipe, then the steps asked for, each under its own time limit, with logs under $OUT.
# Usage: bash bench/multigpu-device.sh COMMIT STEP...
#   probe          GPUs, their links (nvidia-smi topo -m), NCCL, MPI, memory
#   tests          test_dp (NCCL on 2-3 GPUs), test_tier_peer, test_context, cli_launch
#   launch         train --gpus 1/2/4 on a generated small dataset (losses compared), mpirun -np 2
#   failures       a rank killed with SIGKILL, a rank out of GPU memory, Ctrl-C to the launcher:
#                  every rank stops, no hang
#   scale:N:ARGS   graphdirect bench scale --gpus N ARGS, JSON to $OUT/scale-N-<k>.json
#   cmd:TEXT       run TEXT with bash
# Carry: .deps and .data, as for bench/run-device.sh.
set -uo pipefail
commit=${1:-unknown}
shift
out=${OUT:-$PWD/device-out}
mkdir -p "$out"
exec > >(tee -a "$out/device.log") 2>&1
# NVLink multicast stays off on the lent machines (KINDS.md).
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
echo "== graphdirect multi-GPU device run: commit $commit, $(date -u +%Y-%m-%dT%H:%M:%SZ)"
nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv,noheader || true
echo "cores: $(nproc), memory: $(free -g | awk '/Mem:/ {print $2}') GiB"
# Build only (the run-device.sh recipe with no step), then our steps.
OUT=$out/build bash bench/run-device.sh "$commit" cmd:true >/dev/null 2>&1 \
    || { echo "build failed"; tail -40 "$out/build/device.log"; exit 1; }
export LD_LIBRARY_PATH="$PWD/.deps/root/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
cli=$PWD/build-device/graphdirect
ngpu=$(nvidia-smi -L | wc -l)
k=0

step_probe() {
    nvidia-smi topo -m
    nvidia-smi nvlink -s -i 0 2>/dev/null | head -8
    ls /usr/lib/x86_64-linux-gnu/libnccl.so* 2>/dev/null
    grep -m1 "NCCL_MAJOR\|define NCCL_VERSION_CODE" /usr/include/nccl.h 2>/dev/null
    which mpirun && mpirun --version | head -1
    grep -E "GD_WITH_(NCCL|MPI)|NCCL|MPI" build-device/CMakeCache.txt | grep -v "^//" | head
    free -g
}

step_tests() {
    (cd build-device && timeout 400 ctest --output-on-failure --timeout 300 \
        -R "^(${1:-test_dp|test_tier_peer|test_context|cli_launch})\$") | tee -a "$out/ctest-multi.log"
}

# The losses of every epoch of a train run's output ("epoch N ... loss X").
losses() { grep -oE "^epoch +[0-9]+.*loss [0-9.]+" "$1" | grep -oE "loss [0-9.]+" | tr '\n' ' '; }

step_launch() {
    local d=/tmp/gd-small
    $cli generate --preset small --seed 3 --out $d --overwrite </dev/null >/dev/null || return 1
    local common=(train $d --mode zero-copy --epochs 3 --no-baseline --no-full-test --seed 5
                  --dropout 0)
    timeout 300 $cli "${common[@]}" --batch 1024 >"$out/launch-1.txt" 2>&1
    echo "1 GPU  (batch 1024): rc $? $(losses "$out/launch-1.txt")"
    timeout 300 $cli "${common[@]}" --batch 512 --gpus 2 >"$out/launch-2.txt" 2>&1
    echo "2 GPUs (batch 512):  rc $? $(losses "$out/launch-2.txt")"
    if [ "$ngpu" -ge 4 ]; then
        timeout 300 $cli "${common[@]}" --batch 256 --gpus 4 --placement partition \
            >"$out/launch-4.txt" 2>&1
        echo "4 GPUs (batch 256, partition): rc $? $(losses "$out/launch-4.txt")"
    fi
    timeout 300 mpirun --allow-run-as-root -np 2 -x NCCL_NVLS_ENABLE -x LD_LIBRARY_PATH \
        $cli "${common[@]}" --batch 512 >"$out/launch-mpi.txt" 2>&1
    echo "mpirun -np 2 (batch 512): rc $? $(losses "$out/launch-mpi.txt")"
    tail -5 "$out/launch-2.txt"
}

step_failures() {
    # A rank killed with SIGKILL in the middle of training: the launcher stops the other.
    $cli generate --preset products --seed 3 --out /tmp/gd-products --overwrite </dev/null \
        >/dev/null || return 1
    local t0 launcher victim
    $cli train /tmp/gd-products --gpus 2 --epochs 2000 --no-baseline >"$out/launch-kill.txt" 2>&1 &
    launcher=$!
    sleep 12
    victim=$(pgrep -P "$launcher" | tail -1)
    echo "launcher $launcher, workers $(pgrep -P "$launcher" | tr '\n' ' '); killing $victim"
    t0=$(date +%s)
    kill -9 "$victim"
    wait $launcher
    echo "killed rank: launcher rc $? after $(( $(date +%s) - t0 )) s; workers left: \
$(pgrep -fc "graphdirect train /tmp/gd-products")"
    grep -E "rank .*(failed|killed|stopp)|graphdirect:" "$out/launch-kill.txt" | tail -6
    # A rank out of GPU memory: another process holds nearly all of GPU 1 first.
    python3 -c "import torch, time
f, _ = torch.cuda.mem_get_info(1)
x = torch.empty(int(f * 0.98), dtype=torch.uint8, device='cuda:1')
print('holding', x.numel() >> 20, 'MiB of GPU 1', flush=True)
time.sleep(90)" &
    local hog=$!
    sleep 15
    t0=$(date +%s)
    timeout 300 $cli train /tmp/gd-products --gpus 2 --epochs 1 --no-baseline --mode all-gpu \
        >"$out/launch-oom.txt" 2>&1
    echo "rank 1 out of GPU memory: launcher rc $? after $(( $(date +%s) - t0 )) s"
    kill $hog 2>/dev/null; wait $hog 2>/dev/null
    grep -E "rank|failed|stopping|memory" "$out/launch-oom.txt" | tail -6
    # Ctrl-C (SIGINT to the launcher) stops every rank.
    $cli train /tmp/gd-products --gpus 2 --epochs 2000 --no-baseline >"$out/launch-int.txt" 2>&1 &
    launcher=$!
    sleep 12
    kill -INT $launcher
    t0=$(date +%s)
    wait $launcher
    echo "SIGINT: launcher rc $? after $(( $(date +%s) - t0 )) s; workers left: \
$(pgrep -fc "graphdirect train /tmp/gd-products")"
    tail -3 "$out/launch-int.txt"
}

step_scale() {
    local n=$1
    shift
    k=$((k + 1))
    echo "== bench scale --gpus $n $*"
    timeout "${GD_SCALE_TIMEOUT:-590}" stdbuf -oL $cli bench scale --gpus "$n" --commit "$commit" \
        --json "$out/scale-$n-$k.json" "$@" \
        2>&1 | grep --line-buffered -v "^generate:"
}

for s in "$@"; do
    ts=$(date +%s)
    echo "== step $s"
    case "$s" in
    probe) step_probe ;;
    tests) step_tests ;;
    tests:*) step_tests "${s#tests:}" ;;
    launch) step_launch ;;
    failures) step_failures ;;
    scale:*)
        rest=${s#scale:}
        n=${rest%%:*}
        args=${rest#*:}
        [ "$args" = "$rest" ] && args=""
        # shellcheck disable=SC2086
        step_scale "$n" $args
        ;;
    cmd:*) bash -c "${s#cmd:}" ;;
    *) echo "unknown step '$s'" ;;
    esac
    echo "== step $s: $(( $(date +%s) - ts )) s"
done
