#!/usr/bin/env bash
# The GPU tests, three ways, on a machine with a GPU (issue 12 item 9; STYLE.md rule 14):
#   suite       the whole ctest suite (GPU tests included; none may skip but plot_smoke, whose
#               gnuplot the GPU machines lack)
#   sanitize    every GPU test alone under compute-sanitizer memcheck, racecheck and synccheck
#   concurrent  every GPU test as 8 concurrent processes (one GPU shared, as in CI farms)
# Usage: tests/gpu_suite.sh BUILD_DIR OUT_DIR [PHASE...]   (default: all three)
# Each phase writes a log under OUT_DIR and a line per test to OUT_DIR/summary.txt; the exit
# status is the number of failed runs (0: all passed).
set -u
build=$(cd "$1" && pwd)
out=$2
shift 2
mkdir -p "$out"
phases=("$@")
[ ${#phases[@]} -gt 0 ] || phases=(suite sanitize concurrent)
summary=$out/summary.txt
failed=0

# The programs with GPU code: the ones that skip without a GPU, and the ones with a GPU part.
gpu_tests=(test_gather test_green test_host_tensor_shm test_infer test_loader test_nn_cuda
           test_philox test_sample_cuda test_train_cora test_train_modes test_trainer_api
           test_context test_fault_train test_tier test_tier_peer test_dp
           test_sample_bias_cuda test_locality test_widen test_train_half_gpu
           test_dyncache_cuda test_disk_tier test_train_disk test_gat_cuda test_rsage
           test_rgat test_train_hetero test_hetero_cuda test_hetero_gather_cuda
           test_host_gather test_grouped_cuda test_rgat_exact test_degree_cuda
           test_outdeg_cache test_stripe)
# GD_SANITIZE_TOOLS="memcheck" runs only those tools.
# GD_GPU_TESTS="a b" runs only those (e.g. to finish a phase that an earlier call cut short).
[ -n "${GD_GPU_TESTS:-}" ] && read -r -a gpu_tests <<<"$GD_GPU_TESTS"
# racecheck and synccheck look at shared memory and barriers: the library's kernels that use
# them are the nn ops, the sampler and the CUB scan of the dynamic cache's lookup, which these
# tests drive (the others' kernels use none).
shared_tests=(test_nn_cuda test_sample_cuda test_loader test_dyncache_cuda test_gat_cuda
              test_host_gather test_grouped_cuda test_hetero_cuda test_rgat_exact
              test_degree_cuda)
[ -n "${GD_SHARED_TESTS:-}" ] && read -r -a shared_tests <<<"$GD_SHARED_TESTS"
sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)

note() { echo "$*" | tee -a "$summary"; }

for phase in "${phases[@]}"; do
    t0=$(date +%s)
    case "$phase" in
    suite)
        (cd "$build" && ctest --output-on-failure -j8 --timeout 600) >"$out/suite.log" 2>&1
        rc=$?
        note "suite: $(grep -E 'tests passed' "$out/suite.log") (rc $rc); skipped:" \
             "$(grep -E '\(Skipped\)' "$out/suite.log" | awk '{print $3}' | tr '\n' ' ')"
        [ $rc -eq 0 ] || failed=$((failed + 1))
        ;;
    sanitize)
        # Each test alone under each tool; the tools run side by side (one process each), and
        # the tool's own exit code (errors found) fails the run. racecheck and synccheck check
        # shared memory and barriers, so they skip cuBLAS's GEMM kernels (ours have no GEMM):
        # instrumenting those made a test run for more than 10 minutes. They skip NCCL's kernels
        # too (not ours; test_dp under racecheck ran past 150 s with them).
        run_tool() {
            local tool=$1 log=$out/san-$1.log extra=() tests=("${gpu_tests[@]}")
            # GD_SANITIZE_EXTRA: more options for every tool (e.g. --launch-timeout 0).
            local more=()
            [ -n "${GD_SANITIZE_EXTRA:-}" ] && read -r -a more <<<"$GD_SANITIZE_EXTRA"
            [ "$tool" = memcheck ] || {
                extra=(--kernel-name-exclude kns=gemm --kernel-name-exclude kns=nccl)
                tests=("${shared_tests[@]}")
            }
            for t in "${tests[@]}"; do
                echo "=== $tool $t" >>"$log"
                # NCCL forms a communicator more slowly under a sanitizer (test_dp's 5 s limit).
                # test_stripe's fault walks (some 400 stripings) are host code: skipped.
                (cd "$build/tests" && GD_TEST_COMM_TIMEOUT=60 GD_TEST_STRIPE_FAULTS=0 timeout "${GD_SANITIZE_TIMEOUT:-280}" "$sanitizer" \
                    --tool "$tool" --error-exitcode 99 --print-limit 20 "${extra[@]}" "${more[@]}" \
                    "./$t") \
                    >>"$log" 2>&1
                local rc=$?
                echo "sanitize $tool $t: rc $rc $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' \
                    "$log" | tail -1)" >"$out/san-$tool-$t.rc"
            done
        }
        tools=(memcheck racecheck synccheck)
        [ -n "${GD_SANITIZE_TOOLS:-}" ] && read -r -a tools <<<"$GD_SANITIZE_TOOLS"
        spids=()
        for tool in "${tools[@]}"; do
            run_tool "$tool" &
            spids+=($!)
        done
        for p in "${spids[@]}"; do wait "$p"; done
        for tool in "${tools[@]}"; do
            tests=("${gpu_tests[@]}")
            [ "$tool" = memcheck ] || tests=("${shared_tests[@]}")
            for t in "${tests[@]}"; do
                line=$(cat "$out/san-$tool-$t.rc" 2>/dev/null || echo "sanitize $tool $t: not run")
                note "$line"
                case "$line" in *": rc 0 "*) ;; *) failed=$((failed + 1)) ;; esac
                rm -f "$out/san-$tool-$t.rc"
            done
        done
        ;;
    concurrent)
        # Per-copy logs go three folders down (they stay on the machine); their archive and
        # the failures' tails come back.
        logs=$out/c/c
        mkdir -p "$logs"
        # Each copy gets an eighth of the cores: 8 copies of a test that runs OpenMP on every
        # core put 128 threads on 16 (test_train_hetero's 8 copies ran past 560 s on the H100
        # that runs one copy in 7 s). GD_CONCURRENT_TIMEOUT: seconds a copy may take (900).
        share=$(( $(nproc) / 8 > 0 ? $(nproc) / 8 : 1 ))
        for t in "${gpu_tests[@]}"; do
            pids=()
            for i in 1 2 3 4 5 6 7 8; do
                (cd "$build/tests" && GD_THREADS=$share OMP_NUM_THREADS=$share \
                    timeout "${GD_CONCURRENT_TIMEOUT:-900}" "./$t") >"$logs/conc-$t-$i.log" 2>&1 &
                pids+=($!)
            done
            bad=0
            for p in "${pids[@]}"; do wait "$p" || bad=$((bad + 1)); done
            note "concurrent $t: $((8 - bad))/8 passed"
            if [ $bad -gt 0 ]; then
                failed=$((failed + bad))
                for i in 1 2 3 4 5 6 7 8; do
                    echo "--- $t copy $i" >>"$out/concurrent-failures.log"
                    tail -5 "$logs/conc-$t-$i.log" >>"$out/concurrent-failures.log"
                done
            fi
            tar -C "$logs" -czf "$out/concurrent-logs.tgz" .
        done
        ;;
    *)
        note "unknown phase '$phase'"
        failed=$((failed + 1))
        ;;
    esac
    note "== $phase: $(($(date +%s) - t0)) s"
done
note "failed runs: $failed"
exit "$failed"
