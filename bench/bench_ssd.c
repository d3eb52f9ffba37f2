/*
 * `graphdirect bench ssd`: the SSD tier's fetch path on a GPU (issue 16, item 8, the part built
 * so far). A dataset with IGB-shaped rows is generated into a directory on disk once (its
 * features.npy is the table the tier reads); the sampler draws training minibatches; each is
 * gathered through the disk tier (src/feature/disk_tier.h: the GPU lists its misses, the I/O
 * engine reads them with O_DIRECT into pinned staging, the GPU places them in its dynamic cache
 * and gathers the rest). Measured in the same run: the raw random-read bandwidth of the file at
 * the row size with the same engine and queue depth (the ceiling); then, per eviction policy,
 * the fetch bandwidth of the uncached rows (their bytes over the engine's read time) and its
 * ratio to the ceiling, the bytes read per useful byte, the hit rate, and the bandwidth of each
 * of the first minibatches from a cold cache (GIDS's Figure 9), at window depths 0, 4 and 8.
 * Then timed training epochs (item 8): from disk without and with a host buffer, from pinned
 * host memory, and the mmap baseline from a cold and a warm page cache, each with its I/O floor
 * (the bytes the epoch read from the file at the raw random-read rate measured above).
 */
#include "bench.h"
#include "cli.h"
#include "io/ioeng.h"
#include "io/stripes.h"

#ifdef GD_WITH_CUDA
#include "feature/disk_tier.h"
#endif

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef MADV_PAGEOUT
#define MADV_PAGEOUT 21 /* Linux 5.4; older headers lack the name */
#endif

#define MAX_POLICIES 3
#define FIRST 20

static const char cmd[] = "bench ssd";
static const char *const policy_names[MAX_POLICIES] = {"clock", "sieve", "random"};

typedef struct {
    bench_options opt;
    const char *dir;
    int layers, fanouts[GD_SAMPLER_MAX_LAYERS];
    int64_t batches, depth;
    double cache_frac, host_frac;
    int num_policies;
    const char *policies[MAX_POLICIES];
    int64_t feature_dim; /* of the generated dataset (0: the preset's) */
    int64_t windows[4];  /* window depths of the replay */
    int num_windows;
    int64_t epoch_batches; /* minibatches of each timed epoch (0: no epochs) */
    double epoch_host;     /* the host buffer of the "disk" epoch, a fraction of the rows */
} ssd_bench;

static void help(void) {
    printf("usage: graphdirect bench ssd [options]\n\n"
           "The SSD tier's fetch path on a GPU: minibatches gathered from a features file on\n"
           "disk through the dynamic GPU cache, against the disk's raw random-read bandwidth\n"
           "at the row size (same engine, same queue depth) measured in the same run.\n\n"
           "options:\n"
           "  --preset NAME      generated dataset (default igb-small: 1M nodes, 4 KiB rows)\n"
           "  --dir DIR          where the dataset is (generated there when absent; default\n"
           "                     /tmp/graphdirect-ssd-PRESET[-DIM])\n"
           "  --feature-dim N    features per row of the generated dataset (default: the\n"
           "                     preset's; 128 gives igb-small 512-byte rows)\n"
           "  --batch B          seeds per minibatch (default 256)\n"
           "  --fanouts LIST     seeds first (default 10,5)\n"
           "  --batches N        minibatches per policy (default 40)\n"
           "  --cache F          GPU cache slots as a fraction of the rows (default 0.05)\n"
           "  --host F           rows in the pinned host buffer, a fraction (default 0)\n"
           "  --depth N          reads in flight (default 128)\n"
           "  --policies LIST    from clock,sieve,random (default all three)\n"
           "  --windows LIST     window depths of the replay, up to 4 (default 0,4,8)\n"
           "  --epoch-batches N  minibatches of each timed epoch: from disk, in pinned host\n"
           "                     memory, the mmap baseline cold and warm (default 30; 0: none)\n"
           "  --epoch-host F     host buffer of the second disk epoch, a fraction of the rows\n"
           "                     (default 0.4)\n"
           "  --quick            a smoke test: preset tiny, 8 minibatches\n"
           "  --threads N, --device D, --seed S, --json FILE, --commit C\n");
}

static int own_option(void *self, int c, const char *arg) {
    ssd_bench *b = self;
    int n;
    switch (c) {
    case 'D':
        b->dir = arg;
        return 0;
    case 'M':
        if (bench_parse_list("--feature-dim", arg, &b->feature_dim, 1, &n) || b->feature_dim < 1 ||
            b->feature_dim > (1 << 16))
            return cli_usage_error(cmd, "--feature-dim '%s' is not in 1..65536", arg);
        return 0;
    case 'f':
        return bench_parse_fanouts(arg, 0, 1 << 20, 1, &b->fanouts, &b->layers, NULL)
                   ? CLI_EXIT_USAGE
                   : 0;
    case 'n':
        if (bench_parse_list("--batches", arg, &b->batches, 1, &n) || b->batches < 1 ||
            b->batches > (1 << 20))
            return cli_usage_error(cmd, "--batches '%s' is not in 1..2^20", arg);
        return 0;
    case 'q':
        if (bench_parse_list("--depth", arg, &b->depth, 1, &n) || b->depth < 1 ||
            b->depth > GD__IOENG_MAX_DEPTH)
            return cli_usage_error(cmd, "--depth '%s' is not in 1..%d", arg, GD__IOENG_MAX_DEPTH);
        return 0;
    case 'c':
        if (cli_parse_double(arg, &b->cache_frac) || !(b->cache_frac >= 0 && b->cache_frac <= 1))
            return cli_usage_error(cmd, "--cache '%s' is not a fraction in [0, 1]", arg);
        return 0;
    case 'H':
        if (cli_parse_double(arg, &b->host_frac) || !(b->host_frac >= 0 && b->host_frac <= 1))
            return cli_usage_error(cmd, "--host '%s' is not a fraction in [0, 1]", arg);
        return 0;
    case 'W':
        return bench_parse_windows(cmd, arg, 64, b->windows, 4, &b->num_windows);
    case 'E':
        if (strcmp(arg, "0") == 0)
            b->epoch_batches = 0; /* no epochs (the list parser takes positive numbers) */
        else if (bench_parse_list("--epoch-batches", arg, &b->epoch_batches, 1, &n) ||
                 b->epoch_batches > (1 << 20))
            return cli_usage_error(cmd, "--epoch-batches '%s' is not in 0..2^20", arg);
        return 0;
    case 'F':
        if (cli_parse_double(arg, &b->epoch_host) || !(b->epoch_host >= 0 && b->epoch_host < 1))
            return cli_usage_error(cmd, "--epoch-host '%s' is not a fraction in [0, 1)", arg);
        return 0;
    case 'p':
        return bench_parse_policies(cmd, arg, b->policies, &b->num_policies);
    default:
        return -1;
    }
}

static int parse_options(ssd_bench *b, int argc, char **argv) {
    static const struct option long_opts[] = {BENCH_LONG("preset", PRESET),
                                              BENCH_LONG("nodes", NODES),
                                              BENCH_LONG("batch", BATCH),
                                              {"dir", required_argument, 0, 'D'},
                                              {"feature-dim", required_argument, 0, 'M'},
                                              {"fanouts", required_argument, 0, 'f'},
                                              {"batches", required_argument, 0, 'n'},
                                              {"cache", required_argument, 0, 'c'},
                                              {"host", required_argument, 0, 'H'},
                                              {"depth", required_argument, 0, 'q'},
                                              {"policies", required_argument, 0, 'p'},
                                              {"windows", required_argument, 0, 'W'},
                                              {"epoch-batches", required_argument, 0, 'E'},
                                              {"epoch-host", required_argument, 0, 'F'},
                                              BENCH_FLAG("quick", QUICK),
                                              BENCH_LONG("threads", THREADS),
                                              BENCH_LONG_END};
    bench_options_init(&b->opt);
    b->opt.preset = "igb-small";
    b->opt.batch = 256;
    b->batches = 40;
    b->depth = 128;
    b->cache_frac = 0.05;
    b->epoch_batches = 30;
    b->num_windows = 3;
    b->windows[0] = 0, b->windows[1] = 4, b->windows[2] = 8;
    b->epoch_host = 0.4;
    b->num_policies = MAX_POLICIES;
    memcpy(b->policies, policy_names, sizeof b->policies);
    if (bench_parse_fanouts("10,5", 0, 1 << 20, 1, &b->fanouts, &b->layers, NULL))
        return CLI_EXIT_FAIL;
    int rc = bench_parse_options(&b->opt, cmd, argc, argv, long_opts, help, own_option, b);
    if (rc < 0 && b->opt.quick) {
        b->opt.preset = "tiny";
        b->batches = 8;
        b->epoch_batches = 4;
    }
    return rc;
}

/* The dataset in dir: opened when there, else generated there first. */
static int open_dataset(const ssd_bench *b, const char *dir, gd_dataset_t **ds) {
    int rc = -1;
    struct stat sb;
    char meta[4200];
    snprintf(meta, sizeof meta, "%s/meta.json", dir);
    if (stat(meta, &sb) == 0) {
        gd_dataset_open_options oo = GD_DATASET_OPEN_OPTIONS_INIT;
        oo.validate_graph = 0; /* sizes only: the benchmark reads the features itself */
        BENCH_GD(gd_dataset_open(dir, &oo, ds), "opening the benchmark's dataset");
        fprintf(stderr, "ssd: dataset %s (already there)\n", dir);
        return 0;
    }
    gd_generate_options go = GD_GENERATE_OPTIONS_INIT;
    cli_progress prog;
    go.preset = b->opt.preset;
    go.seed = b->opt.seed;
    go.num_nodes = b->opt.nodes;
    go.feature_dim = b->feature_dim;
    go.out_dir = dir;
    go.overwrite = 1;
    cli_progress_init(&prog);
    go.progress = cli_progress_cb;
    go.progress_user = &prog;
    fprintf(stderr, "ssd: generating preset '%s' into %s\n", b->opt.preset, dir);
    const double t0 = bench_now();
    gd_status st = gd_generate(&go, ds);
    cli_progress_end(&prog);
    BENCH_GD(st, "generating the benchmark's dataset");
    fprintf(stderr, "ssd: generated in %.1f s\n", bench_now() - t0);
    rc = 0;
fail:
    return rc;
}

/* The files the tier reads: features.npy, or a striped table's files (graphdirect stripe). */
typedef struct {
    int nfiles;
    gd__ioeng_file files[GD__STRIPES_MAX_FILES];
    gd__stripes geo;
    int64_t unit_rows; /* striped: the rows of a unit, else 0 */
    char npy[4200];    /* the one file's path */
} ssd_table;

static int sample(const ssd_bench *b, gd_dataset_t *ds, bench_batches *mbs) {
    bench_graph g;
    if (bench_graph_of(ds, &g)) return -1;
    return bench_sample_batches(&g, (int)b->batches, b->opt.batch, b->fanouts, b->layers,
                                b->opt.seed, b->opt.threads, mbs);
}

/*
 * The ceiling: random reads of whole rows of the file, as many as the minibatches' rows (at
 * least 20000), at the queue depth the tier uses, with the same engine: bytes per second.
 */
static int ceiling(const ssd_bench *b, const ssd_table *tb, int64_t rows, int64_t rb, int64_t count,
                   double *gbs) {
    int rc = -1;
    gd__ioeng *e = NULL;
    gd__ioeng_request *reqs = NULL;
    unsigned char *buf = NULL, *dst;
    gd__ioeng_options o = GD__IOENG_OPTIONS_INIT;
    o.queue_depth = (int)b->depth;
    count = count < 20000 ? 20000 : count;
    if (count > rows) count = rows;
    BENCH_GD(gd__ioeng_open(tb->files, tb->nfiles, &o, &e), "opening the features file");
    reqs = calloc((size_t)count, sizeof *reqs);
    buf = malloc((size_t)(count * rb) + 4096);
    BENCH_REQUIRE(reqs && buf, "out of memory for %lld reads", (long long)count);
    dst = (unsigned char *)(((uintptr_t)buf + 4095) & ~(uintptr_t)4095);
    int64_t *ids = malloc((size_t)count * sizeof *ids);
    BENCH_REQUIRE(ids, "out of memory for %lld ids", (long long)count);
    bench_random_ids(ids, count, count, rows, b->opt.seed + 99, b->opt.threads);
    for (int64_t i = 0; i < count; i++)
        reqs[i] = gd__stripes_request(&tb->geo, ids[i], rb, dst + i * rb);
    free(ids);
    const double t0 = bench_now();
    BENCH_GD(gd__ioeng_read(e, reqs, count), "reading the features file");
    *gbs = (double)(count * rb) / (bench_now() - t0) / 1e9;
    printf("ceiling: %lld random %lld-byte rows at queue depth %lld (%s, %s): %.3f GB/s, %.0f "
           "reads/s\n",
           (long long)count, (long long)rb, (long long)b->depth,
           gd__ioeng_backend_name(gd__ioeng_backend_of(e)),
           gd__ioeng_file_direct(e, 0) ? "O_DIRECT" : "page cache", *gbs, *gbs * 1e9 / (double)rb);
    rc = 0;
fail:
    free(buf);
    free(reqs);
    gd__ioeng_close(e);
    return rc;
}

#ifdef GD_WITH_CUDA
/* The host buffer's rows: the highest in-degrees (the sampler's hottest rows), count of them. */
static int host_rows(gd_dataset_t *ds, int64_t count, int64_t **out) {
    int rc = -1;
    gd_array_view ip;
    *out = NULL;
    if (count == 0) return 0;
    BENCH_GD(gd_dataset_array(ds, GD_ARRAY_INDPTR, &ip), "reading indptr");
    const int64_t n = gd_dataset_num_nodes(ds);
    int64_t *keys = malloc((size_t)n * sizeof *keys);
    BENCH_REQUIRE(keys, "out of memory for %lld degrees", (long long)n);
    /* Degree in the high bits, the row in the low 32 (rows < 2^32), sorted descending. */
    for (int64_t v = 0; v < n; v++) {
        const int64_t d = ip.dtype == GD_DTYPE_INT64
                              ? ((const int64_t *)ip.data)[v + 1] - ((const int64_t *)ip.data)[v]
                              : ((const int32_t *)ip.data)[v + 1] - ((const int32_t *)ip.data)[v];
        keys[v] = (d << 32) | v;
    }
    gd__sort_i64(keys, n);
    for (int64_t i = 0; i < count; i++) keys[i] = keys[n - 1 - i] & 0xffffffffLL;
    *out = keys;
    rc = 0;
fail:
    return rc;
}

/* One policy: every minibatch gathered through a fresh tier; print and record. */
/*
 * One policy at one window depth: every minibatch gathered through a fresh tier, minibatch
 * i + window announced before minibatch i withdraws and gathers (as the pipeline does with
 * GD_DISK_WINDOW); print and record. *hit gets the hit rate.
 */
static int run_policy(const ssd_bench *b, const bench_batches *mbs, const gd__disk_tier_config *c,
                      int window, double ceil_gbs, cJSON *runs, cJSON *targets, double *hit) {
    int rc = -1;
    gd__disk_tier *t = NULL;
    cudaStream_t s = NULL;
    int64_t *d_ids = NULL;
    const int64_t max = mbs->max_len, slots = window + 1;
    void *d_out = NULL;
    double per[FIRST];
    gd__disk_tier_stats st, prev;
    gd__disk_tier_config cfg = *c;
    cfg.max_rows = max;
    cfg.window = window > 0;
    BENCH_GD(gd__disk_tier_open(&cfg, &t), "opening the disk tier");
    BENCH_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    /* A ring of window + 1 minibatches' ids in GPU memory: the one gathered and those ahead. */
    BENCH_CUDA(cudaMalloc((void **)&d_ids, (size_t)(slots * max) * sizeof(int64_t)));
    BENCH_CUDA(cudaMalloc(&d_out, (size_t)(max * cfg.row_bytes)));
    memset(&prev, 0, sizeof prev);
#define RING(i) (d_ids + ((i) % slots) * max)
#define LEN(i) (mbs->offsets[(i) + 1] - mbs->offsets[i])
    for (int i = 0; i < window && i < mbs->count; i++) {
        BENCH_CUDA(cudaMemcpyAsync(RING(i), mbs->ids + mbs->offsets[i],
                                   (size_t)LEN(i) * sizeof(int64_t), cudaMemcpyHostToDevice, s));
        BENCH_GD(gd__disk_tier_announce(t, RING(i), LEN(i), s), "announcing a minibatch");
    }
    const double t0 = bench_now(), c0 = bench_cpu_seconds();
    for (int i = 0; i < mbs->count; i++) {
        const int64_t n = LEN(i);
        const double t1 = bench_now();
        if (window > 0 && i + window < mbs->count) {
            const int a = i + window;
            BENCH_CUDA(cudaMemcpyAsync(RING(a), mbs->ids + mbs->offsets[a],
                                       (size_t)LEN(a) * sizeof(int64_t), cudaMemcpyHostToDevice,
                                       s));
            BENCH_GD(gd__disk_tier_announce(t, RING(a), LEN(a), s), "announcing a minibatch");
        }
        if (window == 0)
            BENCH_CUDA(cudaMemcpyAsync(RING(i), mbs->ids + mbs->offsets[i],
                                       (size_t)n * sizeof(int64_t), cudaMemcpyHostToDevice, s));
        else
            BENCH_GD(gd__disk_tier_withdraw(t, RING(i), n, s), "withdrawing a minibatch");
        BENCH_GD(gd__disk_tier_gather(t, RING(i), n, d_out, s), "gathering from disk");
        BENCH_CUDA(cudaStreamSynchronize(s));
        if (i < FIRST) {
            BENCH_GD(gd__disk_tier_get_stats(t, s, &st), "reading the tier's counts");
            per[i] = (double)(st.bytes_useful - prev.bytes_useful) / (bench_now() - t1) / 1e9;
            prev = st;
        }
    }
    const double secs = bench_now() - t0, cores = (bench_cpu_seconds() - c0) / secs;
    BENCH_GD(gd__disk_tier_check_errors(t, s), "the disk tier's kernels");
    BENCH_GD(gd__disk_tier_get_stats(t, s, &st), "reading the tier's counts");
    const double fetch = st.read_s > 0 ? (double)st.bytes_useful / st.read_s / 1e9 : 0;
    const double lookups = st.cache.lookups ? (double)st.cache.lookups : 1;
    /* The tier counts its gathers' reads only (the host buffer's fill is not among them). */
    const double amp = st.bytes_useful > 0 ? (double)st.bytes_read / (double)st.bytes_useful : 0;
#undef RING
#undef LEN
    const int first = mbs->count < FIRST ? mbs->count : FIRST;
    *hit = (double)st.cache.hits / lookups;
    printf("%-7s %6d %7.4f %8.4f %10.3f %8.3f %7.3f %8.2f %6.2f   ", gd__evict_names[cfg.policy],
           window, (double)st.cache.hits / lookups, (double)st.cache.bypasses / lookups, fetch,
           ceil_gbs > 0 ? fetch / ceil_gbs : 0, amp, secs, cores);
    for (int i = 0; i < first; i += 4) printf("%s%.3f", i ? " " : "", per[i]);
    printf("\n");
    cJSON *o = cJSON_CreateObject();
    BENCH_JSON(o);
    cJSON_AddItemToArray(runs, o);
    BENCH_JSON(cJSON_AddStringToObject(o, "policy", gd__evict_names[cfg.policy]));
    BENCH_JSON(cJSON_AddNumberToObject(o, "window", window));
    BENCH_JSON(cJSON_AddNumberToObject(o, "hit_rate", (double)st.cache.hits / lookups));
    BENCH_JSON(cJSON_AddNumberToObject(o, "bypass_rate", (double)st.cache.bypasses / lookups));
    BENCH_JSON(cJSON_AddNumberToObject(o, "rows", (double)st.rows));
    BENCH_JSON(cJSON_AddNumberToObject(o, "host_buffer_rows", (double)st.host_rows));
    BENCH_JSON(cJSON_AddNumberToObject(o, "fetch_gbs", fetch));
    BENCH_JSON(
        cJSON_AddNumberToObject(o, "fetch_over_ceiling", ceil_gbs > 0 ? fetch / ceil_gbs : 0));
    BENCH_JSON(cJSON_AddNumberToObject(o, "bytes_read_per_useful_byte", amp));
    BENCH_JSON(cJSON_AddNumberToObject(o, "read_s", st.read_s));
    BENCH_JSON(cJSON_AddNumberToObject(o, "total_s", secs));
    BENCH_JSON(cJSON_AddNumberToObject(o, "host_cpu_cores", cores));
    cJSON *cold = cJSON_AddArrayToObject(o, "first_minibatch_fetch_gbs");
    BENCH_JSON(cold);
    for (int i = 0; i < first; i++) {
        cJSON *v = cJSON_CreateNumber(per[i]);
        BENCH_JSON(v);
        cJSON_AddItemToArray(cold, v);
    }
    if (cfg.policy == GD__EVICT_CLOCK && window == 0) {
        char what[128];
        snprintf(what, sizeof what, "uncached rows fetched / raw random reads of %lld B (>= %s)",
                 (long long)cfg.row_bytes, cfg.row_bytes >= 4096 ? "0.95" : "0.90");
        bench_target(targets, what, ceil_gbs > 0 ? fetch / ceil_gbs : 0,
                     cfg.row_bytes >= 4096 ? 0.95 : 0.90, "x");
        bench_target(targets, "useful bytes / bytes read (>= 1 / 1.05)", amp > 0 ? 1 / amp : 0,
                     1 / 1.05, "x");
        /* The process's CPU time over the replay: the engine's threads and everything else. */
        bench_target(targets, "2 / host CPU cores while fetching (>= 1: at most 2 cores)",
                     cores > 0 ? 2 / cores : 0, 1, "x");
    }
    rc = 0;
fail:
    if (d_ids) cudaFree(d_ids);
    if (d_out) cudaFree(d_out);
    if (s) cudaStreamDestroy(s);
    gd__disk_tier_close(t);
    return rc;
}
#endif

#ifdef GD_WITH_CUDA
/* The page-aligned span of the dataset's mapped feature table. */
static void table_span(const gd_dataset_t *ds, unsigned char **addr, size_t *len) {
    gd_array_view v;
    *addr = NULL;
    *len = 0;
    if (gd_dataset_array(ds, GD_ARRAY_FEATURES, &v) != GD_OK || !v.data) return;
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    const uintptr_t a = (uintptr_t)v.data, lo = a / page * page;
    size_t bytes = 1;
    for (int i = 0; i < v.ndim; i++) bytes *= (size_t)v.shape[i];
    bytes *= gd_dtype_size(v.dtype);
    *addr = (unsigned char *)lo;
    *len = a + bytes - lo;
}

/* The fraction of the dataset's feature table in the page cache (mincore on its mapping). */
static double resident(const gd_dataset_t *ds) {
    unsigned char *addr, *vec;
    size_t len, in = 0;
    table_span(ds, &addr, &len);
    const size_t page = (size_t)sysconf(_SC_PAGESIZE), pages = (len + page - 1) / page;
    if (!pages || !(vec = malloc(pages))) return NAN;
    if (mincore(addr, len, vec) != 0) {
        free(vec);
        return NAN;
    }
    for (size_t i = 0; i < pages; i++) in += vec[i] & 1;
    free(vec);
    return (double)in / (double)pages;
}

/*
 * The page cache of path: dropped (cold: the mmap baseline then reads the disk, as after
 * `echo 1 > /proc/sys/vm/drop_caches`, for this file alone and without root), or filled by
 * reading the whole file (warm). The dataset maps the table, and the kernel keeps a mapped
 * page through POSIX_FADV_DONTNEED: its pages are paged out of the mapping first
 * (MADV_PAGEOUT, Linux 5.4). The fraction still resident is returned in *left.
 */
static int page_cache(const gd_dataset_t *ds, const ssd_table *tb, int warm, double *left) {
    int rc = -1, fd = -1;
    char *buf = NULL;
    if (!warm) {
        unsigned char *addr;
        size_t len;
        table_span(ds, &addr, &len);
        if (len && madvise(addr, len, MADV_PAGEOUT) != 0)
            printf("  (madvise(MADV_PAGEOUT) failed: %s; the mapped pages may stay cached)\n",
                   strerror(errno));
    }
    for (int f = 0; f < tb->nfiles; f++) { /* every file of a striped table */
        const char *path = tb->files[f].path;
        fd = open(path, O_RDONLY);
        BENCH_REQUIRE(fd >= 0, "cannot open %s", path);
        if (warm) {
            if (!buf) buf = malloc(1 << 22);
            BENCH_REQUIRE(buf, "out of memory reading %s", path);
            while (read(fd, buf, 1 << 22) > 0) {
            }
        } else {
            (void)fdatasync(fd); /* pages written by the generator are clean before they drop */
            BENCH_REQUIRE(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) == 0,
                          "posix_fadvise(DONTNEED) on %s failed", path);
        }
        close(fd);
        fd = -1;
    }
    *left = resident(ds);
    rc = 0;
fail:
    free(buf);
    if (fd >= 0) close(fd);
    return rc;
}

typedef struct {
    const char *label, *mode;
    int64_t host_budget; /* 0: none (the table in memory) */
    int cache;           /* -1: no page-cache step; 0: cold; 1: warm */
} epoch_run;

/*
 * One timed epoch of epoch_batches minibatches after a warm-up of 3; seconds per minibatch in
 * *per_mb, and in *floor_mb the time its reads from the file take at the raw random-read rate
 * measured in the same run (ceil_gbs; 0 when the run reads nothing from the file).
 */
static int run_epoch(const ssd_bench *b, const gd_dataset_t *ds, const ssd_table *tb,
                     int64_t cache_bytes, double ceil_gbs, const epoch_run *r, cJSON *runs,
                     double *per_mb, double *floor_mb) {
    int rc = -1;
    gd_trainer_t *t = NULL;
    gd_train_options o = GD_TRAIN_OPTIONS_INIT;
    gd_epoch_stats st;
    o.mode = r->mode;
    o.num_layers = b->layers;
    memcpy(o.fanouts, b->fanouts, sizeof o.fanouts);
    o.batch_size = b->opt.batch;
    o.seed = b->opt.seed;
    o.threads = b->opt.threads;
    o.device = b->opt.device;
    o.gpu_cache_bytes = strcmp(r->mode, "zero-copy") == 0 ? cache_bytes : 0;
    o.host_mem_budget = r->host_budget;
    BENCH_GD(gd_trainer_create(ds, &o, &t), r->label);
    gd_trainer_info info = GD_TRAINER_INFO_INIT;
    BENCH_GD(gd_trainer_get_info(t, &info), r->label);
    BENCH_GD(bench_one_epoch(t, 0, 3, &st), "the warm-up minibatches");
    double left = NAN;
    if (r->cache >= 0 && page_cache(ds, tb, r->cache, &left)) goto fail;
    BENCH_GD(bench_one_epoch(t, 1, b->epoch_batches, &st), "the timed epoch");
    const double nb = (double)(st.batches ? st.batches : 1);
    *per_mb = st.seconds / nb;
    *floor_mb = ceil_gbs > 0 ? (double)st.disk_bytes_read / (ceil_gbs * 1e9) / nb : 0;
    char fl[32] = "-", res[48] = "";
    if (st.disk_bytes_read > 0) snprintf(fl, sizeof fl, "%.4f", *floor_mb);
    if (!isnan(left)) snprintf(res, sizeof res, "page cache %.0f%% of the table; ", left * 100);
    printf("%-22s %9.4f %9s %8.0f %7.3f %7.3f %7.3f   %s%s\n", r->label, *per_mb, fl,
           (double)st.disk_rows_read / nb, st.sample_s, st.gather_s, st.train_s, res, info.plan);
    cJSON *j = cJSON_CreateObject();
    BENCH_JSON(j);
    cJSON_AddItemToArray(runs, j);
    BENCH_JSON(cJSON_AddStringToObject(j, "run", r->label));
    BENCH_JSON(cJSON_AddStringToObject(j, "mode", r->mode));
    BENCH_JSON(cJSON_AddNumberToObject(j, "host_budget", (double)r->host_budget));
    BENCH_JSON(cJSON_AddNumberToObject(j, "minibatches", (double)st.batches));
    BENCH_JSON(cJSON_AddNumberToObject(j, "seconds_per_minibatch", *per_mb));
    BENCH_JSON(cJSON_AddNumberToObject(j, "sample_s", st.sample_s));
    BENCH_JSON(cJSON_AddNumberToObject(j, "gather_s", st.gather_s));
    BENCH_JSON(cJSON_AddNumberToObject(j, "train_s", st.train_s));
    BENCH_JSON(cJSON_AddNumberToObject(j, "cpu_core_s", st.cpu_core_s));
    BENCH_JSON(cJSON_AddNumberToObject(j, "disk_rows_read", (double)st.disk_rows_read));
    BENCH_JSON(cJSON_AddNumberToObject(j, "disk_bytes_read", (double)st.disk_bytes_read));
    BENCH_JSON(cJSON_AddNumberToObject(j, "io_floor_seconds_per_minibatch", *floor_mb));
    if (!isnan(left)) BENCH_JSON(cJSON_AddNumberToObject(j, "page_cache_resident", left));
    BENCH_JSON(cJSON_AddStringToObject(j, "plan", info.plan));
    rc = 0;
fail:
    gd_trainer_destroy(t);
    return rc;
}

/*
 * The epochs of item 8: from disk (no host buffer, and a host buffer of --epoch-host of the
 * rows), in pinned host memory (zero-copy, the table in memory), and the mmap baseline
 * (cpu-centric: CPU threads gather from the mapped file) from a cold and a warm page cache;
 * the GPU modes with the same GPU cache. Times per minibatch over the same minibatches.
 */
static int run_epochs(const ssd_bench *b, const gd_dataset_t *ds, const ssd_table *tb, int64_t rows,
                      int64_t rb, double ceil_gbs, cJSON *root, cJSON *targets) {
    int rc = -1;
    const int64_t table = rows * rb, cache = (int64_t)(b->cache_frac * (double)table);
    /* The pinned staging of one minibatch (its most input rows) is part of the host budget. */
    int64_t most = b->opt.batch, level = b->opt.batch;
    for (int l = 0; l < b->layers; l++) most += level *= b->fanouts[l];
    const int64_t staging = gd__min64(most, rows) * rb + 4096 + (1 << 20);
    char label[64];
    snprintf(label, sizeof label, "disk, host buffer %.0f%%", b->epoch_host * 100);
    const epoch_run r[5] = {
        {"in pinned host memory", "zero-copy", 0, -1},
        {"disk, no host buffer", "zero-copy", staging, -1},
        {label, "zero-copy", staging + (int64_t)(b->epoch_host * (double)table), -1},
        {"mmap baseline, cold", "cpu-centric", 0, 0},
        {"mmap baseline, warm", "cpu-centric", 0, 1},
    };
    double s[5] = {0}, floor[5] = {0};
    cJSON *runs = cJSON_AddArrayToObject(root, "epochs");
    BENCH_JSON(runs);
    printf("\nepochs: %lld minibatches each after 3 of warm-up; GPU cache %.3g of the rows\n",
           (long long)b->epoch_batches, b->cache_frac);
    printf("(I/O floor: the rows the run read from the file, at the raw random-read rate above)\n");
    printf("%-22s %9s %9s %8s %7s %7s %7s   %s\n", "run", "s/minibatch", "I/O floor", "disk rows",
           "sample", "gather", "train", "plan");
    for (int i = 0; i < 5; i++)
        if (run_epoch(b, ds, tb, cache, ceil_gbs, &r[i], runs, &s[i], &floor[i])) goto fail;
    bench_target(targets, "mmap baseline epoch (cold) / epoch from disk (>= 10)",
                 s[1] > 0 ? s[3] / s[1] : 0, 10, "x");
    bench_target(targets, "pinned-memory epoch / disk epoch with the host buffer (>= 1 / 1.15)",
                 s[2] > 0 ? s[0] / s[2] : 0, 1 / 1.15, "x");
    /* The ceiling of the two above on this disk: an epoch from disk takes at least its reads. */
    for (int i = 1; i <= 2; i++) {
        char what[112];
        snprintf(what, sizeof what, "%s: I/O floor / epoch (>= 0.85: the reads hide the rest)",
                 r[i].label);
        bench_target(targets, what, s[i] > 0 ? floor[i] / s[i] : 0, 0.85, "x");
    }
    rc = 0;
fail:
    return rc;
}
#endif

int bench_ssd(int argc, char **argv) {
    ssd_bench b;
    memset(&b, 0, sizeof b);
    int rc = parse_options(&b, argc, argv);
    if (rc >= 0) return rc;
    rc = CLI_EXIT_FAIL;
    const double t_start = bench_now();
    gd_dataset_t *ds = NULL;
    bench_batches mbs = {0};
    cJSON *root = NULL, *runs = NULL, *targets = NULL;
    char dir[4096], path[4200];
    gd_npy_info info;
    ssd_table tb;
    double ceil_gbs = 0;
    int64_t *hot = NULL;
    if (b.opt.json_path && bench_json_probe(b.opt.json_path)) return CLI_EXIT_FAIL;
    int have_gpu = 0;
#ifdef GD_WITH_CUDA
    {
        int gpus = 0;
        have_gpu = cudaGetDeviceCount(&gpus) == cudaSuccess && gpus > 0;
        (void)cudaGetLastError();
    }
#endif
    if (bench_json_header(&root, "ssd", &b.opt, have_gpu)) goto fail;
    if (b.dir)
        snprintf(dir, sizeof dir, "%s", b.dir);
    else
        snprintf(dir, sizeof dir, "/tmp/graphdirect-ssd-%s%s%.0lld", b.opt.preset,
                 b.feature_dim ? "-" : "", (long long)b.feature_dim);
    if (open_dataset(&b, dir, &ds)) goto fail;
    {
        /* The table's files: the stripe files of a striped dataset, else features.npy. */
        const gd__stripe_table *st = ds->arrays[GD_ARRAY_FEATURES].stripes;
        memset(&tb, 0, sizeof tb);
        if (st) {
            tb.nfiles = st->nfiles;
            memcpy(tb.files, st->files, sizeof tb.files);
            tb.unit_rows = st->unit_rows;
            snprintf(path, sizeof path, "%s/features.stripes", dir);
            const gd__array *fa = &ds->arrays[GD_ARRAY_FEATURES];
            info.ndim = fa->ndim;
            info.dtype = fa->dtype;
            info.shape[0] = fa->shape[0];
            info.shape[1] = fa->shape[1];
        } else {
            snprintf(path, sizeof path, "%s/features.npy", dir);
            BENCH_GD(gd_npy_read_info(path, &info), "reading the features' header");
            snprintf(tb.npy, sizeof tb.npy, "%s", path);
            tb.nfiles = 1;
            tb.files[0] = (gd__ioeng_file){tb.npy, info.data_offset};
        }
        tb.geo = (gd__stripes){tb.nfiles, tb.unit_rows};
    }
    BENCH_REQUIRE(info.ndim == 2, "%s is not a 2-D table", path);
    const int64_t rows = info.shape[0], rb = info.shape[1] * (int64_t)gd_dtype_size(info.dtype);
    if (sample(&b, ds, &mbs)) goto fail;
    const int64_t total = mbs.offsets[mbs.count];
    printf("%lld rows of %lld bytes (%.2f GiB, %s), %d minibatches of %.0f rows on average\n",
           (long long)rows, (long long)rb, (double)(rows * rb) / 1073741824.0, path, mbs.count,
           (double)total / mbs.count);
    if (tb.nfiles > 1)
        printf("striped over %d files in units of %lld rows\n", tb.nfiles, (long long)tb.unit_rows);
    if (ceiling(&b, &tb, rows, rb, total, &ceil_gbs)) goto fail;
    BENCH_JSON(cJSON_AddStringToObject(root, "preset", b.opt.preset));
    BENCH_JSON(cJSON_AddNumberToObject(root, "rows", (double)rows));
    BENCH_JSON(cJSON_AddNumberToObject(root, "row_bytes", (double)rb));
    BENCH_JSON(cJSON_AddNumberToObject(root, "minibatches", mbs.count));
    BENCH_JSON(cJSON_AddNumberToObject(root, "rows_per_minibatch", (double)total / mbs.count));
    BENCH_JSON(cJSON_AddNumberToObject(root, "queue_depth", (double)b.depth));
    BENCH_JSON(cJSON_AddNumberToObject(root, "files", tb.nfiles));
    BENCH_JSON(cJSON_AddNumberToObject(root, "ceiling_gbs", ceil_gbs));
    BENCH_JSON(cJSON_AddNumberToObject(root, "cache_fraction", b.cache_frac));
    BENCH_JSON(cJSON_AddNumberToObject(root, "host_fraction", b.host_frac));
    runs = cJSON_AddArrayToObject(root, "results");
    targets = cJSON_AddArrayToObject(root, "targets");
    BENCH_JSON(runs && targets);
#ifdef GD_WITH_CUDA
    {
        if (!have_gpu) {
            printf("no GPU: the disk tier's gathers are skipped (the ceiling above is measured)\n");
        } else {
            const int64_t H = (int64_t)(b.host_frac * (double)rows);
            if (host_rows(ds, H, &hot)) goto fail;
            gd__disk_tier_config c;
            memset(&c, 0, sizeof c);
            c.path = tb.files[0].path;
            c.data_offset = tb.files[0].data_offset;
            if (tb.nfiles > 1) {
                c.stripes = tb.files;
                c.num_stripes = tb.nfiles;
                c.stripe_rows = tb.unit_rows;
            }
            c.rows = rows;
            c.row_bytes = rb;
            c.device = b.opt.device;
            c.host_rows = hot;
            c.host_count = H;
            c.gpu_slots = (int64_t)(b.cache_frac * (double)rows);
            c.seed = b.opt.seed;
            c.io = (gd__ioeng_options)GD__IOENG_OPTIONS_INIT;
            c.io.queue_depth = (int)b.depth;
            printf("GPU cache of %lld rows, host buffer of %lld rows\n\n", (long long)c.gpu_slots,
                   (long long)H);
            printf("%-7s %6s %7s %8s %10s %8s %7s %8s %6s   %s\n", "policy", "window", "hit",
                   "bypass", "fetch GB/s", "/ceiling", "read/use", "secs", "cores",
                   "cold fetch GB/s, minibatches 1, 5, 9, ...");
            for (int p = 0; p < b.num_policies; p++) {
                c.policy = (gd__evict_policy)gd__name_index(gd__evict_names, GD__EVICT_COUNT,
                                                            b.policies[p]);
                double hit0 = 0;
                for (int w = 0; w < b.num_windows; w++) {
                    double hit;
                    if (run_policy(&b, &mbs, &c, (int)b.windows[w], ceil_gbs, runs, targets, &hit))
                        goto fail;
                    if (b.windows[w] == 0) hit0 = hit;
                    if (b.windows[w] == 8 && hit0 > 0) {
                        char what[96];
                        snprintf(what, sizeof what,
                                 "%s: GPU cache hit rate at window 8 / no window (>= 1.5)",
                                 b.policies[p]);
                        bench_target(targets, what, hit / hit0, 1.5, "x");
                    }
                }
            }
            if (b.epoch_batches > 0 && run_epochs(&b, ds, &tb, rows, rb, ceil_gbs, root, targets))
                goto fail;
        }
    }
#else
    printf("built without CUDA: the disk tier's gathers are skipped (the ceiling above is "
           "measured)\n");
#endif
    if (bench_run_done(&b.opt, root, "ssd", t_start)) goto fail;
    rc = 0;
fail:
    free(hot);
    bench_batches_free(&mbs);
    cJSON_Delete(root);
    gd_dataset_close(ds);
    return bench_exit_status(rc);
}
