/*
 * Shared pieces of the benchmark drivers behind `graphdirect bench`: wall-clock timing, error
 * reporting in the CLI's words, the options every driver shares, list parsing, a counter-based
 * random number generator, parallel fills and copies of large host buffers, the CUDA checks (in
 * builds with GD_WITH_CUDA, through the plain-C CUDA runtime API), PASS/MISS target lines, and
 * writing the JSON record of a run atomically. Every benchmark measures its ceiling in the same run
 * and reports ratios to it (docs/bench.md).
 *
 * The drivers follow the library's error style: a function that can fail returns 0 or -1 after
 * printing one message that says what failed, with which value and what to do; cleanup runs
 * through a single `fail:` label.
 */
#ifndef GD_BENCH_H
#define GD_BENCH_H

#include "bench_mix.h"
#include "graphdirect.h"

#include <cjson/cJSON.h>
#include <getopt.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef GD_WITH_CUDA
#include <cuda_runtime_api.h>

#endif

/* The commit the build was configured at (CMake defines it when the tree is a git checkout). */
#ifndef GD_GIT_COMMIT
#define GD_GIT_COMMIT "unknown"
#endif

/* `graphdirect bench gather` (bench_gather.c). */
int bench_gather(int argc, char **argv);
/* `graphdirect bench sample` (bench_sample.c). */
int bench_sample(int argc, char **argv);
/* `graphdirect bench epoch` (bench_epoch.c). */
int bench_epoch(int argc, char **argv);
/* `graphdirect bench loader` (bench_loader.c). */
int bench_loader(int argc, char **argv);
/* `graphdirect bench step` (bench_step.c). */
int bench_step(int argc, char **argv);
/* `graphdirect bench scale` (bench_scale.c). */
int bench_scale(int argc, char **argv);
/* `graphdirect bench disk` (bench_disk.c). */
int bench_disk(int argc, char **argv);
/* `graphdirect bench dyncache` (bench_dyncache.c). */
int bench_dyncache(int argc, char **argv);
/* `bench ssd`: the SSD tier's fetch path (bench_ssd.c). */
int bench_ssd(int argc, char **argv);
int bench_startup(int argc, char **argv);

/* ---- errors: print "graphdirect bench: ..." once, then the caller cleans up and fails */

void bench_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Report a failed gd_* call: what was being done, the status and gd_last_error(). */
void bench_gd_error(const char *what, gd_status st);

/* Inside a function with `int rc = -1;` ... `fail:`: check a gd_* call. */
#define BENCH_GD(call, what)                                                                       \
    do {                                                                                           \
        gd_status bench_st_ = (call);                                                              \
        if (bench_st_ != GD_OK) {                                                                  \
            bench_gd_error((what), bench_st_);                                                     \
            goto fail;                                                                             \
        }                                                                                          \
    } while (0)

/* Fail with a message unless cond holds. */
#define BENCH_REQUIRE(cond, ...)                                                                   \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            bench_error(__VA_ARGS__);                                                              \
            goto fail;                                                                             \
        }                                                                                          \
    } while (0)

#ifdef GD_WITH_CUDA
/* Report a failed CUDA runtime call (the error is read and cleared once). */
void bench_cuda_error(const char *call, cudaError_t ce);
#define BENCH_CUDA(call)                                                                           \
    do {                                                                                           \
        cudaError_t bench_ce_ = (call);                                                            \
        if (bench_ce_ != cudaSuccess) {                                                            \
            bench_cuda_error(#call, bench_ce_);                                                    \
            goto fail;                                                                             \
        }                                                                                          \
    } while (0)

/* Pinned host-to-GPU DMA on each of devs at once (bench.c): the PCIe ceiling, GB/s in all. */
#define BENCH_DMA_MAX_GPUS 16
int bench_dma_gbs(const int *devs, int n, double *gbs);
#endif

/* ---- training */

/*
 * Epoch `epoch` of trainer t alone, of at most max_batches minibatches (0: all): no evaluation,
 * no test; its stats into *out.
 */
gd_status bench_one_epoch(gd_trainer_t *t, int64_t epoch, int64_t max_batches,
                          gd_epoch_stats *out);

/* ---- time and machine */

/* Monotonic seconds. */
double bench_now(void);
/* CPU seconds of the whole process (every thread) so far. */
double bench_cpu_seconds(void);
/* Online CPUs (at least 1). */
int bench_cpus(void);
/* "2026-11-21T22:40:43Z" (UTC) into buf. */
const char *bench_utc_date(char *buf, size_t n);
/* The median of v[0..n) (v is sorted in place); 0 for n = 0. */
double bench_median(double *v, int n);

/* ---- options several drivers share */

/*
 * The getopt_long codes of the shared options, above every character so that they never meet
 * a driver's own codes. A driver lists the ones it takes in its long options (BENCH_LONG and
 * BENCH_FLAG entries), handles its own codes in its switch and passes every other code to
 * bench_option.
 */
enum {
    BENCH_OPT_PRESET = 0x100,
    BENCH_OPT_NODES,
    BENCH_OPT_BATCH,
    BENCH_OPT_HIDDEN,
    BENCH_OPT_THREADS,
    BENCH_OPT_DEVICE,
    BENCH_OPT_SEED,
    BENCH_OPT_QUICK,
    BENCH_OPT_JSON,
    BENCH_OPT_COMMIT
};
/* A shared option's long-option entry: BENCH_LONG("seed", SEED), BENCH_FLAG("quick", QUICK). */
#define BENCH_LONG(name, ID)                                                                       \
    { name, required_argument, 0, BENCH_OPT_##ID }
#define BENCH_FLAG(name, ID)                                                                       \
    { name, no_argument, 0, BENCH_OPT_##ID }
/*
 * The end of every driver's table: the options they all take (--device, --seed, --json,
 * --commit), --help (code 'h') and the terminating entry.
 */
/* clang-format off */
#define BENCH_LONG_END                                                                             \
    BENCH_LONG("device", DEVICE),                                                                  \
    BENCH_LONG("seed", SEED),                                                                      \
    BENCH_LONG("json", JSON),                                                                      \
    BENCH_LONG("commit", COMMIT),                                                                  \
    {"help", no_argument, 0, 'h'},                                                                 \
    {0, 0, 0, 0}
/* clang-format on */

/* What the shared options set; bench_options_init gives the defaults. */
typedef struct {
    const char *preset;    /* --preset; NULL when not given */
    int64_t nodes;         /* --nodes N >= 2; 0: the preset's */
    int64_t batch;         /* --batch, seeds per minibatch in [1, 2^24] (default 1024) */
    int64_t hidden;        /* --hidden width in [1, 65536] (default 256) */
    int threads;           /* --threads in [1, 4096]; bench_options_finish makes 0 every core */
    int device;            /* --device, the GPU (default 0) */
    int quick;             /* --quick: a smoke-test sized run */
    uint64_t seed;         /* --seed (default 1) */
    const char *json_path; /* --json FILE; NULL: no JSON */
    const char *commit;    /* --commit (default: the configure-time GD_GIT_COMMIT) */
    int commit_given;      /* whether --commit named it */
} bench_options;

void bench_options_init(bench_options *o);
/*
 * Handle getopt_long's code c (its optarg in arg) for the command cmd ("bench epoch"): 0 when
 * c is a shared option with a good value, else the usage exit status after one message (a bad
 * value, or "unknown option" for any other code, getopt's '?' included).
 */
int bench_option(bench_options *o, const char *cmd, int c, const char *arg);
/*
 * The getopt_long loop of a driver: --help (code 'h') prints help() and ends with status 0;
 * every other code goes to own(self, c, optarg), which returns 0 (handled), an exit status, or
 * -1 for a code it does not know, which then goes to bench_option. Returns -1 when the run
 * goes on (bench_options_finish done), else the exit status.
 */
int bench_parse_options(bench_options *o, const char *cmd, int argc, char **argv,
                        const struct option *long_opts, void (*help)(void),
                        int (*own)(void *self, int c, const char *arg), void *self);
/*
 * After the getopt_long loop: refuse a leftover argument (the usage exit status, message
 * printed), else default --threads to every core and return 0.
 */
int bench_options_finish(bench_options *o, const char *cmd, int argc, char **argv);

/*
 * Parse --fanouts: up to max_lists lists separated by ':' (a driver that takes one list passes
 * 1), each 1 to GD_SAMPLER_MAX_LAYERS comma-separated neighbour counts in [lo, hi], seeds
 * first (-1, where lo allows it, takes every neighbour). List k goes to fanouts[k] and
 * layers[k], the number of lists to *lists (which may be NULL). 0 on success; -1 (message
 * printed, nothing written) otherwise.
 */
/*
 * A comma list of names among names[0..count) ("replicate,auto"): their indexes to out[0..*n),
 * each at most once. 0, or CLI_EXIT_USAGE with the error printed for cmd's option.
 */
int bench_parse_names(const char *cmd, const char *option, const char *arg,
                      const char *const *names, int count, int *out, int *n);

int bench_parse_fanouts(const char *text, int lo, int hi, int max_lists,
                        int (*fanouts)[GD_SAMPLER_MAX_LAYERS], int *layers, int *lists);

/* ---- lists and sizes on the command line */

/*
 * Parse a comma-separated list of sizes or counts ("256,1028,4Ki", "8Ki,64Ki,1Mi") into up to
 * max positive values: 0 on success, -1 (message printed, naming option) otherwise.
 */
int bench_parse_list(const char *option, const char *text, int64_t *out, int max, int *count);
/*
 * "0,4,8": up to max window depths in 0..most for the command cmd's --windows (0, no window, is
 * allowed, which bench_parse_list refuses); 0, or the usage exit status after one message.
 */
int bench_parse_windows(const char *cmd, const char *arg, int64_t most, int64_t *out, int max,
                        int *count);
/* "clock,sieve": the eviction policies named (of clock, sieve, random) for --policies. */
int bench_parse_policies(const char *cmd, const char *arg, const char **out, int *count);
/* A count in binary units when it is one: "8Ki", "1Mi", else the plain number. */
const char *bench_count_text(int64_t n, char *buf, size_t size);

/* ---- random numbers and large host buffers */

/* bench_mix64 and bench_below: bench_mix.h (the standalone helpers use them too). */

/*
 * n ids in calls of per_call: each call holds distinct ids drawn uniformly from [0, rows) (a
 * random permutation's prefix, like the deduplicated input nodes of a minibatch; ids repeat
 * only when per_call > rows), a function of (seed, call, i) whatever the thread count.
 */
void bench_random_ids(int64_t *ids, int64_t n, int64_t per_call, int64_t rows, uint64_t seed,
                      int threads);
/* Fill bytes of p with a position-dependent pattern, in parallel (touches every page). */
void bench_fill_pattern(void *p, size_t bytes, int threads);
/* Copy bytes with `threads` threads, each a contiguous slice. */
void bench_parallel_copy(void *dst, const void *src, size_t bytes, int threads);

/* ---- targets */

/*
 * Print "PASS"/"MISS" for value >= threshold with the target's name, and add it to the JSON
 * array targets (which may be NULL). Returns 1 if met.
 */
int bench_target(cJSON *targets, const char *name, double value, double threshold,
                 const char *unit);

/* ---- JSON */

/*
 * Write root to path atomically: "<path>.tmp.<pid>" is written, flushed to disk and renamed
 * over path, so a failed run never leaves a partial file. 0 on success, -1 (message printed).
 */
int bench_json_write(const char *path, const cJSON *root);
/* Check up front that path's temporary file can be created, so a typo fails before the run. */
int bench_json_probe(const char *path);
/* cJSON_Add* that reports running out of memory through the caller's failure path. */
#define BENCH_JSON(expr)                                                                           \
    do {                                                                                           \
        if (!(expr)) {                                                                             \
            bench_error("out of memory building the JSON record");                                 \
            goto fail;                                                                             \
        }                                                                                          \
    } while (0)

/* ---- the end of a run */

/*
 * The end of a run that succeeded: "bench NAME: done in S s" on stdout, the run's seconds (from
 * t_start, a bench_now()) into root and, with --json, the record written. 0, or -1 (message
 * printed).
 */
int bench_run_done(const bench_options *o, cJSON *root, const char *name, double t_start);
/*
 * The exit status of a run that ended with rc: a failure that Ctrl-C caused is reported as an
 * interruption (CLI_EXIT_INTERRUPTED), anything else is rc.
 */
int bench_exit_status(int rc);

/* ---- minibatches (minibatch.c) */

/*
 * The input nodes of sampled minibatches: what the gatherer is asked for while training. Seeds
 * are the training split (or every node when train is NULL) shuffled for epoch 0 by
 * gd_seed_batches, batch_size per minibatch; each minibatch is sampled by the library's CPU
 * sampler (uniform, without replacement, fanouts[0] for the seeds) and its input nodes are
 * the ids. Minibatch b is a function of (seed, b) only, whatever the thread count.
 */
typedef struct {
    int64_t num_nodes;
    const int64_t *indptr;
    const void *indices;
    gd_dtype indices_dtype; /* int32 or int64 */
    const void *train;      /* NULL: seeds from every node */
    gd_dtype train_dtype;   /* int32 or int64 */
    int64_t train_count;
} bench_graph;

typedef struct {
    int count;        /* minibatches */
    int64_t *ids;     /* all ids, minibatch after minibatch (malloc'd) */
    int64_t *offsets; /* count + 1 offsets into ids (malloc'd) */
    int64_t max_len;  /* the longest minibatch */
} bench_batches;

/* The graph of ds (its indptr, indices and training split) as g; 0, or -1 (message printed). */
int bench_graph_of(gd_dataset_t *ds, bench_graph *g);
/* Sample count minibatches; 0 on success, -1 (message printed). */
int bench_sample_batches(const bench_graph *g, int count, int64_t batch_size, const int *fanouts,
                         int layers, uint64_t seed, int threads, bench_batches *out);
void bench_batches_free(bench_batches *b);

/*
 * The record every benchmark's JSON starts with: benchmark name, library version, commit
 * (and whether it came from --commit), date, host, CPUs, whether CUDA was built, and the GPU
 * o->device (null when gpu is 0; its name and SMs are also printed on stderr). *root is made
 * here.
 */
int bench_json_header(cJSON **root, const char *benchmark, const bench_options *o, int gpu);

#endif
