/*
 * The registry of GD_* environment parameters. Each is declared once here with its default and
 * help text; docs/params.md lists them (tests/test_params checks that the two agree).
 */
#ifndef GD_CORE_PARAMS_H
#define GD_CORE_PARAMS_H

/* X(name, default, help) */
#define GD_PARAM_MAP(X)                                                                            \
    X(GD_LOG_LEVEL, "warn", "log threshold: none, error, warn, info, debug, trace or 0-5")         \
    X(GD_THREADS, "0", "CPU threads for parallel host work (0 = all cores)")                       \
    X(GD_GATHER_SMS, "0", "SMs the zero-copy gather may use (0 = all; N% = a fraction)")           \
    X(GD_GATHER_SHAPE, "auto", "gather kernel shape: auto, or LANESxLOADS (e.g. 8x8) to tune")     \
    X(GD_DEVICE, "0", "GPU ordinal used when none is given")                                       \
    X(GD_PIN_CHUNK_MB, "1024", "host memory is registered with the GPU in chunks of this size")    \
    X(GD_PIN_THREADS, "0",                                                                         \
      "threads that register the chunks in parallel (0: cores, at most 16; 1 for read-only file "  \
      "pages)")                                                                                    \
    X(GD_HOST_MEM_MB, "0", "host memory work may take, in MiB (0 = what is available)")            \
    X(GD_HOST_SPLIT, "auto",                                                                       \
      "--host-gather split: the CPU's fraction of the host rows (auto: from the probe)")           \
    X(GD_DEGREE_CACHE, "1",                                                                        \
      "a dataset directory keeps its nodes' out-degrees in .outdeg for the next build (0: off)")   \
    X(GD_HOST_TRIAL, "20",                                                                         \
      "--host-gather auto: minibatches each of its 8 ways serves in the trial (the first 4 "       \
      "untimed)")                                                                                  \
    X(GD_HOST_COPY_PIECES, "0",                                                                    \
      "--host-gather cpu/split: 1 = the host rows DMA'd in 1 MiB chunks (0: 4 MiB)")               \
    X(GD_HOST_GATHER_URGENT, "1",                                                                  \
      "--host-gather cpu/split: their sort, list and kernels on a top-priority stream (0: the "    \
      "caller's)")                                                                                 \
    X(GD_HUGEPAGES, "1", "large host tables the library allocates ask for 2 MiB pages (0: off)")   \
    X(GD_DISK_EVICT, "clock",                                                                      \
      "eviction policy of the features-on-disk caches: clock, sieve, random")                      \
    X(GD_DISK_WINDOW, "0",                                                                         \
      "window buffering of the GPU cache of features on disk: minibatches ahead")                  \
    X(GD_DISK_DEPTH, "auto", "reads in flight for features on disk: auto (probed) or 1-4096")      \
    X(GD_NN_GROUPED, "0",                                                                          \
      "relational models run a layer's products as grouped GEMMs (1), or one GEMM each (0: "       \
      "faster on the H100)")

void gd__log_init(void);

#endif
