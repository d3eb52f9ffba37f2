#!/usr/bin/env bash
# One call on a lent machine of several GPUs (docs/multi_gpu.md): build with bench/run-device.sh's
# recipe, then the steps asked for, each under its own time limit, with logs under $OUT.
# Usage: bash bench/multigpu-device.sh COMMIT STEP...
#   probe          GPUs, their links (nvidia-smi topo -m), NCCL, MPI, memory
#   tests          test_dp (NCCL on 2-3 GPUs), test_tier_peer, test_context, cli_launch
#   launch         train --gpus 1/2/4 on a generated small dataset (losses compared), mpirun -np 2
#   failures       a rank killed with SIGKILL, a rank out of GPU memory, Ctrl-C to the launcher:
#                  every rank stops, no hang
#   ddp            examples/pyg_ddp.py under torchrun: 2 NCCL ranks at B/2 against 1 rank at B
#   locality       --locality off / 4 / auto on products, one GPU, an eighth of the rows cached
#   cli-scale      train --gpus 1/2/4 on products (processes, as users run it): epoch times,
#                  at 1024 / N per GPU and at 1024 per GPU
#   step           bench step --breakdown at batch 1024, 512 and 256 (one GPU)
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

# PyG + DDP on graphdirect loaders under torchrun, NCCL: 2 ranks at B/2 against 1 at B.
step_ddp() {
    local d=/tmp/gd-small
    [ -d $d ] || $cli generate --preset small --seed 3 --out $d --overwrite </dev/null >/dev/null
    export GRAPHDIRECT_LIB=$PWD/build-device/libgraphdirect.so.0
    local args=(examples/pyg_ddp.py $d --epochs 3 --dropout 0 --fanouts 10,5)
    timeout 200 torchrun --nproc_per_node=1 "${args[@]}" --batch 1024 >"$out/ddp-1.txt" 2>&1
    echo "torchrun 1 rank (batch 1024): rc $?"
    grep -E "^epoch|^test" "$out/ddp-1.txt"
    timeout 200 torchrun --nproc_per_node=2 "${args[@]}" --batch 512 >"$out/ddp-2.txt" 2>&1
    echo "torchrun 2 ranks (batch 512 each): rc $?"
    grep -E "^epoch|^test" "$out/ddp-2.txt"
}

# Locality-aware sampling against the default sampler on the same data (one GPU, zero-copy with
# a feature cache of an eighth of the table, so that the bias has rows to favour).
step_locality() {
    local d=/tmp/gd-products
    [ -d $d ] || $cli generate --preset products --seed 3 --out $d --overwrite </dev/null >/dev/null
    for loc in off 4 auto; do
        local extra=()
        [ $loc = off ] || extra=(--locality $loc)
        timeout 200 $cli train $d --mode zero-copy --gpu-cache 128M --epochs 8 --no-baseline \
            --seed 7 "${extra[@]}" >"$out/locality-$loc.txt" 2>&1
        echo "locality $loc: rc $? $(grep -E "^best valid" "$out/locality-$loc.txt")"
        grep -E "^epoch +8 " "$out/locality-$loc.txt"
    done
}

# The training step's op breakdown at the per-GPU batches of 1, 2 and 4 GPUs (one GPU).
step_step() {
    for b in 1024 512 256; do
        timeout 120 $cli bench step --batch $b --breakdown --json "$out/step-$b.json" \
            --commit "$commit" 2>&1 | grep -v "^generate:" | tail -22
    done
}

# The user's path: train --gpus N (one process per GPU) against one GPU on products, the model
# and batch of bench scale (fanouts 15,10,5, hidden 256, global batch 1024); epochs 2-6 timed.
epoch_times() { grep -oE "^epoch +[0-9]+ .* [0-9.]+ s \(" "$1" | tail -5 | grep -oE "[0-9.]+ s \(" | tr -d 's(' | tr '\n' ' '; }
step_cli_scale() {
    local d=/tmp/gd-products
    [ -d $d ] || $cli generate --preset products --seed 3 --out $d --overwrite </dev/null >/dev/null
    local common=(train $d --mode zero-copy --epochs 6 --no-baseline --no-full-test --fanouts 15,10,5
                  --hidden 256 --seed 5)
    for n in 1 2 4; do
        [ "$n" -le "$ngpu" ] || continue
        local g=(--gpus $n)
        [ $n = 1 ] && g=()
        timeout 200 $cli "${common[@]}" --batch $((1024 / n)) "${g[@]}" >"$out/cli-scale-$n.txt" 2>&1
        echo "train --gpus $n (batch $((1024 / n)) each): rc $? epochs 2-6: $(epoch_times "$out/cli-scale-$n.txt")"
        [ $n = 1 ] && continue
        # Weak scaling: the per-GPU batch kept (N x 1024 a global minibatch).
        timeout 200 $cli "${common[@]}" --batch 1024 "${g[@]}" >"$out/cli-scale-$n-weak.txt" 2>&1
        echo "train --gpus $n (batch 1024 each): rc $? epochs 2-6: $(epoch_times "$out/cli-scale-$n-weak.txt")"
    done
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
    ddp) step_ddp ;;
    locality) step_locality ;;
    step) step_step ;;
    cli-scale) step_cli_scale ;;
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
