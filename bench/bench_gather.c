/*
 * `graphdirect bench gather`: how fast the feature gatherer moves the rows of a minibatch, set
 * against the ceiling measured in the same run (docs/bench.md).
 *
 * The ceiling is the pinned host-to-device DMA bandwidth (one large cudaMemcpyAsync), since a
 * gather from host memory can at best keep the link as busy as a plain copy does. Four parts:
 *   sweep      row widths x ids per call x gather modes, distinct random ids over a host table
 *              much larger than the GPU's L2 cache (ids fresh for every call, made up front
 *              and held on the device; cpu-dma, the CPU-centric baseline, gets them on the
 *              host, where a CPU sampler would have left them);
 *   SM budget  the zero-copy gather on 10 %, 15 % and 100 % of the SMs;
 *   cache      the hot-row GPU cache on a power-law graph from the generator, with the input
 *              nodes of sampled minibatches as ids, rows ranked by in-degree, out-degree or
 *              pre-sampled access counts;
 *   targets    PASS/MISS lines for the goals of the design (never checked by tests).
 * Without CUDA or without a GPU only the "cpu" mode runs, against the host memcpy bandwidth.
 *
 * GPU work is queued on one stream and timed with CUDA events around several calls back to
 * back; cpu-dma and cpu are timed by the wall clock around the calls plus a final
 * synchronisation. The output of the last call of every measurement is spot-checked against
 * the table, so a fast but wrong gather fails the run instead of reporting a number.
 */
#include "bench.h"
#include "cli.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { MAX_WIDTHS = 16, MAX_IDS = 8, SM_BUDGETS = 3, MAX_SM_WIDTHS = 2, CACHE_PCTS = 5 };
enum { SCORE_IN = 0, SCORE_OUT = 1, SCORE_ACCESS = 2, SCORE_KINDS = 3 };

typedef enum {
    BM_ZEROCOPY = 0,
    BM_ZEROCOPY_SORT,
    BM_ZEROCOPY_NOSORT,
    BM_NAIVE,
    BM_CPU_DMA,
    BM_GPU,
    BM_CPU,
    BM_COUNT
} bench_mode;

/*
 * The modes of the sweep. sort is the sort_ids option: 0 leaves the library's default (on for
 * zerocopy), 1 forces sorting, -1 turns it off, so "zerocopy" is what a caller gets and
 * "zerocopy-nosort" shows what sorting buys.
 */
static const struct {
    const char *name;
    gd_gather_mode mode;
    int sort;
    int by_default; /* in the default --modes of a GPU run */
} modes[BM_COUNT] = {
    {"zerocopy", GD_GATHER_ZEROCOPY, 0, 1},
    {"zerocopy-sort", GD_GATHER_ZEROCOPY, 1, 1},
    {"zerocopy-nosort", GD_GATHER_ZEROCOPY, -1, 1},
    {"naive-zerocopy", GD_GATHER_NAIVE_ZEROCOPY, 0, 1},
    {"cpu-dma", GD_GATHER_CPU_DMA, 0, 1},
    {"gpu", GD_GATHER_GPU, 0, 1},
    {"cpu", GD_GATHER_CPU, 0, 0},
};

/* Modes whose ids live on the device and whose work is timed with events. */
static int device_ids_mode(bench_mode m) {
    return m == BM_ZEROCOPY || m == BM_ZEROCOPY_SORT || m == BM_ZEROCOPY_NOSORT || m == BM_NAIVE ||
           m == BM_GPU;
}

static const char *const sm_budgets[SM_BUDGETS] = {"10%", "15%", "100%"};
static const int64_t sm_widths[MAX_SM_WIDTHS] = {512, 2048};
static const int cache_pcts[CACHE_PCTS] = {0, 5, 10, 20, 50};
static const char *const score_names[SCORE_KINDS] = {"in-degree", "out-degree", "access counts"};
static const int fanouts[3] = {15, 10, 5};

typedef struct {
    /* options */
    bench_options opt; /* --preset, --threads, --device, --seed, --quick, --json, --commit */
    int64_t table_bytes;
    int64_t widths[MAX_WIDTHS];
    int nwidths;
    int64_t ids[MAX_IDS];
    int nids;
    int use[BM_COUNT];
    int iters;
    int64_t budget;         /* bytes moved per measurement, roughly */
    int64_t max_call_bytes; /* ids per call are clipped so a call moves at most this */
    int64_t ceiling_bytes;  /* the block the DMA / memcpy ceiling copies */
    int cache_sweep, sm_sweep;
    int have_table, have_widths, have_ids, have_modes, have_iters, have_budget; /* given */
    int batches, score_batches, batch_seeds;

    /* state */
    int gpu;             /* GPU modes can run */
    gd_context_t *context; /* the GPU's (default) context, when gpu */
    double ceiling_gbps; /* DMA best (GPU) or host memcpy best (CPU only) */
    double dma_best, dma_median, memcpy_best;
    double sweep[MAX_WIDTHS][MAX_IDS][BM_COUNT]; /* GB/s; NAN: not measured */
    int64_t sweep_n[MAX_WIDTHS][MAX_IDS];
    double sm_gbps[MAX_SM_WIDTHS][SM_BUDGETS];
    int sm_sms[MAX_SM_WIDTHS][SM_BUDGETS], sm_green[MAX_SM_WIDTHS][SM_BUDGETS];
    int64_t sm_n[MAX_SM_WIDTHS];
    double cache_speedup_20[SCORE_KINDS];
    cJSON *root, *jsweep, *jsm, *jcache, *jtargets;

    /* buffers */
    gd_host_tensor_t *table; /* owns the table memory; views of it have each row width */
    unsigned char *table_data;
    int64_t *h_ids;
    int64_t h_ids_cap;
    unsigned char *h_out;
    int64_t h_out_cap;
    unsigned char *check_row;
    int64_t check_cap;
#ifdef GD_WITH_CUDA
    cudaStream_t stream;
    cudaEvent_t ev0, ev1;
    int have_stream, have_events;
    int64_t *d_ids;
    int64_t d_ids_cap;
    unsigned char *d_out;
    int64_t d_out_cap;
#endif
} gather_bench;

/* Which calls a measurement makes: call i gathers ids [start(i), start(i) + len(i)). */
typedef struct {
    const int64_t *h_ids; /* every call's ids on the host */
    const int64_t *d_ids; /* and on the device (GPU runs) */
    int64_t n;            /* ids per call when offsets is NULL */
    const int64_t *offsets;
    int warm, calls; /* warm-up calls first, then the timed ones */
} call_plan;

static int64_t plan_start(const call_plan *p, int i) {
    return p->offsets ? p->offsets[i] : (int64_t)i * p->n;
}
static int64_t plan_len(const call_plan *p, int i) {
    return p->offsets ? p->offsets[i + 1] - p->offsets[i] : p->n;
}

static double gbps(double bytes, double seconds) {
    return seconds > 0 ? bytes / seconds / 1e9 : 0;
}

/* ------------------------------------------------------------------ options */

static void help(void) {
    printf("usage: graphdirect bench gather [options]\n\n"
           "Measure the feature gather against the pinned host->device DMA bandwidth, measured\n"
           "in the same run: a sweep of row widths x ids per call x gather modes over a host\n"
           "table larger than the GPU's L2 cache, the zero-copy gather on a fraction of the SMs,\n"
           "and the hot-row GPU cache on a power-law graph with sampled minibatches. Prints a\n"
           "table (GB/s of useful bytes and the ratio to DMA) and PASS/MISS lines for the\n"
           "targets. Without CUDA or a GPU only the cpu mode runs, against host memcpy.\n"
           "See docs/bench.md.\n\n"
           "  --device N           GPU to use (default 0)\n"
           "  --table-bytes SIZE   host table size (default 4Gi; K/M/G = x1000, Ki/Mi/Gi = x1024)\n"
           "  --rows-bytes LIST    row widths in bytes (default 256,512,1024,1028,2048,2052,4096,\n"
           "                       16384); multiples of 4 are float32 rows, others uint8\n"
           "  --ids LIST           ids per call (default 8Ki,64Ki,1Mi)\n"
           "  --modes LIST         zerocopy (the library's default sort_ids), zerocopy-sort\n"
           "                       (sort_ids on), zerocopy-nosort (off), naive-zerocopy,\n"
           "                       cpu-dma, gpu, cpu (default: all but cpu;\n"
           "                       cpu alone without a GPU)\n"
           "  --iters N            most timed calls per measurement (default 100); fewer are\n"
           "                       made when --budget is reached, but at least 3\n"
           "  --budget SIZE        bytes to move per measurement, roughly (default 1Gi)\n"
           "  --max-call-bytes SIZE  clip ids per call so that a call moves at most this much\n"
           "                       (default 3Gi: 1Mi ids of 4096 B rows become 768Ki)\n"
           "  --threads N          CPU threads of cpu-dma and cpu (default: online CPUs)\n"
           "  --seed N             random seed of ids and minibatches (default 1)\n"
           "  --preset NAME        generator preset of the cache part (default products)\n"
           "  --score-batches N    minibatches the access-count scores are counted over\n"
           "                       (default 100)\n"
           "  --no-cache-sweep     skip the cache part\n"
           "  --no-sm-sweep        skip the SM budget part\n"
           "  --quick              small sizes (64Mi table, widths 256,1028,2048, ids 8Ki,64Ki,\n"
           "                       preset tiny):\n"
           "                       a smoke test that finishes in seconds\n"
           "  --json FILE          write every parameter and measurement to FILE (atomically)\n"
           "  --commit TEXT        the commit to record in the JSON (default: the one the build\n"
           "                       was configured at, if known)\n"
           "  -h, --help           this text\n\n"
           "example (the whole benchmark, about 2-3 minutes on an H100):\n"
           "  graphdirect bench gather --json gather.json\n");
}

static int parse_modes(gather_bench *b, const char *text) {
    char item[32];
    const char *p = text;
    memset(b->use, 0, sizeof b->use);
    for (;;) {
        const char *comma = strchr(p, ',');
        const size_t len = comma ? (size_t)(comma - p) : strlen(p);
        int found = -1;
        if (len > 0 && len < sizeof item) {
            memcpy(item, p, len);
            item[len] = '\0';
            for (int m = 0; m < BM_COUNT; m++)
                if (!strcmp(item, modes[m].name)) found = m;
        }
        if (found < 0) {
            bench_error("--modes '%s': unknown mode '%.*s': use zerocopy, zerocopy-sort, "
                        "zerocopy-nosort, naive-zerocopy, cpu-dma, gpu or cpu",
                        text, (int)len, p);
            return -1;
        }
        b->use[found] = 1;
        if (!comma) return 0;
        p = comma + 1;
    }
}

/* ------------------------------------------------------------------ buffers */

static int ensure_host_ids(gather_bench *b, int64_t count) {
    if (count <= b->h_ids_cap) return 0;
    free(b->h_ids);
    b->h_ids_cap = 0;
    b->h_ids = malloc((size_t)count * sizeof *b->h_ids);
    if (!b->h_ids) {
        bench_error("out of memory for %lld ids", (long long)count);
        return -1;
    }
    b->h_ids_cap = count;
    return 0;
}

static int ensure_host_out(gather_bench *b, int64_t bytes) {
    if (bytes <= b->h_out_cap) return 0;
    free(b->h_out);
    b->h_out_cap = 0;
    b->h_out = malloc((size_t)bytes);
    if (!b->h_out) {
        bench_error("out of memory for a %lld-byte output buffer: lower --max-call-bytes",
                    (long long)bytes);
        return -1;
    }
    b->h_out_cap = bytes;
    return 0;
}

static int ensure_check_row(gather_bench *b, int64_t bytes) {
    if (bytes <= b->check_cap) return 0;
    free(b->check_row);
    b->check_cap = 0;
    b->check_row = malloc((size_t)bytes);
    if (!b->check_row) {
        bench_error("out of memory");
        return -1;
    }
    b->check_cap = bytes;
    return 0;
}

#ifdef GD_WITH_CUDA
static int ensure_device_ids(gather_bench *b, int64_t count) {
    int rc = -1;
    if (count <= b->d_ids_cap) return 0;
    if (b->d_ids) BENCH_CUDA(cudaFree(b->d_ids));
    b->d_ids = NULL;
    b->d_ids_cap = 0;
    BENCH_CUDA(cudaMalloc((void **)&b->d_ids, (size_t)count * sizeof *b->d_ids));
    b->d_ids_cap = count;
    rc = 0;
fail:
    return rc;
}

static int ensure_device_out(gather_bench *b, int64_t bytes) {
    int rc = -1;
    if (bytes <= b->d_out_cap) return 0;
    if (b->d_out) BENCH_CUDA(cudaFree(b->d_out));
    b->d_out = NULL;
    b->d_out_cap = 0;
    BENCH_CUDA(cudaMalloc((void **)&b->d_out, (size_t)bytes));
    b->d_out_cap = bytes;
    rc = 0;
fail:
    return rc;
}
#endif

/* Room for a plan's ids and output, and the ids copied to the device for GPU runs. */
static int stage_plan(gather_bench *b, int64_t total_ids, int64_t max_call_ids, int64_t row_bytes) {
    if (ensure_check_row(b, row_bytes) != 0) return -1;
#ifdef GD_WITH_CUDA
    if (b->gpu) {
        int rc = -1;
        if (ensure_device_ids(b, total_ids) != 0) return -1;
        if (ensure_device_out(b, max_call_ids * row_bytes) != 0) return -1;
        BENCH_CUDA(cudaMemcpy(b->d_ids, b->h_ids, (size_t)total_ids * sizeof(int64_t),
                              cudaMemcpyHostToDevice));
        /* A pageable copy may return before it lands; the gathers run on another stream. */
        BENCH_CUDA(cudaDeviceSynchronize());
        rc = 0;
    fail:
        if (rc != 0) return rc;
    }
#else
    (void)total_ids;
#endif
    if (b->use[BM_CPU] || !b->gpu) return ensure_host_out(b, max_call_ids * row_bytes);
    return 0;
}

/* ------------------------------------------------------------------ measuring */

static int run_calls(gather_bench *b, gd_gatherer_t *g, bench_mode m, const call_plan *p, int first,
                     int count, const char *label) {
    const int on_device = device_ids_mode(m);
    void *out = m == BM_CPU ? (void *)b->h_out : NULL;
    void *stream = NULL;
#ifdef GD_WITH_CUDA
    if (m != BM_CPU) out = b->d_out, stream = b->stream;
#endif
    for (int i = first; i < first + count; i++) {
        const int64_t s = plan_start(p, i);
        const int64_t *ids = on_device ? p->d_ids + s : p->h_ids + s;
        BENCH_GD(gd_gather(g, ids, plan_len(p, i), on_device, out, stream), label);
    }
    return 0;
fail:
    return -1;
}

/*
 * Compare rows of the last call's output with the table: a handful spread over the call, so
 * that a gather that writes the wrong bytes fails the benchmark rather than reporting a rate.
 */
static int spot_check(gather_bench *b, bench_mode m, const call_plan *p, const void *src,
                      int64_t row_bytes, const char *label) {
    int rc = -1;
    const int last = p->warm + p->calls - 1;
    const int64_t n = plan_len(p, last), s = plan_start(p, last);
    const int checks = n < 16 ? (int)n : 16;
    for (int k = 0; k < checks; k++) {
        const int64_t pos = checks > 1 ? (n - 1) * k / (checks - 1) : 0;
        const int64_t id = p->h_ids[s + pos];
        const unsigned char *got = b->check_row;
        if (m == BM_CPU) {
            got = b->h_out + pos * row_bytes;
        } else {
#ifdef GD_WITH_CUDA
            BENCH_CUDA(cudaMemcpy(b->check_row, b->d_out + pos * row_bytes, (size_t)row_bytes,
                                  cudaMemcpyDeviceToHost));
#endif
        }
        BENCH_REQUIRE(memcmp(got, (const unsigned char *)src + id * row_bytes, (size_t)row_bytes) ==
                          0,
                      "%s: output row %lld (id %lld) of the last call differs from the table: "
                      "the gather wrote wrong bytes, so its rate is not reported",
                      label, (long long)pos, (long long)id);
    }
    rc = 0;
fail:
    return rc;
}

/* Time calls [first, first + count) of the plan back to back, the way mode m is timed. */
static int time_calls(gather_bench *b, gd_gatherer_t *g, bench_mode m, const call_plan *p,
                      int first, int count, const char *label, double *seconds) {
    int rc = -1;
    double t0;
    *seconds = 0;
#ifdef GD_WITH_CUDA
    if (device_ids_mode(m)) {
        float ms = 0;
        BENCH_CUDA(cudaEventRecord(b->ev0, b->stream));
        if (run_calls(b, g, m, p, first, count, label) != 0) goto fail;
        BENCH_CUDA(cudaEventRecord(b->ev1, b->stream));
        BENCH_CUDA(cudaEventSynchronize(b->ev1));
        BENCH_CUDA(cudaEventElapsedTime(&ms, b->ev0, b->ev1));
        *seconds = ms / 1e3;
    } else if (m == BM_CPU_DMA) {
        t0 = bench_now();
        if (run_calls(b, g, m, p, first, count, label) != 0) goto fail;
        BENCH_CUDA(cudaStreamSynchronize(b->stream));
        *seconds = bench_now() - t0;
    }
#endif
    if (m == BM_CPU) {
        t0 = bench_now();
        if (run_calls(b, g, m, p, first, count, label) != 0) goto fail;
        *seconds = bench_now() - t0;
    }
    rc = 0;
fail:
    return rc;
}

/*
 * Warm up, then time p->calls gathers back to back in ROUNDS rounds; *seconds is the time the
 * timed calls take at the pace of the fastest round (a lent VM has stalls that are not the
 * gather's: the DMA ceiling is the best of its repetitions too).
 */
#define ROUNDS 3
static int measure(gather_bench *b, gd_gatherer_t *g, bench_mode m, const call_plan *p,
                   const void *src, int64_t row_bytes, const char *label, double *seconds) {
    int rc = -1;
    const int rounds = p->calls < ROUNDS ? p->calls : ROUNDS;
    double best = 0;
    *seconds = 0;
    if (run_calls(b, g, m, p, 0, p->warm, label) != 0) goto fail;
#ifdef GD_WITH_CUDA
    if (m != BM_CPU) BENCH_CUDA(cudaStreamSynchronize(b->stream));
#endif
    for (int r = 0, first = p->warm; r < rounds; r++) {
        const int count = p->calls / rounds + (r < p->calls % rounds);
        double secs = 0;
        if (time_calls(b, g, m, p, first, count, label, &secs) != 0) goto fail;
        BENCH_REQUIRE(secs > 0, "%s: the timer read %g s for %d calls", label, secs, count);
        if (r == 0 || secs / count < best) best = secs / count;
        first += count;
    }
#ifdef GD_WITH_CUDA
    if (m != BM_CPU) BENCH_GD(gd_gatherer_check_errors(g), label);
#endif
    *seconds = best * p->calls;
    if (spot_check(b, m, p, src, row_bytes, label) != 0) goto fail;
    rc = 0;
fail:
    return rc;
}

/* ------------------------------------------------------------------ ceilings */

#ifdef GD_WITH_CUDA
/* Pinned host -> device copies of one large block: the bandwidth a gather can at best reach. */
static int measure_dma(gather_bench *b) {
    int rc = -1;
    void *h = NULL, *d = NULL;
    const size_t bytes = (size_t)b->ceiling_bytes;
    enum { REPS = 5 };
    double rates[REPS];
    char sz[32];
    cudaError_t ce = cudaHostAlloc(&h, bytes, cudaHostAllocDefault);
    if (ce != cudaSuccess) {
        (void)cudaGetLastError();
        h = NULL;
        bench_error("cudaHostAlloc of %s for the DMA ceiling failed: %s (%s): raise the "
                    "locked-memory limit (ulimit -l) or free host memory",
                    cli_bytes((double)bytes, sz, sizeof sz), cudaGetErrorString(ce),
                    cudaGetErrorName(ce));
        goto fail;
    }
    bench_fill_pattern(h, bytes, b->opt.threads);
    BENCH_CUDA(cudaMalloc(&d, bytes));
    for (int r = -1; r < REPS; r++) { /* r = -1 warms up */
        float ms = 0;
        BENCH_CUDA(cudaEventRecord(b->ev0, b->stream));
        BENCH_CUDA(cudaMemcpyAsync(d, h, bytes, cudaMemcpyHostToDevice, b->stream));
        BENCH_CUDA(cudaEventRecord(b->ev1, b->stream));
        BENCH_CUDA(cudaEventSynchronize(b->ev1));
        BENCH_CUDA(cudaEventElapsedTime(&ms, b->ev0, b->ev1));
        if (r >= 0) rates[r] = gbps((double)bytes, ms / 1e3);
    }
    b->dma_best = 0;
    for (int r = 0; r < REPS; r++) b->dma_best = rates[r] > b->dma_best ? rates[r] : b->dma_best;
    b->dma_median = bench_median(rates, REPS);
    rc = 0;
fail:
    if (d && cudaFree(d) != cudaSuccess) (void)cudaGetLastError();
    if (h && cudaFreeHost(h) != cudaSuccess) (void)cudaGetLastError();
    return rc;
}
#endif

/* A parallel memcpy of a large block of the table: the ceiling of a CPU gather. */
static int measure_memcpy(gather_bench *b) {
    const size_t bytes =
        (size_t)(b->ceiling_bytes < b->table_bytes ? b->ceiling_bytes : b->table_bytes);
    unsigned char *dst = malloc(bytes);
    if (!dst) {
        bench_error("out of memory for the %zu-byte memcpy ceiling", bytes);
        return -1;
    }
    bench_fill_pattern(dst, bytes, b->opt.threads); /* fault the pages in before timing */
    b->memcpy_best = 0;
    for (int r = -1; r < 3; r++) {
        const double t0 = bench_now();
        bench_parallel_copy(dst, b->table_data, bytes, b->opt.threads);
        const double rate = gbps((double)bytes, bench_now() - t0);
        if (r >= 0 && rate > b->memcpy_best) b->memcpy_best = rate;
    }
    free(dst);
    return 0;
}

/* ------------------------------------------------------------------ the sweep */

/* Ids per call, clipped to --max-call-bytes (to a multiple of 1Ki when that is possible). */
static int64_t clip_ids(const gather_bench *b, int64_t n, int64_t row_bytes) {
    int64_t most = b->max_call_bytes / row_bytes;
    if (n <= most) return n;
    if (most >= 1024) most = most / 1024 * 1024;
    return most > 0 ? most : 1;
}

static void plan_counts(const gather_bench *b, int64_t call_bytes, int *warm, int *calls) {
    int64_t c = (b->budget + call_bytes - 1) / call_bytes;
    if (c < 3) c = 3;
    if (c > b->iters) c = b->iters;
    *calls = (int)c;
    *warm = call_bytes >= ((int64_t)256 << 20) ? 1 : 2;
}

static int add_measurement(gather_bench *b, cJSON *arr, bench_mode m, int64_t row_bytes,
                           int64_t ids_asked, int64_t n, const call_plan *p, double seconds,
                           double rate, const gd_gatherer_t *g) {
    cJSON *o = cJSON_CreateObject();
    if (!o || !cJSON_AddItemToArray(arr, o)) {
        cJSON_Delete(o);
        goto fail;
    }
    BENCH_JSON(cJSON_AddStringToObject(o, "mode", modes[m].name));
    BENCH_JSON(cJSON_AddNumberToObject(o, "sort_ids_option", modes[m].sort));
    BENCH_JSON(cJSON_AddNumberToObject(o, "row_bytes", (double)row_bytes));
    BENCH_JSON(cJSON_AddNumberToObject(o, "ids_requested", (double)ids_asked));
    BENCH_JSON(cJSON_AddNumberToObject(o, "ids", (double)n));
    BENCH_JSON(cJSON_AddNumberToObject(o, "warmup_calls", p->warm));
    BENCH_JSON(cJSON_AddNumberToObject(o, "calls", p->calls));
    BENCH_JSON(cJSON_AddNumberToObject(o, "seconds", seconds));
    BENCH_JSON(cJSON_AddNumberToObject(o, "gbps", rate));
    BENCH_JSON(cJSON_AddNumberToObject(o, "ratio_to_ceiling",
                                       b->ceiling_gbps > 0 ? rate / b->ceiling_gbps : 0));
    if (g) {
        gd_gatherer_info info = GD_GATHERER_INFO_INIT;
        BENCH_GD(gd_gatherer_get_info(g, &info), "reading the gatherer's info");
        BENCH_JSON(cJSON_AddNumberToObject(o, "sms", info.sms));
        BENCH_JSON(cJSON_AddBoolToObject(o, "green_context", info.green_context));
        BENCH_JSON(cJSON_AddNumberToObject(o, "group_lanes", info.group_lanes));
    }
    return 0;
fail:
    bench_error("out of memory building the JSON record");
    return -1;
}

static int create_gatherer(gather_bench *b, gd_host_tensor_t *t, bench_mode m, int64_t max_ids,
                           const char *sm_budget, int64_t cache_bytes, const int64_t *scores,
                           gd_gatherer_t **g, gd_status *status) {
    gd_gatherer_options o = GD_GATHERER_OPTIONS_INIT;
    o.max_ids = max_ids;
    o.sort_ids = modes[m].sort;
    o.sm_budget = sm_budget;
    o.threads = b->opt.threads;
    o.cache_bytes = cache_bytes;
    o.cache_scores = scores;
    *status = gd_gatherer_create(t, b->context, modes[m].mode, &o, g);
    return *status == GD_OK ? 0 : -1;
}

/* The zero-copy gather with a fraction of the SMs, at one width, on the largest calls. */
static int sm_sweep(gather_bench *b, gd_host_tensor_t *t, int si, int64_t row_bytes,
                    const call_plan *p) {
    int rc = -1;
    gd_gatherer_t *g = NULL;
    gd_status st;
    char label[96];
    for (int k = 0; k < SM_BUDGETS; k++) {
        gd_gatherer_info info = GD_GATHERER_INFO_INIT;
        double secs;
        snprintf(label, sizeof label, "zerocopy on %s of the SMs, %lld-byte rows", sm_budgets[k],
                 (long long)row_bytes);
        if (create_gatherer(b, t, BM_ZEROCOPY, p->n, sm_budgets[k], 0, NULL, &g, &st) != 0) {
            bench_gd_error(label, st);
            goto fail;
        }
        BENCH_GD(gd_gatherer_get_info(g, &info), "reading the gatherer's info");
        if (measure(b, g, BM_ZEROCOPY, p, b->table_data, row_bytes, label, &secs) != 0) goto fail;
        b->sm_gbps[si][k] = gbps((double)p->n * (double)row_bytes * p->calls, secs);
        b->sm_sms[si][k] = info.sms;
        b->sm_green[si][k] = info.green_context;
        fprintf(stderr, "  [%lld B] zerocopy, SM budget %s: %d SMs (%s), %.1f GB/s\n",
                (long long)row_bytes, sm_budgets[k], info.sms,
                info.green_context ? "green context" : "grid cap", b->sm_gbps[si][k]);
        {
            cJSON *o = cJSON_CreateObject();
            if (!o || !cJSON_AddItemToArray(b->jsm, o)) {
                cJSON_Delete(o);
                BENCH_REQUIRE(0, "out of memory building the JSON record");
            }
            BENCH_JSON(cJSON_AddNumberToObject(o, "row_bytes", (double)row_bytes));
            BENCH_JSON(cJSON_AddNumberToObject(o, "ids", (double)p->n));
            BENCH_JSON(cJSON_AddStringToObject(o, "sm_budget", sm_budgets[k]));
            BENCH_JSON(cJSON_AddNumberToObject(o, "sms", info.sms));
            BENCH_JSON(cJSON_AddBoolToObject(o, "green_context", info.green_context));
            BENCH_JSON(cJSON_AddNumberToObject(o, "calls", p->calls));
            BENCH_JSON(cJSON_AddNumberToObject(o, "seconds", secs));
            BENCH_JSON(cJSON_AddNumberToObject(o, "gbps", b->sm_gbps[si][k]));
        }
        gd_gatherer_destroy(g);
        g = NULL;
        if (cli_interrupted()) goto fail;
    }
    rc = 0;
fail:
    gd_gatherer_destroy(g);
    return rc;
}

/* Every mode and id count at one row width, over a view of the table with that width. */
static int sweep_width(gather_bench *b, int wi) {
    int rc = -1;
    const int64_t w = b->widths[wi];
    const gd_dtype dtype = w % 4 == 0 ? GD_DTYPE_FLOAT32 : GD_DTYPE_UINT8;
    const int64_t cols = w % 4 == 0 ? w / 4 : w;
    const int64_t rows = b->table_bytes / w;
    gd_host_tensor_t *t = NULL;
    gd_gatherer_t *g[BM_COUNT] = {0};
    int64_t nmax = 1;
    char label[96], sz[32], nb[32];
    gd_status st;

    BENCH_GD(gd_host_tensor_adopt(b->table_data, rows, cols, dtype, 0, &t),
             "wrapping the table as a host tensor");
    if (b->gpu) {
        const double t0 = bench_now();
        BENCH_GD(gd_host_tensor_register(t, b->context), "registering the table with the GPU");
        fprintf(
            stderr, "  [%lld B] width %d of %d, %lld rows: registered %s with GPU %d in %.2f s\n",
            (long long)w, wi + 1, b->nwidths, (long long)rows,
            cli_bytes((double)rows * (double)w, sz, sizeof sz), b->opt.device, bench_now() - t0);
    }
    for (int ni = 0; ni < b->nids; ni++) {
        const int64_t n = clip_ids(b, b->ids[ni], w);
        nmax = n > nmax ? n : nmax;
    }
    for (int m = 0; m < BM_COUNT; m++) {
        if (!b->use[m]) continue;
        snprintf(label, sizeof label, "gather mode %s, %lld-byte rows", modes[m].name,
                 (long long)w);
        if (create_gatherer(b, t, (bench_mode)m, nmax, "0", 0, NULL, &g[m], &st) != 0) {
            if (m == BM_GPU && st == GD_ERR_NO_MEMORY) {
                fprintf(stderr,
                        "  [%lld B] gpu mode skipped: the table does not fit in GPU "
                        "memory (%s)\n",
                        (long long)w, gd_last_error());
                continue;
            }
            bench_gd_error(label, st);
            goto fail;
        }
    }

    for (int ni = 0; ni < b->nids; ni++) {
        const int64_t n = clip_ids(b, b->ids[ni], w);
        call_plan p = {0};
        p.n = n;
        plan_counts(b, n * w, &p.warm, &p.calls);
        const int64_t total = n * (p.warm + p.calls);
        if (ensure_host_ids(b, total) != 0) goto fail;
        bench_random_ids(b->h_ids, total, n, rows,
                         bench_mix64(b->opt.seed ^ ((uint64_t)w << 32) ^ (uint64_t)n),
                         b->opt.threads);
        if (stage_plan(b, total, n, w) != 0) goto fail;
        p.h_ids = b->h_ids;
#ifdef GD_WITH_CUDA
        p.d_ids = b->d_ids;
#endif
        b->sweep_n[wi][ni] = n;
        for (int m = 0; m < BM_COUNT; m++) {
            double secs;
            if (!g[m]) continue;
            snprintf(label, sizeof label, "gather mode %s, %lld-byte rows, %lld ids per call",
                     modes[m].name, (long long)w, (long long)n);
            if (measure(b, g[m], (bench_mode)m, &p, b->table_data, w, label, &secs) != 0) goto fail;
            const double rate = gbps((double)n * (double)w * p.calls, secs);
            b->sweep[wi][ni][m] = rate;
            fprintf(stderr, "  [%lld B x %s] %-14s %7.2f GB/s  %.2f of the ceiling\n", (long long)w,
                    bench_count_text(n, nb, sizeof nb), modes[m].name, rate,
                    b->ceiling_gbps > 0 ? rate / b->ceiling_gbps : 0);
            if (add_measurement(b, b->jsweep, (bench_mode)m, w, b->ids[ni], n, &p, secs, rate,
                                m == BM_CPU ? NULL : g[m]) != 0)
                goto fail;
            if (cli_interrupted()) goto fail;
        }
    }

    /* The SM budget part: the largest calls, at its widths only. */
    for (int si = 0; b->gpu && b->sm_sweep && si < MAX_SM_WIDTHS; si++) {
        call_plan p = {0};
        if (sm_widths[si] != w) continue;
        for (int m = 0; m < BM_COUNT; m++) { /* give their GPU memory back first */
            gd_gatherer_destroy(g[m]);
            g[m] = NULL;
        }
        p.n = nmax;
        plan_counts(b, nmax * w, &p.warm, &p.calls);
        const int64_t total = nmax * (p.warm + p.calls);
        if (ensure_host_ids(b, total) != 0) goto fail;
        bench_random_ids(b->h_ids, total, nmax, rows,
                         bench_mix64(b->opt.seed ^ ((uint64_t)w << 32) ^ (uint64_t)nmax ^ 0x5353),
                         b->opt.threads);
        if (stage_plan(b, total, nmax, w) != 0) goto fail;
        p.h_ids = b->h_ids;
#ifdef GD_WITH_CUDA
        p.d_ids = b->d_ids;
#endif
        b->sm_n[si] = nmax;
        if (sm_sweep(b, t, si, w, &p) != 0) goto fail;
    }
    rc = 0;
fail:
    for (int m = 0; m < BM_COUNT; m++) gd_gatherer_destroy(g[m]);
    gd_host_tensor_destroy(t);
    return rc;
}

/* ------------------------------------------------------------------ the cache part */

static int get_array(const gd_dataset_t *ds, gd_array_id id, gd_array_view *v) {
    gd_status st = gd_dataset_array(ds, id, v);
    if (st == GD_OK) return 0;
    char what[64];
    snprintf(what, sizeof what, "reading the dataset's %s array", gd_array_name(id));
    bench_gd_error(what, st);
    return -1;
}

/* Hit rate of a cache holding the `rows` hottest rows by scores, over the timed ids. */
static int modelled_hit_rate(const int64_t *scores, int64_t num_rows, int64_t rows,
                             const int64_t *ids, int64_t n, double *rate) {
    int rc = -1;
    int64_t *hot = NULL, count = 0, hits = 0;
    uint8_t *mark = NULL;
    *rate = 0;
    if (rows <= 0 || n == 0) return 0;
    hot = malloc((size_t)rows * sizeof *hot);
    mark = calloc((size_t)(num_rows + 7) / 8, 1);
    BENCH_REQUIRE(hot && mark, "out of memory choosing hot rows");
    BENCH_GD(gd_hot_rows_select(scores, num_rows, rows, hot, &count), "choosing the hot rows");
    for (int64_t i = 0; i < count; i++) mark[hot[i] >> 3] |= (uint8_t)(1u << (hot[i] & 7));
    for (int64_t i = 0; i < n; i++) hits += (mark[ids[i] >> 3] >> (ids[i] & 7)) & 1;
    *rate = (double)hits / (double)n;
    rc = 0;
fail:
    free(hot);
    free(mark);
    return rc;
}

static int add_cache_run(gather_bench *b, const char *score, int pct, int64_t cached_rows,
                         double hit, const char *hit_source, double seconds, double rate,
                         double speedup) {
    cJSON *o = cJSON_CreateObject();
    cJSON *runs = cJSON_GetObjectItem(b->jcache, "runs");
    if (!o || !runs || !cJSON_AddItemToArray(runs, o)) {
        cJSON_Delete(o);
        goto fail;
    }
    BENCH_JSON(cJSON_AddStringToObject(o, "score", score));
    BENCH_JSON(cJSON_AddNumberToObject(o, "percent", pct));
    BENCH_JSON(cJSON_AddNumberToObject(o, "cached_rows", (double)cached_rows));
    BENCH_JSON(cJSON_AddNumberToObject(o, "hit_rate", hit));
    BENCH_JSON(cJSON_AddStringToObject(o, "hit_rate_from", hit_source));
    if (seconds > 0) {
        BENCH_JSON(cJSON_AddNumberToObject(o, "seconds", seconds));
        BENCH_JSON(cJSON_AddNumberToObject(o, "gbps", rate));
        BENCH_JSON(cJSON_AddNumberToObject(o, "ratio_to_ceiling",
                                           b->ceiling_gbps > 0 ? rate / b->ceiling_gbps : 0));
        BENCH_JSON(cJSON_AddNumberToObject(o, "speedup", speedup));
    }
    return 0;
fail:
    bench_error("out of memory building the JSON record");
    return -1;
}

static void print_cache_row(const char *score, int pct, int64_t cached_rows, double hit,
                            double rate, double ceiling, double speedup) {
    char rows_text[32];
    printf("  %-14s %3d %%  %9s  %6.1f %%", score, pct,
           cli_count((double)cached_rows, rows_text, sizeof rows_text), 100 * hit);
    if (rate > 0)
        printf("  %7.2f  %5.2f  %6.2fx\n", rate, ceiling > 0 ? rate / ceiling : 0, speedup);
    else
        printf("  %7s  %5s  %7s\n", "-", "-", "-");
}

static int cache_sweep(gather_bench *b) {
    int rc = -1;
    gd_dataset_t *ds = NULL;
    gd_host_tensor_t *t = NULL;
    gd_gatherer_t *g = NULL;
    bench_batches timed = {0}, scoring = {0};
    int64_t *scores[SCORE_KINDS] = {0};
    gd_array_view indptr, indices, features, train;
    bench_graph graph = {0};
    cli_progress prog;
    call_plan p = {0};
    char label[128], a[32], c[32];
    double t0, secs0 = 0, rate0 = 0;
    gd_status st;

    /* The graph, in memory. */
    gd_generate_options go = GD_GENERATE_OPTIONS_INIT;
    go.preset = b->opt.preset;
    go.seed = b->opt.seed;
    go.threads = 0;
    cli_progress_init(&prog);
    go.progress = cli_progress_cb;
    go.progress_user = &prog;
    fprintf(stderr, "cache: generating preset '%s' in memory\n", b->opt.preset);
    t0 = bench_now();
    st = gd_generate(&go, &ds);
    cli_progress_end(&prog);
    BENCH_GD(st, "generating the cache benchmark's graph");
    fprintf(stderr, "cache: generated in %.2f s\n", bench_now() - t0);
    if (get_array(ds, GD_ARRAY_INDPTR, &indptr) || get_array(ds, GD_ARRAY_INDICES, &indices) ||
        get_array(ds, GD_ARRAY_FEATURES, &features))
        goto fail;
    graph.num_nodes = gd_dataset_num_nodes(ds);
    graph.indptr = indptr.data;
    graph.indices = indices.data;
    graph.indices_dtype = indices.dtype;
    if (gd_dataset_array(ds, GD_ARRAY_TRAIN_IDX, &train) == GD_OK && train.shape[0] > 0) {
        graph.train = train.data;
        graph.train_dtype = train.dtype;
        graph.train_count = train.shape[0];
    }
    const int64_t rows = features.shape[0];
    const int64_t cols = features.ndim > 1 ? features.shape[1] : 1;
    const int64_t row_bytes = cols * (int64_t)gd_dtype_size(features.dtype);

    /* Minibatches: one warm-up and b->batches timed ones, and as many to score rows with. */
    t0 = bench_now();
    if (bench_sample_batches(&graph, b->batches + 1, b->batch_seeds, fanouts, 3, b->opt.seed,
                             b->opt.threads, &timed) != 0 ||
        bench_sample_batches(&graph, b->score_batches, b->batch_seeds, fanouts, 3,
                             bench_mix64(b->opt.seed + 0x5eed), b->opt.threads, &scoring) != 0)
        goto fail;
    const int64_t timed_ids = timed.offsets[timed.count] - timed.offsets[1];
    const int64_t *timed_first = timed.ids + timed.offsets[1];
    fprintf(stderr,
            "cache: %d + %d minibatches of %lld seeds, fanouts %d,%d,%d: %s ids per "
            "minibatch on average (%.2f s)\n",
            timed.count, scoring.count, (long long)b->batch_seeds, fanouts[0], fanouts[1],
            fanouts[2], cli_count((double)timed_ids / b->batches, a, sizeof a), bench_now() - t0);

    /* Scores. */
    for (int k = 0; k < SCORE_KINDS; k++) {
        scores[k] = calloc((size_t)graph.num_nodes, sizeof(int64_t));
        BENCH_REQUIRE(scores[k], "out of memory for the row scores");
    }
    BENCH_GD(gd_csc_degree_scores(graph.num_nodes, graph.indptr, graph.indices, graph.indices_dtype,
                                  GD_DEGREE_IN, scores[SCORE_IN]),
             "in-degree scores");
    BENCH_GD(gd_csc_degree_scores(graph.num_nodes, graph.indptr, graph.indices, graph.indices_dtype,
                                  GD_DEGREE_OUT, scores[SCORE_OUT]),
             "out-degree scores");
    BENCH_GD(gd_access_counts_add(scores[SCORE_ACCESS], graph.num_nodes, scoring.ids,
                                  scoring.offsets[scoring.count]),
             "access-count scores");

    BENCH_JSON(cJSON_AddStringToObject(b->jcache, "preset", b->opt.preset));
    BENCH_JSON(cJSON_AddNumberToObject(b->jcache, "nodes", (double)graph.num_nodes));
    BENCH_JSON(cJSON_AddNumberToObject(b->jcache, "edges", (double)gd_dataset_num_edges(ds)));
    BENCH_JSON(cJSON_AddNumberToObject(b->jcache, "row_bytes", (double)row_bytes));
    BENCH_JSON(cJSON_AddNumberToObject(b->jcache, "minibatches", b->batches));
    BENCH_JSON(cJSON_AddNumberToObject(b->jcache, "score_minibatches", scoring.count));
    BENCH_JSON(cJSON_AddNumberToObject(b->jcache, "seeds_per_minibatch", (double)b->batch_seeds));
    BENCH_JSON(cJSON_AddNumberToObject(b->jcache, "ids_timed", (double)timed_ids));
    BENCH_JSON(cJSON_AddNumberToObject(b->jcache, "ids_longest_minibatch", (double)timed.max_len));
    BENCH_JSON(cJSON_AddItemToObject(b->jcache, "fanouts", cJSON_CreateIntArray(fanouts, 3)));
    BENCH_JSON(cJSON_AddItemToObject(b->jcache, "runs", cJSON_CreateArray()));

    /* The tensor and the calls: each timed minibatch is one gather. */
    BENCH_GD(gd_host_tensor_adopt(features.data, rows, cols, features.dtype, 0, &t),
             "wrapping the features as a host tensor");
    if (b->gpu) {
        t0 = bench_now();
        BENCH_GD(gd_host_tensor_register(t, b->context), "registering the features");
        fprintf(stderr, "cache: registered %s of features in %.2f s\n",
                cli_bytes((double)rows * (double)row_bytes, a, sizeof a), bench_now() - t0);
    }
    if (ensure_host_ids(b, timed.offsets[timed.count]) != 0) goto fail;
    memcpy(b->h_ids, timed.ids, (size_t)timed.offsets[timed.count] * sizeof(int64_t));
    if (stage_plan(b, timed.offsets[timed.count], timed.max_len, row_bytes) != 0) goto fail;
    p.h_ids = b->h_ids;
#ifdef GD_WITH_CUDA
    p.d_ids = b->d_ids;
#endif
    p.offsets = timed.offsets;
    p.warm = 1;
    p.calls = b->batches;

    printf("\nGPU cache: preset %s (%s nodes, %lld-byte rows); %d minibatches of %lld seeds, "
           "fanouts %d,%d,%d, %s ids each on average\n",
           b->opt.preset, cli_count((double)graph.num_nodes, a, sizeof a), (long long)row_bytes,
           b->batches, (long long)b->batch_seeds, fanouts[0], fanouts[1], fanouts[2],
           cli_count((double)timed_ids / b->batches, c, sizeof c));
    printf("  %-14s %-6s %9s  %8s  %7s  %5s  %7s\n", "score", "cached", "rows", "hit rate", "GB/s",
           b->gpu ? "xDMA" : "xcopy", "speed-up");

    /* 0 %: zero-copy alone (or the CPU gather without a GPU), the baseline. */
    {
        const bench_mode m0 = b->gpu ? BM_ZEROCOPY : BM_CPU;
        snprintf(label, sizeof label, "cache benchmark, %s without a cache", modes[m0].name);
        if (create_gatherer(b, t, m0, timed.max_len, "0", 0, NULL, &g, &st) != 0) {
            bench_gd_error(label, st);
            goto fail;
        }
        if (measure(b, g, m0, &p, features.data, row_bytes, label, &secs0) != 0) goto fail;
        rate0 = gbps((double)timed_ids * (double)row_bytes, secs0);
        gd_gatherer_destroy(g);
        g = NULL;
        print_cache_row("none", 0, 0, 0, rate0, b->ceiling_gbps, 1.0);
        if (add_cache_run(b, "none", 0, 0, 0, "none", secs0, rate0, 1.0) != 0) goto fail;
    }
    for (int k = 0; k < SCORE_KINDS; k++) {
        for (int pi = 1; pi < CACHE_PCTS; pi++) {
            const int pct = cache_pcts[pi];
            const int64_t cache_rows = rows * pct / 100;
            double hit = 0, secs = 0, rate = 0;
            int64_t cached_rows = cache_rows;
            if (!b->gpu) {
                if (modelled_hit_rate(scores[k], rows, cache_rows, timed_first, timed_ids, &hit) !=
                    0)
                    goto fail;
                print_cache_row(score_names[k], pct, cached_rows, hit, 0, 0, 0);
                if (add_cache_run(b, score_names[k], pct, cached_rows, hit, "model", 0, 0, 0))
                    goto fail;
                continue;
            }
            {
                gd_gatherer_info info = GD_GATHERER_INFO_INIT;
                int64_t hits = 0;
                snprintf(label, sizeof label,
                         "cache benchmark, zerocopy with %d %% of the rows cached by %s", pct,
                         score_names[k]);
                if (create_gatherer(b, t, BM_ZEROCOPY, timed.max_len, "0", cache_rows * row_bytes,
                                    scores[k], &g, &st) != 0) {
                    bench_gd_error(label, st);
                    goto fail;
                }
                BENCH_GD(gd_gatherer_get_info(g, &info), "reading the gatherer's info");
                cached_rows = info.cached_rows;
                if (measure(b, g, BM_ZEROCOPY, &p, features.data, row_bytes, label, &secs) != 0)
                    goto fail;
                rate = gbps((double)timed_ids * (double)row_bytes, secs);
                for (int64_t i = 0; i < timed_ids; i++)
                    hits += gd_gatherer_is_cached(g, timed_first[i]);
                hit = (double)hits / (double)(timed_ids ? timed_ids : 1);
                gd_gatherer_destroy(g);
                g = NULL;
            }
            const double speedup = secs > 0 ? secs0 / secs : 0;
            if (pct == 20) b->cache_speedup_20[k] = speedup;
            fprintf(stderr, "  cache %s %d %%: hit rate %.1f %%, %.2f GB/s, %.2fx\n",
                    score_names[k], pct, 100 * hit, rate, speedup);
            print_cache_row(score_names[k], pct, cached_rows, hit, rate, b->ceiling_gbps, speedup);
            if (add_cache_run(b, score_names[k], pct, cached_rows, hit, "gatherer", secs, rate,
                              speedup) != 0)
                goto fail;
            if (cli_interrupted()) goto fail;
        }
    }
    /* The upper bound: every row in GPU memory. */
    if (b->gpu) {
        double secs = 0;
        snprintf(label, sizeof label, "cache benchmark, gpu mode (all rows in GPU memory)");
        if (create_gatherer(b, t, BM_GPU, timed.max_len, "0", 0, NULL, &g, &st) != 0) {
            if (st != GD_ERR_NO_MEMORY) {
                bench_gd_error(label, st);
                goto fail;
            }
            fprintf(stderr, "cache: gpu mode skipped: the features do not fit in GPU memory\n");
        } else {
            if (measure(b, g, BM_GPU, &p, features.data, row_bytes, label, &secs) != 0) goto fail;
            const double rate = gbps((double)timed_ids * (double)row_bytes, secs);
            print_cache_row("all (gpu mode)", 100, rows, 1.0, rate, b->ceiling_gbps, secs0 / secs);
            if (add_cache_run(b, "all (gpu mode)", 100, rows, 1.0, "gpu mode", secs, rate,
                              secs0 / secs) != 0)
                goto fail;
        }
    } else {
        printf("  (hit rates from the scores; GPU cache timings need a CUDA build and a GPU)\n");
    }
    rc = 0;
fail:
    gd_gatherer_destroy(g);
    gd_host_tensor_destroy(t);
    for (int k = 0; k < SCORE_KINDS; k++) free(scores[k]);
    bench_batches_free(&timed);
    bench_batches_free(&scoring);
    gd_dataset_close(ds);
    return rc;
}

/* ------------------------------------------------------------------ report */

static int largest_ids_index(const gather_bench *b) {
    int k = 0;
    for (int i = 1; i < b->nids; i++)
        if (b->ids[i] > b->ids[k]) k = i;
    return k;
}

static void print_sweep(const gather_bench *b) {
    char nb[32], head[32];
    int clipped = 0;
    printf("\ngather sweep: GB/s of useful bytes (ids x row bytes / time) and the ratio to the "
           "ceiling (%s %.2f GB/s)\n",
           b->gpu ? "pinned DMA" : "host memcpy", b->ceiling_gbps);
    printf("  %7s %8s", "row B", "ids");
    for (int m = 0; m < BM_COUNT; m++)
        if (b->use[m]) printf(" | %15s", modes[m].name);
    printf("\n");
    for (int wi = 0; wi < b->nwidths; wi++) {
        for (int ni = 0; ni < b->nids; ni++) {
            const int64_t n = b->sweep_n[wi][ni];
            const int clip = n != b->ids[ni];
            clipped |= clip;
            snprintf(head, sizeof head, "%s%s", bench_count_text(n, nb, sizeof nb),
                     clip ? "*" : "");
            printf("  %7lld %8s", (long long)b->widths[wi], head);
            for (int m = 0; m < BM_COUNT; m++) {
                if (!b->use[m]) continue;
                const double r = b->sweep[wi][ni][m];
                if (isnan(r))
                    printf(" | %15s", "-");
                else
                    printf(" | %8.2f %6.2f", r, b->ceiling_gbps > 0 ? r / b->ceiling_gbps : 0);
            }
            printf("\n");
        }
    }
    if (clipped) {
        char sz[32];
        printf("  * ids per call clipped so that one call moves at most %s (--max-call-bytes)\n",
               cli_bytes((double)b->max_call_bytes, sz, sizeof sz));
    }
}

static void print_sm(const gather_bench *b) {
    int any = 0;
    for (int si = 0; si < MAX_SM_WIDTHS; si++) any |= b->sm_gbps[si][SM_BUDGETS - 1] > 0;
    if (!any) return;
    printf("\nSM budget: zerocopy on a fraction of the SMs (ratio to the same gather on all "
           "SMs)\n");
    printf("  %7s %8s %7s %5s  %-13s %8s %6s %7s\n", "row B", "ids", "budget", "SMs", "how", "GB/s",
           "xDMA", "x all");
    for (int si = 0; si < MAX_SM_WIDTHS; si++) {
        const double all = b->sm_gbps[si][SM_BUDGETS - 1];
        char nb[32];
        if (all <= 0) continue;
        for (int k = 0; k < SM_BUDGETS; k++)
            printf("  %7lld %8s %7s %5d  %-13s %8.2f %6.2f %7.2f\n", (long long)sm_widths[si],
                   bench_count_text(b->sm_n[si], nb, sizeof nb), sm_budgets[k], b->sm_sms[si][k],
                   b->sm_green[si][k] ? "green context" : "grid cap", b->sm_gbps[si][k],
                   b->sm_gbps[si][k] / b->ceiling_gbps, b->sm_gbps[si][k] / all);
    }
}

static int find_width(const gather_bench *b, int64_t w) {
    for (int i = 0; i < b->nwidths; i++)
        if (b->widths[i] == w) return i;
    return -1;
}

/* The goals of the design, on the largest calls of the sweep; returns how many were met. */
static void print_targets(gather_bench *b) {
    const int nl = largest_ids_index(b);
    int met = 0, total = 0;
    char name[96];
    printf("\ntargets (set for the lent H100; checked on the largest calls of each width):\n");
    for (int wi = 0; wi < b->nwidths; wi++) { /* zero-copy against DMA */
        const int64_t w = b->widths[wi];
        const double zc = b->sweep[wi][nl][BM_ZEROCOPY];
        if (w < 512 || isnan(zc)) continue;
        snprintf(name, sizeof name, "zerocopy %lld B / DMA", (long long)w);
        met += bench_target(b->jtargets, name, zc / b->dma_best, w >= 1024 ? 0.90 : 0.80, "");
        total++;
    }
    for (int wi = 0; wi < b->nwidths; wi++) { /* misaligned widths against aligned ones */
        const int64_t w = b->widths[wi];
        const int ai = find_width(b, w & ~(int64_t)15);
        if (w % 16 == 0 || ai < 0) continue;
        const double zc = b->sweep[wi][nl][BM_ZEROCOPY], za = b->sweep[ai][nl][BM_ZEROCOPY];
        if (isnan(zc) || isnan(za)) continue;
        snprintf(name, sizeof name, "zerocopy %lld B / %lld B", (long long)w,
                 (long long)b->widths[ai]);
        met += bench_target(b->jtargets, name, zc / za, 0.95, "");
        total++;
    }
    for (int wi = 0; wi < b->nwidths; wi++) { /* zero-copy against the CPU-centric path */
        const double zc = b->sweep[wi][nl][BM_ZEROCOPY], cd = b->sweep[wi][nl][BM_CPU_DMA];
        if (isnan(zc) || isnan(cd)) continue;
        snprintf(name, sizeof name, "zerocopy %lld B / cpu-dma", (long long)b->widths[wi]);
        met += bench_target(b->jtargets, name, zc / cd, 2.5, "x");
        total++;
    }
    for (int si = 0; si < MAX_SM_WIDTHS; si++) { /* a few SMs suffice */
        const double all = b->sm_gbps[si][SM_BUDGETS - 1];
        if (all <= 0) continue;
        snprintf(name, sizeof name, "zerocopy %lld B on 15%% SMs / all SMs",
                 (long long)sm_widths[si]);
        met += bench_target(b->jtargets, name, b->sm_gbps[si][1] / all, 0.90, "");
        total++;
    }
    {
        int best = -1;
        for (int k = 0; k < SCORE_KINDS; k++)
            if (b->cache_speedup_20[k] > 0 &&
                (best < 0 || b->cache_speedup_20[k] > b->cache_speedup_20[best]))
                best = k;
        if (best >= 0) {
            snprintf(name, sizeof name, "20%% cached (%s) / zerocopy alone", score_names[best]);
            met += bench_target(b->jtargets, name, b->cache_speedup_20[best], 3.0, "x");
            total++;
        }
    }
    printf("  %d of %d targets met\n", met, total);
    cJSON_AddNumberToObject(b->root, "targets_met", met);
    cJSON_AddNumberToObject(b->root, "targets_total", total);
}

/* ------------------------------------------------------------------ the command */


static int add_header_json(gather_bench *b) {
    cJSON *params, *ceil;
    if (bench_json_header(&b->root, "gather", &b->opt, b->gpu) != 0) goto fail;
    BENCH_JSON(params = cJSON_AddObjectToObject(b->root, "parameters"));
    BENCH_JSON(cJSON_AddNumberToObject(params, "table_bytes", (double)b->table_bytes));
    {
        cJSON *w = cJSON_AddArrayToObject(params, "rows_bytes");
        cJSON *n = cJSON_AddArrayToObject(params, "ids");
        cJSON *m = cJSON_AddArrayToObject(params, "modes");
        BENCH_REQUIRE(w && n && m, "out of memory building the JSON record");
        for (int i = 0; i < b->nwidths; i++)
            BENCH_JSON(cJSON_AddItemToArray(w, cJSON_CreateNumber((double)b->widths[i])));
        for (int i = 0; i < b->nids; i++)
            BENCH_JSON(cJSON_AddItemToArray(n, cJSON_CreateNumber((double)b->ids[i])));
        for (int i = 0; i < BM_COUNT; i++)
            if (b->use[i]) BENCH_JSON(cJSON_AddItemToArray(m, cJSON_CreateString(modes[i].name)));
    }
    BENCH_JSON(cJSON_AddNumberToObject(params, "iters", b->iters));
    BENCH_JSON(cJSON_AddNumberToObject(params, "budget_bytes", (double)b->budget));
    BENCH_JSON(cJSON_AddNumberToObject(params, "max_call_bytes", (double)b->max_call_bytes));
    BENCH_JSON(cJSON_AddNumberToObject(params, "threads", b->opt.threads));
    BENCH_JSON(cJSON_AddNumberToObject(params, "seed", (double)b->opt.seed));
    BENCH_JSON(cJSON_AddBoolToObject(params, "quick", b->opt.quick));
    BENCH_JSON(cJSON_AddBoolToObject(params, "cache_sweep", b->cache_sweep));
    BENCH_JSON(cJSON_AddBoolToObject(params, "sm_sweep", b->sm_sweep));
    BENCH_JSON(cJSON_AddStringToObject(params, "preset", b->opt.preset));
    BENCH_JSON(ceil = cJSON_AddObjectToObject(b->root, "ceiling"));
    (void)ceil;
    BENCH_JSON(b->jsweep = cJSON_AddArrayToObject(b->root, "sweep"));
    BENCH_JSON(b->jsm = cJSON_AddArrayToObject(b->root, "sm_budget"));
    BENCH_JSON(b->jcache = cJSON_AddObjectToObject(b->root, "cache"));
    BENCH_JSON(b->jtargets = cJSON_AddArrayToObject(b->root, "targets"));
    return 0;
fail:
    return -1;
}

static int add_ceiling_json(gather_bench *b) {
    cJSON *c = cJSON_GetObjectItem(b->root, "ceiling");
    BENCH_REQUIRE(c, "the JSON record has no ceiling object");
    BENCH_JSON(
        cJSON_AddStringToObject(c, "kind", b->gpu ? "pinned host-to-device DMA" : "host memcpy"));
    BENCH_JSON(cJSON_AddNumberToObject(c, "bytes", (double)b->ceiling_bytes));
    BENCH_JSON(cJSON_AddNumberToObject(c, "gbps", b->ceiling_gbps));
    if (b->gpu) {
        BENCH_JSON(cJSON_AddNumberToObject(c, "dma_best_gbps", b->dma_best));
        BENCH_JSON(cJSON_AddNumberToObject(c, "dma_median_gbps", b->dma_median));
    }
    BENCH_JSON(cJSON_AddNumberToObject(c, "host_memcpy_gbps", b->memcpy_best));
    return 0;
fail:
    return -1;
}

/* The command named in usage errors. */
static const char cmd[] = "bench gather";

/* An option of this driver alone: 0, an exit status, or -1 for a shared option. */
static int own_option(void *self, int c, const char *arg) {
    gather_bench *b = self;
    int64_t v;
    switch (c) {
    case 't':
        if (cli_parse_i64(arg, &v) || v < 4096)
            return cli_usage_error(cmd, "--table-bytes '%s' must be a size of at least 4Ki", arg);
        b->table_bytes = v, b->have_table = 1;
        break;
    case 'w':
        if (bench_parse_list("--rows-bytes", arg, b->widths, MAX_WIDTHS, &b->nwidths))
            return CLI_EXIT_USAGE;
        b->have_widths = 1;
        break;
    case 'n':
        if (bench_parse_list("--ids", arg, b->ids, MAX_IDS, &b->nids)) return CLI_EXIT_USAGE;
        for (int i = 0; i < b->nids; i++)
            if (b->ids[i] > INT32_MAX)
                return cli_usage_error(cmd, "--ids: %lld ids per call is more than %d",
                                       (long long)b->ids[i], INT32_MAX);
        b->have_ids = 1;
        break;
    case 'm':
        if (parse_modes(b, arg) != 0) return CLI_EXIT_USAGE;
        b->have_modes = 1;
        break;
    case 'i':
        if (cli_parse_i64(arg, &v) || v < 1 || v > 1000000)
            return cli_usage_error(cmd, "--iters '%s' is not a count in [1, 1000000]", arg);
        b->iters = (int)v, b->have_iters = 1;
        break;
    case 'b':
        if (cli_parse_i64(arg, &v) || v < 1)
            return cli_usage_error(cmd, "--budget '%s' is not a positive size", arg);
        b->budget = v, b->have_budget = 1;
        break;
    case 'x':
        if (cli_parse_i64(arg, &v) || v < 1)
            return cli_usage_error(cmd, "--max-call-bytes '%s' is not a positive size", arg);
        b->max_call_bytes = v;
        break;
    case 'B':
        if (cli_parse_i64(arg, &v) || v < 1 || v > 100000)
            return cli_usage_error(cmd, "--score-batches '%s' is not a count in [1, 100000]", arg);
        b->score_batches = (int)v;
        break;
    case 'C':
        b->cache_sweep = 0;
        break;
    case 'S':
        b->sm_sweep = 0;
        break;
    default:
        return -1;
    }
    return 0;
}

/* Parse the options into b; returns -1 to continue, else the exit code. */
static int parse_options(gather_bench *b, int argc, char **argv) {
    static const struct option long_opts[] = {{"table-bytes", required_argument, 0, 't'},
                                              {"rows-bytes", required_argument, 0, 'w'},
                                              {"ids", required_argument, 0, 'n'},
                                              {"modes", required_argument, 0, 'm'},
                                              {"iters", required_argument, 0, 'i'},
                                              {"budget", required_argument, 0, 'b'},
                                              {"max-call-bytes", required_argument, 0, 'x'},
                                              BENCH_LONG("threads", THREADS),
                                              BENCH_LONG("preset", PRESET),
                                              {"no-cache-sweep", no_argument, 0, 'C'},
                                              {"no-sm-sweep", no_argument, 0, 'S'},
                                              BENCH_FLAG("quick", QUICK),
                                              {"score-batches", required_argument, 0, 'B'},
                                              BENCH_LONG_END};
    static const int64_t default_widths[] = {256, 512, 1024, 1028, 2048, 2052, 4096, 16384};
    static const int64_t quick_widths[] = {256, 1028, 2048};
    int rc;
    bench_options_init(&b->opt);
    b->cache_sweep = 1;
    b->sm_sweep = 1;
    b->max_call_bytes = (int64_t)3 << 30;
    if ((rc = bench_parse_options(&b->opt, cmd, argc, argv, long_opts, help, own_option, b)) != -1)
        return rc;

    if (!b->have_table) b->table_bytes = b->opt.quick ? (int64_t)64 << 20 : (int64_t)4 << 30;
    b->table_bytes = (b->table_bytes + 4095) / 4096 * 4096;
    if (!b->have_widths) {
        const int64_t *src = b->opt.quick ? quick_widths : default_widths;
        b->nwidths = b->opt.quick ? 3 : 8;
        memcpy(b->widths, src, (size_t)b->nwidths * sizeof *src);
    }
    if (!b->have_ids) {
        b->nids = b->opt.quick ? 2 : 3;
        b->ids[0] = 8192, b->ids[1] = 65536, b->ids[2] = 1 << 20;
    }
    if (!b->have_modes) {
        for (int m = 0; m < BM_COUNT; m++) b->use[m] = modes[m].by_default;
    }
    if (!b->have_iters) b->iters = b->opt.quick ? 5 : 100;
    if (!b->have_budget) b->budget = b->opt.quick ? (int64_t)16 << 20 : (int64_t)1 << 30;
    if (!b->opt.preset) b->opt.preset = b->opt.quick ? "tiny" : "products";
    b->ceiling_bytes = b->opt.quick ? (int64_t)32 << 20 : (int64_t)1 << 30;
    b->batches = b->opt.quick ? 4 : 10;
    if (!b->score_batches) b->score_batches = b->opt.quick ? 4 : 100;
    b->batch_seeds = 1024;
    for (int i = 0; i < b->nwidths; i++)
        if (b->widths[i] > b->table_bytes)
            return cli_usage_error(cmd, "--rows-bytes %lld is wider than the %lld-byte table",
                                   (long long)b->widths[i], (long long)b->table_bytes);
    return -1;
}

static void release(gather_bench *b) {
#ifdef GD_WITH_CUDA
    if (b->d_ids && cudaFree(b->d_ids) != cudaSuccess) (void)cudaGetLastError();
    if (b->d_out && cudaFree(b->d_out) != cudaSuccess) (void)cudaGetLastError();
    if (b->have_events) {
        (void)cudaEventDestroy(b->ev0);
        (void)cudaEventDestroy(b->ev1);
    }
    if (b->have_stream) (void)cudaStreamDestroy(b->stream);
    (void)cudaGetLastError();
#endif
    gd_host_tensor_destroy(b->table);
    gd_context_destroy(b->context);
    free(b->h_ids);
    free(b->h_out);
    free(b->check_row);
    cJSON_Delete(b->root);
    free(b);
}

int bench_gather(int argc, char **argv) {
    int rc = CLI_EXIT_FAIL;
    gather_bench *b = calloc(1, sizeof *b);
    cli_progress prog;
    char sz[32];
    double t_start = bench_now(), t0;
    if (!b) {
        bench_error("out of memory");
        return CLI_EXIT_FAIL;
    }
    for (int wi = 0; wi < MAX_WIDTHS; wi++)
        for (int ni = 0; ni < MAX_IDS; ni++)
            for (int m = 0; m < BM_COUNT; m++) b->sweep[wi][ni][m] = NAN;
    {
        const int prc = parse_options(b, argc, argv);
        if (prc >= 0) {
            free(b);
            return prc;
        }
    }
    cli_progress_init(&prog); /* Ctrl-C stops between measurements */
    if (b->opt.json_path && bench_json_probe(b->opt.json_path) != 0) goto fail;

    /* GPU modes need a CUDA build and a visible GPU; otherwise the cpu mode runs alone. */
    {
        int gpu_modes = 0;
        for (int m = 0; m < BM_COUNT; m++) gpu_modes |= b->use[m] && m != BM_CPU;
        const int count = gd_device_count();
        if (gd_has_cuda() && count > 0) {
            BENCH_REQUIRE(b->opt.device < count, "GPU %d does not exist: %d GPU(s) visible (0..%d)",
                          b->opt.device, count, count - 1);
            b->gpu = 1;
            BENCH_GD(gd_context_default(b->opt.device, &b->context), "taking the GPU's context");
        } else {
            fprintf(stderr,
                    "bench gather: GPU modes need a CUDA build and a GPU, and %s: "
                    "running the cpu mode only, against host memcpy bandwidth\n",
                    gd_has_cuda() ? "no GPU is visible (check nvidia-smi and "
                                    "CUDA_VISIBLE_DEVICES)"
                                  : "this build has no CUDA");
            memset(b->use, 0, sizeof b->use);
            b->use[BM_CPU] = 1;
            (void)gpu_modes;
        }
    }
    if (add_header_json(b) != 0) goto fail;
#ifdef GD_WITH_CUDA
    if (b->gpu) {
        BENCH_CUDA(cudaSetDevice(b->opt.device));
        BENCH_CUDA(cudaStreamCreateWithFlags(&b->stream, cudaStreamNonBlocking));
        b->have_stream = 1;
        BENCH_CUDA(cudaEventCreate(&b->ev0));
        if (cudaEventCreate(&b->ev1) != cudaSuccess) {
            (void)cudaEventDestroy(b->ev0);
            BENCH_REQUIRE(0, "cudaEventCreate failed");
        }
        b->have_events = 1;
    }
#endif

    /* The table: one allocation, viewed with each row width in turn. */
    t0 = bench_now();
    BENCH_GD(gd_host_tensor_create(b->table_bytes / 4096, 4096, GD_DTYPE_UINT8, 0, &b->table),
             "allocating the host table");
    b->table_data = gd_host_tensor_data(b->table);
    bench_fill_pattern(b->table_data, (size_t)b->table_bytes, b->opt.threads);
    fprintf(stderr, "bench gather: %s host table filled in %.2f s (%d threads)\n",
            cli_bytes((double)b->table_bytes, sz, sizeof sz), bench_now() - t0, b->opt.threads);

    /* The ceiling, measured in this run. */
    if (measure_memcpy(b) != 0) goto fail;
#ifdef GD_WITH_CUDA
    if (b->gpu && measure_dma(b) != 0) goto fail;
#endif
    b->ceiling_gbps = b->gpu ? b->dma_best : b->memcpy_best;
    if (add_ceiling_json(b) != 0) goto fail;
    printf("bench gather: table %s, %d threads for CPU work\n",
           cli_bytes((double)b->table_bytes, sz, sizeof sz), b->opt.threads);
    if (b->gpu)
        printf("ceiling: pinned host->device DMA of %s: best %.2f GB/s, median %.2f GB/s "
               "(host memcpy %.2f GB/s)\n",
               cli_bytes((double)b->ceiling_bytes, sz, sizeof sz), b->dma_best, b->dma_median,
               b->memcpy_best);
    else
        printf("ceiling: host memcpy of %s with %d threads: best %.2f GB/s (GPU modes need a "
               "CUDA build and a GPU)\n",
               cli_bytes(
                   (double)(b->ceiling_bytes < b->table_bytes ? b->ceiling_bytes : b->table_bytes),
                   sz, sizeof sz),
               b->opt.threads, b->memcpy_best);
    fflush(stdout);

    for (int wi = 0; wi < b->nwidths; wi++) {
        if (sweep_width(b, wi) != 0) goto fail;
        if (cli_interrupted()) goto fail;
    }
    print_sweep(b);
    print_sm(b);
    fflush(stdout);
    if (b->cache_sweep && cache_sweep(b) != 0) goto fail;
    if (b->gpu) print_targets(b);
    if (bench_run_done(&b->opt, b->root, "gather", t_start) != 0) goto fail;
    rc = 0;
fail:
    rc = bench_exit_status(rc);
    release(b);
    return rc;
}
