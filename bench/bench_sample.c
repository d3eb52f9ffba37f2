/*
 * `graphdirect bench sample`: sampled edges per second (SEPS) of the neighbour sampler, with
 * the graph in pinned host memory read over UVA set against its ceiling measured in the same
 * run, the same sampler with the graph in GPU memory, and against the CPU-centric baseline,
 * the CPU sampler on every core (docs/bench.md, docs/sampling.md).
 *
 * For each preset (a synthetic graph from the generator, made in memory) and fanout list, with
 * seed batches of the training nodes shuffled by gd_seed_batches:
 *   cpu           one CPU sampler of one thread per core, each sampling its own minibatches
 *                 (the dataloader-workers layout, the fastest on the CPU);
 *   cpu-parallel  one CPU sampler using every core within each minibatch;
 *   uva           the CUDA sampler, indptr and indices in pinned host memory;
 *   uva-indices   the CUDA sampler, indptr in GPU memory, indices pinned;
 *   uva-cache10   uva-indices with the hot neighbour-list GPU cache (gpu_cache_bytes) holding
 *   uva-cache20   10 % or 20 % of the indices bytes: the lists of the highest out-degrees;
 *   gpu           the CUDA sampler, both arrays in GPU memory (the ceiling);
 *   uva-link      the link ceiling of uva and uva-indices: the reads those samplers make for
 *   uva-indices-link  the first minibatches (indptr and lists, or lists only), replayed with
 *                 nothing else in one kernel (instrument/read_plan.h): what the link needs for them,
 *                 which bounds what any sampler reading this way can reach over UVA;
 * and the UVA and gpu modes with both read schedules forced, whatever the sampler picks for the
 * graph (docs/sampling.md, "Reading in address order"): `-unsorted` reads every hop in frontier
 * order, `-sorted` every hop (the seeds' included) in address order.
 * The CUDA samplers run as `--streams` samplers on their own streams, each with a ring of two
 * minibatch buffers; the sizes of a buffer are read back (the one small copy per minibatch)
 * before it is reused, as a training loop would. Times are wall-clock, host work included, and
 * leave out what every mode does once: creating samplers and buffers and a warm-up (one
 * minibatch per CPU worker, three per CUDA stream); a CUDA mode's clock stops once every
 * buffer of every stream has been waited for, so all queued work is inside it. SEPS counts the
 * edges of every block of every timed minibatch. Before timing (and outside it), one minibatch
 * of every CUDA mode is compared with the CPU sampler bit for bit, so a fast but wrong sampler
 * fails the run instead of reporting a number.
 */
#include "bench.h"
#include "cli.h"
/* The link ceiling's read plan: benchmark instrumentation (the gd_instrument library). */
#include "instrument/read_plan.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { MAX_PRESETS = 4, MAX_FSETS = 4, MAX_STREAMS = 16 };
enum {
    M_CPU = 0,
    M_CPU_PAR,
    M_UVA,
    M_UVA_UNSORTED,
    M_UVA_SORTED,
    M_UVA_INDICES,
    M_UVA_INDICES_UNSORTED,
    M_UVA_INDICES_SORTED,
    M_UVA_CACHE10,
    M_UVA_CACHE20,
    M_UVA_LINK,
    M_UVA_INDICES_LINK,
    M_GPU_SORTED,
    M_GPU, /* last: the ratios to it are printed once it has run */
    M_COUNT
};

static const struct {
    const char *name;
    gd_placement indptr, indices; /* CUDA modes */
    int sort;                     /* CUDA modes: the read schedule, a gd_sample_reads */
    int cache_pct;                /* CUDA modes: GPU list cache, % of the indices bytes */
    int link;                     /* the link ceiling of the mode link - 1 */
} modes[M_COUNT] = {
    {"cpu", GD_PLACE_HOST, GD_PLACE_HOST, GD_SAMPLE_READS_AUTO, 0, 0},
    {"cpu-parallel", GD_PLACE_HOST, GD_PLACE_HOST, GD_SAMPLE_READS_AUTO, 0, 0},
    {"uva", GD_PLACE_PINNED, GD_PLACE_PINNED, GD_SAMPLE_READS_AUTO, 0, 0},
    {"uva-unsorted", GD_PLACE_PINNED, GD_PLACE_PINNED, GD_SAMPLE_READS_FRONTIER, 0, 0},
    {"uva-sorted", GD_PLACE_PINNED, GD_PLACE_PINNED, GD_SAMPLE_READS_SORTED, 0, 0},
    {"uva-indices", GD_PLACE_GPU, GD_PLACE_PINNED, GD_SAMPLE_READS_AUTO, 0, 0},
    {"uva-indices-unsorted", GD_PLACE_GPU, GD_PLACE_PINNED, GD_SAMPLE_READS_FRONTIER, 0, 0},
    {"uva-indices-sorted", GD_PLACE_GPU, GD_PLACE_PINNED, GD_SAMPLE_READS_SORTED, 0, 0},
    {"uva-cache10", GD_PLACE_GPU, GD_PLACE_PINNED, GD_SAMPLE_READS_AUTO, 10, 0},
    {"uva-cache20", GD_PLACE_GPU, GD_PLACE_PINNED, GD_SAMPLE_READS_AUTO, 20, 0},
    {"uva-link", GD_PLACE_PINNED, GD_PLACE_PINNED, GD_SAMPLE_READS_AUTO, 0, M_UVA + 1},
    {"uva-indices-link", GD_PLACE_GPU, GD_PLACE_PINNED, GD_SAMPLE_READS_AUTO, 0, M_UVA_INDICES + 1},
    {"gpu-sorted", GD_PLACE_GPU, GD_PLACE_GPU, GD_SAMPLE_READS_SORTED, 0, 0},
    {"gpu", GD_PLACE_GPU, GD_PLACE_GPU, GD_SAMPLE_READS_AUTO, 0, 0},
};

static int is_cuda_mode(int m) {
    return m >= M_UVA;
}

typedef struct {
    /* options */
    bench_options opt; /* --nodes, --batch, --threads, --device, --seed, --quick, --json ... */
    int streams, replace;
    int have_presets, have_fanouts, have_modes; /* given */
    int gpu_batches, cpu_batches, warmup;
    int64_t link_whole; /* --link-whole: the link plans' whole-list rule (0: the sampler's) */
    const char *presets[MAX_PRESETS];
    int npresets;
    int fanouts[MAX_FSETS][GD_SAMPLER_MAX_LAYERS], layers[MAX_FSETS], nfsets;
    int use[M_COUNT];
    /* state */
    int gpu;
    gd_context_t *context; /* the GPU's (default) context, when gpu */
    cJSON *root, *jruns, *jtargets, *jprobes;
    double seps[MAX_PRESETS][MAX_FSETS][M_COUNT]; /* 0: not measured */
} sample_bench;

/* One preset's data: the graph and the shuffled seeds. */
typedef struct {
    const char *preset;
    gd_dataset_t *ds;
    int64_t num_nodes, num_edges;
    const int64_t *indptr;
    const void *indices;
    gd_dtype dtype;
    int64_t *order; /* training nodes, shuffled for epoch 0 */
    int64_t num_seeds, num_batches;
    gd_graph_t *host_graph;
    int probed; /* the link probe has run on this preset */
} preset_data;

static const char *fanout_text(const int *f, int layers, char *buf, size_t n) {
    size_t o = 0;
    buf[0] = '\0';
    for (int l = 0; l < layers && o < n; l++)
        o += (size_t)snprintf(buf + o, n - o, "%s%d", l ? "," : "", f[l]);
    return buf;
}

static void help(void) {
    printf(
        "usage: graphdirect bench sample [options]\n\n"
        "Sampled edges per second of the neighbour sampler: the CUDA sampler reading the\n"
        "graph over UVA (pinned host memory) against the same sampler with the graph in GPU\n"
        "memory (the ceiling) and against the CPU sampler on every core (docs/bench.md).\n\n"
        "options:\n"
        "  --presets LIST     generator presets (default products,papers; --quick: tiny)\n"
        "  --nodes N          scale every preset to N nodes (default: the preset's)\n"
        "  --fanouts LISTS    fanout lists separated by ':' (default 15,10,5:25,10), seeds first\n"
        "  --batch N          seeds per minibatch (default 1024)\n"
        "  --modes LIST       cpu, cpu-parallel, uva, uva-indices, gpu, and with the read\n"
        "                     schedule forced: uva-unsorted, uva-sorted, uva-indices-unsorted,\n"
        "                     uva-indices-sorted, gpu-sorted; with a GPU list cache of 10 or\n"
        "                     20 %% of the indices bytes: uva-cache10, uva-cache20; the link\n"
        "                     ceiling of uva and uva-indices: uva-link, uva-indices-link\n"
        "                     (default all)\n"
        "  --gpu-batches N    timed minibatches per CUDA mode (default 200; --quick 10)\n"
        "  --cpu-batches N    timed minibatches per CPU mode (default 8 per thread)\n"
        "  --streams N        CUDA samplers on their own streams (default 4)\n"
        "  --link-whole B     the link modes plan a list read whole when it spans at most B\n"
        "                     bytes per neighbour taken (default: the sampler's rule, 32 B\n"
        "                     within its window): what another rule would cost on the link\n"
        "  --threads N        CPU threads (default: online CPUs)\n"
        "  --replace          sample with replacement\n"
        "  --device N         GPU (default 0)\n"
        "  --seed N           graph, shuffle and draws (default 1)\n"
        "  --quick            the tiny preset and a few minibatches: a smoke test\n"
        "  --json FILE        write every parameter and measurement\n"
        "  --commit TEXT      commit recorded in the JSON (default: the configure-time one)\n");
}

static int parse_modes(sample_bench *b, const char *text) {
    char buf[256];
    snprintf(buf, sizeof buf, "%s", text);
    memset(b->use, 0, sizeof b->use);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        int found = 0;
        for (int m = 0; m < M_COUNT; m++)
            if (!strcmp(tok, modes[m].name)) b->use[m] = found = 1;
        if (!found) {
            bench_error("--modes: unknown mode '%s': use cpu, cpu-parallel, uva, uva-unsorted, "
                        "uva-sorted, uva-indices, uva-indices-unsorted, uva-indices-sorted, "
                        "uva-cache10, uva-cache20, uva-link, uva-indices-link, gpu-sorted or gpu",
                        tok);
            return -1;
        }
    }
    return 0;
}

static int parse_fanouts(sample_bench *b, const char *text) {
    return bench_parse_fanouts(text, -1, 1000000, MAX_FSETS, b->fanouts, b->layers, &b->nfsets);
}

static int parse_presets(sample_bench *b, char *text) {
    b->npresets = 0;
    for (char *save = NULL, *tok = strtok_r(text, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        if (b->npresets == MAX_PRESETS) {
            bench_error("--presets: at most %d presets", MAX_PRESETS);
            return -1;
        }
        b->presets[b->npresets++] = tok;
    }
    return 0;
}

/* The command named in usage errors. */
static const char cmd[] = "bench sample";

/* An option of this driver alone: 0, an exit status, or -1 for a shared option. */
static int own_option(void *self, int c, const char *arg) {
    sample_bench *b = self;
    static char presets_buf[256]; /* --presets points into it */
    int64_t v;
    switch (c) {
    case 'p':
        snprintf(presets_buf, sizeof presets_buf, "%s", arg);
        if (parse_presets(b, presets_buf)) return CLI_EXIT_USAGE;
        b->have_presets = 1;
        break;
    case 'f':
        if (parse_fanouts(b, arg)) return CLI_EXIT_USAGE;
        b->have_fanouts = 1;
        break;
    case 'm':
        if (parse_modes(b, arg)) return CLI_EXIT_USAGE;
        b->have_modes = 1;
        break;
    case 'g':
        if (cli_parse_i64(arg, &v) || v < 1 || v > 1000000)
            return cli_usage_error(cmd, "--gpu-batches '%s' is not a count", arg);
        b->gpu_batches = (int)v;
        break;
    case 'C':
        if (cli_parse_i64(arg, &v) || v < 1 || v > 1000000)
            return cli_usage_error(cmd, "--cpu-batches '%s' is not a count", arg);
        b->cpu_batches = (int)v;
        break;
    case 'S':
        if (cli_parse_i64(arg, &v) || v < 1 || v > MAX_STREAMS)
            return cli_usage_error(cmd, "--streams '%s' is not a count in [1, %d]", arg,
                                   MAX_STREAMS);
        b->streams = (int)v;
        break;
    case 'r':
        b->replace = 1;
        break;
    case 'W':
        if (cli_parse_i64(arg, &v) || v < 1 || v > ((int64_t)1 << 40))
            return cli_usage_error(cmd, "--link-whole '%s' is not a byte count", arg);
        b->link_whole = v;
        break;
    default:
        return -1;
    }
    return 0;
}

/* Parse the options into b; returns -1 to continue, else the exit code. */
static int parse_options(sample_bench *b, int argc, char **argv) {
    static const struct option long_opts[] = {{"presets", required_argument, 0, 'p'},
                                              BENCH_LONG("nodes", NODES),
                                              {"fanouts", required_argument, 0, 'f'},
                                              BENCH_LONG("batch", BATCH),
                                              {"modes", required_argument, 0, 'm'},
                                              {"gpu-batches", required_argument, 0, 'g'},
                                              {"cpu-batches", required_argument, 0, 'C'},
                                              {"streams", required_argument, 0, 'S'},
                                              BENCH_LONG("threads", THREADS),
                                              {"replace", no_argument, 0, 'r'},
                                              {"link-whole", required_argument, 0, 'W'},
                                              BENCH_FLAG("quick", QUICK),
                                              BENCH_LONG_END};
    int rc;
    bench_options_init(&b->opt);
    b->streams = 4;
    if ((rc = bench_parse_options(&b->opt, cmd, argc, argv, long_opts, help, own_option, b)) != -1)
        return rc;
    if (!b->have_presets) {
        if (b->opt.quick) {
            b->presets[0] = "tiny";
            b->npresets = 1;
        } else {
            b->presets[0] = "products";
            b->presets[1] = "papers";
            b->npresets = 2;
        }
    }
    if (!b->have_fanouts && parse_fanouts(b, "15,10,5:25,10")) return CLI_EXIT_FAIL;
    if (!b->have_modes)
        for (int m = 0; m < M_COUNT; m++) b->use[m] = 1;
    if (!b->gpu_batches) b->gpu_batches = b->opt.quick ? 10 : 200;
    if (!b->cpu_batches) b->cpu_batches = b->opt.quick ? 2 * b->opt.threads : 8 * b->opt.threads;
    b->warmup = b->opt.quick ? 1 : 3;
    return -1;
}

/*
 * The sampler options of every mode: the run's batch, seed and --replace on the given backend,
 * with threads CPU threads (0: the library's default).
 */
static gd_sampler_options sampler_options(const sample_bench *b, gd_sampler_backend backend,
                                          int threads) {
    gd_sampler_options o = GD_SAMPLER_OPTIONS_INIT;
    o.backend = backend;
    o.max_batch = b->opt.batch;
    o.seed = b->opt.seed;
    o.replace = b->replace;
    if (threads > 0) o.threads = threads;
    return o;
}

/* ---- one preset's graph and seeds */

static void preset_release(preset_data *p) {
    gd_graph_destroy(p->host_graph);
    free(p->order);
    gd_dataset_close(p->ds);
    memset(p, 0, sizeof *p);
}

static int preset_load(sample_bench *b, const char *preset, preset_data *p) {
    gd_array_view ip, ix, tr;
    cli_progress prog;
    gd_status st;
    int64_t *train = NULL;
    double t0 = bench_now();
    memset(p, 0, sizeof *p);
    p->preset = preset;
    gd_generate_options go = GD_GENERATE_OPTIONS_INIT;
    go.preset = preset;
    go.seed = b->opt.seed;
    go.num_nodes = b->opt.nodes;
    go.feature_dim = 1; /* the sampler reads only the graph */
    cli_progress_init(&prog);
    go.progress = cli_progress_cb;
    go.progress_user = &prog;
    fprintf(stderr, "sample: generating preset '%s' in memory\n", preset);
    st = gd_generate(&go, &p->ds);
    cli_progress_end(&prog);
    BENCH_GD(st, "generating the benchmark's graph");
    BENCH_GD(gd_dataset_array(p->ds, GD_ARRAY_INDPTR, &ip), "reading indptr");
    BENCH_GD(gd_dataset_array(p->ds, GD_ARRAY_INDICES, &ix), "reading indices");
    p->num_nodes = gd_dataset_num_nodes(p->ds);
    p->num_edges = gd_dataset_num_edges(p->ds);
    p->indptr = ip.data;
    p->indices = ix.data;
    p->dtype = ix.dtype;
    /* Seeds: the training nodes (every node if the preset has no split). */
    if (gd_dataset_array(p->ds, GD_ARRAY_TRAIN_IDX, &tr) == GD_OK && tr.shape[0] > 0) {
        p->num_seeds = tr.shape[0];
        train = malloc(sizeof *train * (size_t)p->num_seeds);
        BENCH_REQUIRE(train, "out of memory for %lld training ids", (long long)p->num_seeds);
        for (int64_t i = 0; i < p->num_seeds; i++)
            train[i] = tr.dtype == GD_DTYPE_INT32 ? ((const int32_t *)tr.data)[i]
                                                  : ((const int64_t *)tr.data)[i];
    } else {
        p->num_seeds = p->num_nodes;
        train = malloc(sizeof *train * (size_t)p->num_seeds);
        BENCH_REQUIRE(train, "out of memory for %lld seed ids", (long long)p->num_seeds);
        for (int64_t i = 0; i < p->num_seeds; i++) train[i] = i;
    }
    p->order = malloc(sizeof *p->order * (size_t)p->num_seeds);
    BENCH_REQUIRE(p->order, "out of memory for the shuffled seeds");
    BENCH_GD(gd_seed_batches(train, p->num_seeds, b->opt.batch, b->opt.seed, 0, 1, p->order,
                             &p->num_batches),
             "shuffling the training nodes");
    BENCH_REQUIRE(p->num_batches > 0,
                  "preset %s has %lld training nodes, fewer than a batch of %lld", preset,
                  (long long)p->num_seeds, (long long)b->opt.batch);
    BENCH_GD(gd_graph_create(p->num_nodes, p->indptr, p->indices, p->dtype, NULL, &p->host_graph),
             "making the host graph");
    free(train);
    {
        char a[32], e[32];
        fprintf(stderr,
                "sample: %s: %s nodes, %s edges (%s indices), %lld batches of %lld "
                "training nodes (%.1f s)\n",
                preset, cli_count((double)p->num_nodes, a, sizeof a),
                cli_count((double)p->num_edges, e, sizeof e), gd_dtype_name(p->dtype),
                (long long)p->num_batches, (long long)b->opt.batch, bench_now() - t0);
    }
    return 0;
fail:
    free(train);
    preset_release(p);
    return -1;
}

static const int64_t *batch_seeds(const sample_bench *b, const preset_data *p, int64_t batch) {
    return p->order + (batch % p->num_batches) * b->opt.batch;
}

/* Edges and input nodes of the minibatch last sampled into mb. */
static int minibatch_sizes(gd_minibatch_t *mb, int64_t *edges, int64_t *inputs) {
    gd_block blk;
    const int64_t *ids;
    int64_t n;
    for (int l = 0; l < gd_minibatch_num_layers(mb); l++) {
        BENCH_GD(gd_minibatch_block(mb, l, &blk), "reading a block");
        *edges += blk.num_edges;
    }
    BENCH_GD(gd_minibatch_input_nodes(mb, &ids, &n), "reading the input nodes");
    *inputs += n;
    return 0;
fail:
    return -1;
}

/* ---- CPU modes */

/*
 * The start line of the `cpu` workers: each creates its sampler and buffer and samples one
 * untimed minibatch (first touch of its scratch, as the CUDA modes warm up), then waits here; the
 * clock starts when all are ready, so thread start and allocation are not timed.
 */
typedef struct {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int ready, go;
} start_line;

typedef struct {
    const sample_bench *b;
    const preset_data *p;
    const int *fanouts;
    int layers, index, workers, batches;
    int64_t edges, inputs;
    int rc;
    start_line *start;
} cpu_worker;

static void start_line_arrive(start_line *sl) {
    pthread_mutex_lock(&sl->lock);
    sl->ready++;
    pthread_cond_broadcast(&sl->cond);
    while (!sl->go) pthread_cond_wait(&sl->cond, &sl->lock);
    pthread_mutex_unlock(&sl->lock);
}

static void *cpu_worker_run(void *arg) {
    cpu_worker *w = arg;
    gd_sampler_t *s = NULL;
    gd_minibatch_t *mb = NULL;
    const gd_sampler_options o = sampler_options(w->b, GD_SAMPLER_CPU, 1);
    int arrived = 0;
    w->rc = -1;
    BENCH_GD(gd_sampler_create(w->p->host_graph, w->fanouts, w->layers, &o, &s),
             "creating a CPU sampler");
    BENCH_GD(gd_minibatch_create(s, &mb), "creating a minibatch buffer");
    BENCH_GD(
        gd_sample(s, batch_seeds(w->b, w->p, w->index), w->b->opt.batch, 0, 0, w->index, NULL, mb),
        "sampling on the CPU (warm-up)");
    arrived = 1;
    start_line_arrive(w->start);
    for (int64_t i = w->index; i < w->batches; i += w->workers) {
        BENCH_GD(gd_sample(s, batch_seeds(w->b, w->p, i), w->b->opt.batch, 0, 0, i, NULL, mb),
                 "sampling on the CPU");
        if (minibatch_sizes(mb, &w->edges, &w->inputs)) goto fail;
    }
    w->rc = 0;
fail:
    if (!arrived) start_line_arrive(w->start);
    gd_minibatch_destroy(mb);
    gd_sampler_destroy(s);
    return NULL;
}

/* `cpu`: one single-threaded sampler per thread, each on its share of the minibatches. */
static int run_cpu(const sample_bench *b, const preset_data *p, const int *fanouts, int layers,
                   double *secs, int64_t *edges, int64_t *inputs) {
    cpu_worker *w = calloc((size_t)b->opt.threads, sizeof *w);
    pthread_t *tid = calloc((size_t)b->opt.threads, sizeof *tid);
    start_line sl = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0};
    int started = 0, rc = -1;
    double t0 = 0;
    BENCH_REQUIRE(w && tid, "out of memory for %d CPU workers", b->opt.threads);
    for (int t = 0; t < b->opt.threads; t++) {
        w[t] =
            (cpu_worker){b, p, fanouts, layers, t, b->opt.threads, b->cpu_batches, 0, 0, -1, &sl};
        BENCH_REQUIRE(pthread_create(&tid[t], NULL, cpu_worker_run, &w[t]) == 0,
                      "cannot start CPU worker %d", t);
        started++;
    }
    rc = 0;
fail:
    /* Start the clock once every started worker is ready (or gave up), then release them. */
    pthread_mutex_lock(&sl.lock);
    while (sl.ready < started) pthread_cond_wait(&sl.cond, &sl.lock);
    t0 = bench_now();
    sl.go = 1;
    pthread_cond_broadcast(&sl.cond);
    pthread_mutex_unlock(&sl.lock);
    for (int t = 0; t < started; t++) {
        pthread_join(tid[t], NULL);
        if (w[t].rc != 0) rc = -1;
        *edges += w[t].edges;
        *inputs += w[t].inputs;
    }
    *secs = bench_now() - t0;
    free(w);
    free(tid);
    return rc;
}

/* `cpu-parallel`: one sampler using every thread within each minibatch. */
static int run_cpu_parallel(const sample_bench *b, const preset_data *p, const int *fanouts,
                            int layers, double *secs, int64_t *edges, int64_t *inputs) {
    gd_sampler_t *s = NULL;
    gd_minibatch_t *mb = NULL;
    int rc = -1;
    const gd_sampler_options o = sampler_options(b, GD_SAMPLER_CPU, b->opt.threads);
    BENCH_GD(gd_sampler_create(p->host_graph, fanouts, layers, &o, &s), "creating a CPU sampler");
    BENCH_GD(gd_minibatch_create(s, &mb), "creating a minibatch buffer");
    const int batches = b->cpu_batches / 4 > 4 ? b->cpu_batches / 4 : 4;
    /* One untimed minibatch first: the scratch's first touch, as the other modes warm up. */
    BENCH_GD(gd_sample(s, batch_seeds(b, p, 0), b->opt.batch, 0, 0, 0, NULL, mb),
             "sampling on the CPU (warm-up)");
    const double t0 = bench_now();
    for (int64_t i = 0; i < batches; i++) {
        BENCH_GD(gd_sample(s, batch_seeds(b, p, i), b->opt.batch, 0, 0, i, NULL, mb),
                 "sampling on the CPU");
        if (minibatch_sizes(mb, edges, inputs)) goto fail;
    }
    *secs = bench_now() - t0;
    rc = 0;
fail:
    gd_minibatch_destroy(mb);
    gd_sampler_destroy(s);
    return rc;
}

/* ---- CUDA modes */

#ifdef GD_WITH_CUDA
/* Copy a minibatch's arrays to host memory, for the comparison with the CPU sampler. */
static int fetch(gd_minibatch_t *mb, int64_t **nodes, int64_t *nn, int32_t **ip, int32_t **ix,
                 gd_block *blk, int layers) {
    const int64_t *ids;
    const int dev = gd_minibatch_on_device(mb);
    BENCH_GD(gd_minibatch_input_nodes(mb, &ids, nn), "reading the input nodes");
    *nodes = malloc(sizeof(int64_t) * (size_t)(*nn + 1));
    BENCH_REQUIRE(*nodes, "out of memory");
    if (dev)
        BENCH_CUDA(cudaMemcpy(*nodes, ids, sizeof(int64_t) * (size_t)*nn, cudaMemcpyDefault));
    else
        memcpy(*nodes, ids, sizeof(int64_t) * (size_t)*nn);
    for (int l = 0; l < layers; l++) {
        BENCH_GD(gd_minibatch_block(mb, l, &blk[l]), "reading a block");
        const size_t a = sizeof(int32_t) * (size_t)(blk[l].num_dst + 1);
        const size_t e = sizeof(int32_t) * (size_t)blk[l].num_edges;
        ip[l] = malloc(a);
        ix[l] = malloc(e + 4);
        BENCH_REQUIRE(ip[l] && ix[l], "out of memory");
        if (dev) {
            BENCH_CUDA(cudaMemcpy(ip[l], blk[l].indptr, a, cudaMemcpyDefault));
            if (e) BENCH_CUDA(cudaMemcpy(ix[l], blk[l].indices, e, cudaMemcpyDefault));
        } else {
            memcpy(ip[l], blk[l].indptr, a);
            memcpy(ix[l], blk[l].indices, e);
        }
    }
    return 0;
fail:
    return -1;
}

/*
 * With a GPU list cache: the share of minibatch mb's list reads (its frontier nodes of nonzero
 * degree, every hop) that the cache serves. mb is a CPU sampler's, so its nodes are host memory.
 */
static int cache_share(const preset_data *p, const gd_graph_t *g, gd_minibatch_t *mb,
                       int layers, double *share) {
    const int64_t *nodes;
    int64_t num_in, reads = 0, hits = 0;
    gd_block blk;
    BENCH_GD(gd_minibatch_input_nodes(mb, &nodes, &num_in), "reading the input nodes");
    for (int h = 0; h < layers; h++) {
        /* Hop h's frontier is the destination nodes of layer layers - 1 - h (layer 0 = input). */
        BENCH_GD(gd_minibatch_block(mb, layers - 1 - h, &blk), "reading a block");
        for (int64_t i = 0; i < blk.num_dst; i++) {
            const int64_t v = nodes[i];
            if (p->indptr[v + 1] == p->indptr[v]) continue;
            reads++;
            hits += gd_graph_is_cached(g, v);
        }
    }
    *share = reads ? (double)hits / (double)reads : 0;
    return 0;
fail:
    return -1;
}

/* Minibatch 0 of a CUDA sampler equals the CPU sampler's, bit for bit; *share gets the GPU list
 * cache's share of its list reads (-1 without a cache). */
static int verify(const sample_bench *b, const preset_data *p, const int *fanouts, int layers,
                  const gd_graph_t *g, gd_sampler_t *gs, gd_minibatch_t *gmb, void *stream,
                  const char *mode, double *share) {
    gd_graph_info gi = GD_GRAPH_INFO_INIT;
    gd_sampler_t *cs = NULL;
    gd_minibatch_t *cmb = NULL;
    int64_t *na = NULL, *nb = NULL, nna = 0, nnb = 0;
    int32_t *ipa[GD_SAMPLER_MAX_LAYERS] = {0}, *ixa[GD_SAMPLER_MAX_LAYERS] = {0};
    int32_t *ipb[GD_SAMPLER_MAX_LAYERS] = {0}, *ixb[GD_SAMPLER_MAX_LAYERS] = {0};
    gd_block ba[GD_SAMPLER_MAX_LAYERS], bb[GD_SAMPLER_MAX_LAYERS];
    int rc = -1;
    const gd_sampler_options o = sampler_options(b, GD_SAMPLER_CPU, b->opt.threads);
    BENCH_GD(gd_sampler_create(p->host_graph, fanouts, layers, &o, &cs), "creating a CPU sampler");
    BENCH_GD(gd_minibatch_create(cs, &cmb), "creating a minibatch buffer");
    BENCH_GD(gd_sample(cs, batch_seeds(b, p, 0), b->opt.batch, 0, 0, 0, NULL, cmb),
             "sampling (CPU)");
    BENCH_GD(gd_sample(gs, batch_seeds(b, p, 0), b->opt.batch, 0, 0, 0, stream, gmb),
             "sampling (CUDA)");
    BENCH_GD(gd_sampler_check_errors(gs), "sampling (CUDA)");
    if (fetch(cmb, &na, &nna, ipa, ixa, ba, layers) || fetch(gmb, &nb, &nnb, ipb, ixb, bb, layers))
        goto fail;
    BENCH_REQUIRE(nna == nnb && !memcmp(na, nb, sizeof(int64_t) * (size_t)nna),
                  "%s: the input nodes of minibatch 0 differ from the CPU sampler's (%lld vs "
                  "%lld nodes): the CUDA sampler is wrong, no number is reported",
                  mode, (long long)nnb, (long long)nna);
    for (int l = 0; l < layers; l++)
        BENCH_REQUIRE(ba[l].num_dst == bb[l].num_dst && ba[l].num_edges == bb[l].num_edges &&
                          !memcmp(ipa[l], ipb[l], sizeof(int32_t) * (size_t)(ba[l].num_dst + 1)) &&
                          !memcmp(ixa[l], ixb[l], sizeof(int32_t) * (size_t)ba[l].num_edges),
                      "%s: layer %d of minibatch 0 differs from the CPU sampler's: the CUDA "
                      "sampler is wrong, no number is reported",
                      mode, l);
    *share = -1;
    BENCH_GD(gd_graph_get_info(g, &gi), "reading the graph's cache");
    if (gi.cache_nodes > 0 && cache_share(p, g, cmb, layers, share)) goto fail;
    rc = 0;
fail:
    free(na);
    free(nb);
    for (int l = 0; l < GD_SAMPLER_MAX_LAYERS; l++) {
        free(ipa[l]);
        free(ixa[l]);
        free(ipb[l]);
        free(ixb[l]);
    }
    gd_minibatch_destroy(cmb);
    gd_sampler_destroy(cs);
    return rc;
}

/* The graph placed as mode m places it; the bytes in GPU and pinned memory and of its cache. */
static int place_graph(const sample_bench *b, const preset_data *p, int m, gd_graph_t **g,
                       int64_t *gpu_bytes, int64_t *pinned_bytes, int64_t *cache_bytes) {
    gd_graph_options go = GD_GRAPH_OPTIONS_INIT;
    gd_graph_info gi = GD_GRAPH_INFO_INIT;
    go.indptr_placement = modes[m].indptr;
    go.indices_placement = modes[m].indices;
    go.context = b->context;
    go.gpu_cache_bytes = p->num_edges * (int64_t)gd_dtype_size(p->dtype) / 100 * modes[m].cache_pct;
    BENCH_GD(gd_graph_create(p->num_nodes, p->indptr, p->indices, p->dtype, &go, g),
             "placing the graph");
    BENCH_GD(gd_graph_get_info(*g, &gi), "reading the graph's placement");
    *gpu_bytes = gi.device_bytes;
    *pinned_bytes = gi.pinned_bytes;
    *cache_bytes = gi.cache_bytes;
    return 0;
fail:
    return -1;
}

static int run_cuda(const sample_bench *b, const preset_data *p, int m, const int *fanouts,
                    int layers, double *secs, int64_t *edges, int64_t *inputs,
                    int64_t *graph_gpu_bytes, int64_t *graph_pinned_bytes, int64_t *cache_bytes,
                    double *share) {
    gd_graph_t *g = NULL;
    gd_sampler_t *s[MAX_STREAMS] = {0};
    gd_minibatch_t *mb[MAX_STREAMS][2] = {{0}};
    int used[MAX_STREAMS][2] = {{0}};
    cudaStream_t st[MAX_STREAMS];
    int nstreams = 0, rc = -1;
    const int K = b->streams;
    if (place_graph(b, p, m, &g, graph_gpu_bytes, graph_pinned_bytes, cache_bytes)) goto fail;
    gd_sampler_options o = sampler_options(b, GD_SAMPLER_CUDA, 0);
    o.sort_reads = modes[m].sort;
    for (int k = 0; k < K; k++) {
        BENCH_CUDA(cudaStreamCreateWithFlags(&st[k], cudaStreamNonBlocking));
        nstreams++;
        BENCH_GD(gd_sampler_create(g, fanouts, layers, &o, &s[k]), "creating a CUDA sampler");
        BENCH_GD(gd_minibatch_create(s[k], &mb[k][0]), "creating a minibatch buffer");
        BENCH_GD(gd_minibatch_create(s[k], &mb[k][1]), "creating a minibatch buffer");
    }
    if (verify(b, p, fanouts, layers, g, s[0], mb[0][0], st[0], modes[m].name, share))
        goto fail;
    /* Warm-up, then the timed minibatches; batch i goes to sampler i % K, buffer (i / K) % 2,
     * whose previous minibatch's sizes are read first. */
    for (int phase = 0; phase < 2; phase++) {
        const int64_t count = phase ? b->gpu_batches : (int64_t)b->warmup * K;
        int64_t e = 0, n = 0;
        const double t0 = bench_now();
        memset(used, 0, sizeof used);
        for (int64_t i = 0; i < count; i++) {
            const int k = (int)(i % K), q = (int)((i / K) % 2);
            if (used[k][q] && minibatch_sizes(mb[k][q], &e, &n)) goto fail;
            BENCH_GD(gd_sample(s[k], batch_seeds(b, p, i), b->opt.batch, 0, 0, i, st[k], mb[k][q]),
                     "sampling (CUDA)");
            used[k][q] = 1;
        }
        for (int k = 0; k < K; k++)
            for (int q = 0; q < 2; q++)
                if (used[k][q] && minibatch_sizes(mb[k][q], &e, &n)) goto fail;
        if (phase) {
            *secs = bench_now() - t0;
            *edges = e;
            *inputs = n;
        }
    }
    for (int k = 0; k < K; k++) BENCH_GD(gd_sampler_check_errors(s[k]), "sampling (CUDA)");
    rc = 0;
fail:
    for (int k = 0; k < K; k++) {
        gd_minibatch_destroy(mb[k][0]);
        gd_minibatch_destroy(mb[k][1]);
        gd_sampler_destroy(s[k]);
    }
    for (int k = 0; k < nstreams; k++) (void)cudaStreamDestroy(st[k]);
    gd_graph_destroy(g);
    return rc;
}

/* Minibatches whose reads the link modes replay. */
#define LINK_BATCHES 32

/*
 * The read plan of the first minibatches (at most LINK_BATCHES) of this preset and fanout list,
 * made from the CPU sampler's minibatches (equal to the CUDA sampler's) once for both link modes;
 * *inputs gets their input nodes.
 */
static int build_plan(const sample_bench *b, const preset_data *p, const int *fanouts, int layers,
                      gd__read_plan *plan, int64_t *inputs) {
    gd_sampler_t *cs = NULL;
    gd_minibatch_t *cmb = NULL;
    int64_t edges = 0;
    const int count = b->gpu_batches < LINK_BATCHES ? b->gpu_batches : LINK_BATCHES;
    int rc = -1;
    const gd_sampler_options o = sampler_options(b, GD_SAMPLER_CPU, b->opt.threads);
    if (plan->minibatches) return 0;
    plan->whole_bytes_per_pick = b->link_whole;
    BENCH_GD(gd_sampler_create(p->host_graph, fanouts, layers, &o, &cs), "creating a CPU sampler");
    BENCH_GD(gd_minibatch_create(cs, &cmb), "creating a minibatch buffer");
    for (int i = 0; i < count; i++) {
        BENCH_GD(gd_sample(cs, batch_seeds(b, p, i), b->opt.batch, 0, 0, i, NULL, cmb),
                 "sampling (CPU)");
        if (minibatch_sizes(cmb, &edges, inputs)) goto fail;
        BENCH_GD(gd__read_plan_add(plan, cs, cmb, 0, i), "planning the link ceiling's reads");
    }
    rc = 0;
fail:
    gd_minibatch_destroy(cmb);
    gd_sampler_destroy(cs);
    return rc;
}

/* Reads per link probe, and the span of its second region. */
#define PROBE_READS (1 << 20)
#define PROBE_SMALL_BYTES ((int64_t)64 << 20)

/*
 * The link probe, once per preset: random reads of the pinned indices array, PROBE_READS of one
 * entry each (one 32-byte sector request) or of one aligned 128-byte line each (8 lanes, 16
 * bytes a lane), over the whole array and over its first PROBE_SMALL_BYTES, by the replay with
 * synthetic plans. It shows the link's rate of small random reads and how it falls with the
 * span (address translation), next to which the link modes' sector rates can be read.
 */
static int link_probe(sample_bench *b, preset_data *p, const gd_graph_t *g) {
    const int64_t eb = (int64_t)gd_dtype_size(p->dtype), per_line = 128 / eb;
    /* Entries from the array's start to its first 128-byte boundary (as the GPU addresses it). */
    const int64_t skip = gd__read_plan_line_skip(g);
    int rc = -1;
    gd__read_plan probe;
    memset(&probe, 0, sizeof probe);
    printf("  link probe: %d random reads of the pinned indices (%.0f MB)\n", PROBE_READS,
           (double)(p->num_edges * eb) / 1e6);
    for (int small = 0; small < 2; small++)
        for (int line = 0; line < 2; line++) {
            const int64_t big = p->num_edges - skip;
            const int64_t span = small && PROBE_SMALL_BYTES / eb < big ? PROBE_SMALL_BYTES / eb : big;
            const int64_t slots = line ? span / per_line : span;
            double secs = 0;
            uint64_t sum = 0;
            cJSON *r;
            if (slots < 1) continue;
            memset(&probe, 0, sizeof probe);
            probe.num_nodes = p->num_nodes;
            probe.num_edges = p->num_edges;
            probe.entry_bytes = (int)eb;
            probe.items = gd_calloc(PROBE_READS, sizeof *probe.items);
            probe.positions = gd_calloc(1, sizeof *probe.positions);
            BENCH_REQUIRE(probe.items && probe.positions, "out of memory for the link probe");
            probe.num_items = probe.cap_items = PROBE_READS;
            probe.num_positions = probe.cap_positions = 1;
            for (int64_t i = 0; i < PROBE_READS; i++) {
                gd__read_item *it = &probe.items[i];
                const int64_t k = bench_below(bench_mix64(b->opt.seed * 0x1000003u + (uint64_t)i),
                                              slots);
                it->start = line ? skip + k * per_line : skip + k;
                it->len = line ? (int32_t)per_line : 1;
                it->kind = line ? GD__READ_WHOLE : GD__READ_SCATTERED;
                it->lanes = 8;
            }
            BENCH_GD(gd__read_plan_replay(&probe, g, 0, 3, &secs, &sum), "the link probe");
            BENCH_REQUIRE(sum == gd__read_plan_checksum(&probe, p->host_graph, 0),
                          "the link probe read other entries than asked: no number is reported");
            printf("    %-14s over %8.1f MB: %7.1fM reads/s, %5.1f GB/s\n",
                   line ? "128-byte lines" : "single entries", (double)(span * eb) / 1e6,
                   PROBE_READS / secs / 1e6, PROBE_READS * (line ? 128.0 : 32.0) / secs / 1e9);
            BENCH_JSON(r = cJSON_CreateObject());
            cJSON_AddItemToArray(b->jprobes, r);
            BENCH_JSON(cJSON_AddStringToObject(r, "preset", p->preset));
            BENCH_JSON(cJSON_AddStringToObject(r, "read", line ? "line128" : "entry"));
            BENCH_JSON(cJSON_AddNumberToObject(r, "span_bytes", (double)(span * eb)));
            BENCH_JSON(cJSON_AddNumberToObject(r, "reads", PROBE_READS));
            BENCH_JSON(cJSON_AddNumberToObject(r, "seconds", secs));
            gd__read_plan_free(&probe);
        }
    p->probed = 1;
    rc = 0;
fail:
    gd__read_plan_free(&probe);
    return rc;
}

/*
 * Link mode m: the plan's reads replayed on the graph placed as the mode places it (indptr read
 * where it is pinned), the fastest of three runs; the replay's checksum must equal the CPU's.
 */
static int run_link(sample_bench *b, preset_data *p, int m, const gd__read_plan *plan,
                    double *secs, int64_t *edges, int64_t *gpu_bytes, int64_t *pinned_bytes) {
    gd_graph_t *g = NULL;
    int64_t cache_bytes = 0;
    uint64_t sum = 0;
    int rc = -1;
    const int read_indptr = modes[m].indptr == GD_PLACE_PINNED;
    if (place_graph(b, p, m, &g, gpu_bytes, pinned_bytes, &cache_bytes)) goto fail;
    BENCH_GD(gd__read_plan_replay(plan, g, read_indptr, 3, secs, &sum), "replaying the reads");
    {
        const uint64_t expect = gd__read_plan_checksum(plan, p->host_graph, read_indptr);
        BENCH_REQUIRE(sum == expect,
                      "%s: the replay read other entries than its plan (checksum %llx, CPU "
                      "%llx): no number is reported",
                      modes[m].name, (unsigned long long)sum, (unsigned long long)expect);
    }
    *edges = plan->edges;
    if (!p->probed && link_probe(b, p, g)) goto fail;
    rc = 0;
fail:
    gd_graph_destroy(g);
    return rc;
}
#endif

/* ---- report */

static int add_run(sample_bench *b, const preset_data *p, int fi, int m, int batches, double secs,
                   int64_t edges, int64_t inputs, int64_t gpu_bytes, int64_t pinned_bytes,
                   int64_t cache_bytes, double share) {
    char f[64];
    cJSON *r = cJSON_CreateObject();
    BENCH_REQUIRE(r, "out of memory building the JSON record");
    cJSON_AddItemToArray(b->jruns, r);
    BENCH_JSON(cJSON_AddStringToObject(r, "preset", p->preset));
    BENCH_JSON(cJSON_AddStringToObject(r, "fanouts",
                                       fanout_text(b->fanouts[fi], b->layers[fi], f, sizeof f)));
    BENCH_JSON(cJSON_AddStringToObject(r, "mode", modes[m].name));
    BENCH_JSON(cJSON_AddNumberToObject(r, "minibatches", batches));
    BENCH_JSON(cJSON_AddNumberToObject(r, "seconds", secs));
    BENCH_JSON(cJSON_AddNumberToObject(r, "edges", (double)edges));
    BENCH_JSON(cJSON_AddNumberToObject(r, "input_nodes", (double)inputs));
    BENCH_JSON(cJSON_AddNumberToObject(r, "seps", secs > 0 ? (double)edges / secs : 0));
    BENCH_JSON(cJSON_AddNumberToObject(r, "graph_gpu_bytes", (double)gpu_bytes));
    BENCH_JSON(cJSON_AddNumberToObject(r, "graph_pinned_bytes", (double)pinned_bytes));
    if (modes[m].cache_pct) {
        BENCH_JSON(cJSON_AddNumberToObject(r, "gpu_cache_bytes", (double)cache_bytes));
        BENCH_JSON(cJSON_AddNumberToObject(r, "cache_read_share", share));
    }
    if (is_cuda_mode(m))
        BENCH_JSON(cJSON_AddNumberToObject(r, "streams", b->streams));
    else
        BENCH_JSON(cJSON_AddNumberToObject(r, "threads", b->opt.threads));
    return 0;
fail:
    return -1;
}

/* The last run's record gets the plan's read counts (a link mode). */
static int add_link_json(sample_bench *b, const gd__read_plan *plan) {
    cJSON *r = cJSON_GetArrayItem(b->jruns, cJSON_GetArraySize(b->jruns) - 1);
    BENCH_REQUIRE(r, "no run record to extend");
    BENCH_JSON(cJSON_AddNumberToObject(r, "planned_nodes", (double)plan->num_items));
    BENCH_JSON(cJSON_AddNumberToObject(r, "list_sectors_32b", (double)plan->list_sectors));
    BENCH_JSON(cJSON_AddNumberToObject(r, "list_lines_128b", (double)plan->list_lines));
    return 0;
fail:
    return -1;
}

static int add_header_json(sample_bench *b) {
    char f[64];
    cJSON *params, *arr;
    if (bench_json_header(&b->root, "sample", &b->opt, b->gpu) != 0) goto fail;
    BENCH_JSON(params = cJSON_AddObjectToObject(b->root, "parameters"));
    BENCH_JSON(arr = cJSON_AddArrayToObject(params, "presets"));
    for (int i = 0; i < b->npresets; i++)
        BENCH_JSON(cJSON_AddItemToArray(arr, cJSON_CreateString(b->presets[i])));
    BENCH_JSON(arr = cJSON_AddArrayToObject(params, "fanouts"));
    for (int i = 0; i < b->nfsets; i++)
        BENCH_JSON(cJSON_AddItemToArray(
            arr, cJSON_CreateString(fanout_text(b->fanouts[i], b->layers[i], f, sizeof f))));
    BENCH_JSON(arr = cJSON_AddArrayToObject(params, "modes"));
    for (int m = 0; m < M_COUNT; m++)
        if (b->use[m]) BENCH_JSON(cJSON_AddItemToArray(arr, cJSON_CreateString(modes[m].name)));
    BENCH_JSON(cJSON_AddNumberToObject(params, "batch", (double)b->opt.batch));
    BENCH_JSON(cJSON_AddNumberToObject(params, "nodes", (double)b->opt.nodes));
    BENCH_JSON(cJSON_AddNumberToObject(params, "gpu_batches", b->gpu_batches));
    BENCH_JSON(cJSON_AddNumberToObject(params, "cpu_batches", b->cpu_batches));
    BENCH_JSON(cJSON_AddNumberToObject(params, "streams", b->streams));
    BENCH_JSON(cJSON_AddNumberToObject(params, "threads", b->opt.threads));
    BENCH_JSON(cJSON_AddBoolToObject(params, "replace", b->replace));
    BENCH_JSON(cJSON_AddNumberToObject(params, "link_whole_bytes_per_pick", (double)b->link_whole));
    BENCH_JSON(cJSON_AddNumberToObject(params, "seed", (double)b->opt.seed));
    BENCH_JSON(cJSON_AddBoolToObject(params, "quick", b->opt.quick));
    BENCH_JSON(b->jruns = cJSON_AddArrayToObject(b->root, "runs"));
    BENCH_JSON(b->jtargets = cJSON_AddArrayToObject(b->root, "targets"));
    BENCH_JSON(b->jprobes = cJSON_AddArrayToObject(b->root, "link_probes"));
    return 0;
fail:
    return -1;
}

static void print_targets(sample_bench *b) {
    char name[96], f[64];
    printf("\ntargets (%d CPU threads, %d CUDA streams):\n", b->opt.threads, b->streams);
    for (int pi = 0; pi < b->npresets; pi++)
        for (int fi = 0; fi < b->nfsets; fi++) {
            const double *s = b->seps[pi][fi];
            const double cpu = s[M_CPU] > s[M_CPU_PAR] ? s[M_CPU] : s[M_CPU_PAR];
            fanout_text(b->fanouts[fi], b->layers[fi], f, sizeof f);
            /* Both placements over UVA: the graph pinned, or only its indices. */
            static const int uva[2] = {M_UVA, M_UVA_INDICES};
            for (int k = 0; k < 2; k++) {
                const int m = uva[k];
                if (s[m] > 0 && cpu > 0) {
                    snprintf(name, sizeof name, "%s / cpu, %s [%s]", modes[m].name,
                             b->presets[pi], f);
                    bench_target(b->jtargets, name, s[m] / cpu, 20.0, "x");
                }
                if (s[m] > 0 && s[M_GPU] > 0) {
                    snprintf(name, sizeof name, "%s / gpu-resident, %s [%s]", modes[m].name,
                             b->presets[pi], f);
                    bench_target(b->jtargets, name, s[m] / s[M_GPU], 0.75, "x");
                }
            }
        }
}

/*
 * Every mode in use on one preset (loaded in p) and one fanout set: a table row and a JSON run
 * each, then the ratios of the CUDA samplers to the gpu-resident one and to their link ceilings.
 */
static int run_fanout_set(sample_bench *b, preset_data *p, int pi, int fi) {
    gd__read_plan plan; /* the link modes' reads, made by the first of them */
    int64_t plan_inputs = 0;
    (void)plan_inputs; /* CUDA builds only */
    memset(&plan, 0, sizeof plan);
    for (int m = 0; m < M_COUNT; m++) {
        if (!b->use[m]) continue;
        double secs = 0;
        int64_t edges = 0, inputs = 0, gbytes = 0, pbytes = 0, cbytes = 0;
        double share = -1;
        int batches = 0;
        char f[64], r1[16] = "", r2[16] = "", sc[32];
        fanout_text(b->fanouts[fi], b->layers[fi], f, sizeof f);
        fprintf(stderr, "sample: %s [%s] %s\n", p->preset, f, modes[m].name);
        if (m == M_CPU) {
            batches = b->cpu_batches;
            if (run_cpu(b, p, b->fanouts[fi], b->layers[fi], &secs, &edges, &inputs)) return -1;
        } else if (m == M_CPU_PAR) {
            batches = b->cpu_batches / 4 > 4 ? b->cpu_batches / 4 : 4;
            if (run_cpu_parallel(b, p, b->fanouts[fi], b->layers[fi], &secs, &edges, &inputs))
                return -1;
        } else {
#ifdef GD_WITH_CUDA
            if (modes[m].link) {
                const int rl =
                    build_plan(b, p, b->fanouts[fi], b->layers[fi], &plan, &plan_inputs) ||
                    run_link(b, p, m, &plan, &secs, &edges, &gbytes, &pbytes);
                batches = (int)plan.minibatches;
                inputs = plan_inputs;
                if (rl) {
                    gd__read_plan_free(&plan);
                    return -1;
                }
            } else {
                batches = b->gpu_batches;
                if (run_cuda(b, p, m, b->fanouts[fi], b->layers[fi], &secs, &edges, &inputs,
                             &gbytes, &pbytes, &cbytes, &share))
                    return -1;
            }
#endif
        }
        const double seps = secs > 0 ? (double)edges / secs : 0;
        b->seps[pi][fi][m] = seps;
        const double cpu = b->seps[pi][fi][M_CPU] > b->seps[pi][fi][M_CPU_PAR]
                               ? b->seps[pi][fi][M_CPU]
                               : b->seps[pi][fi][M_CPU_PAR];
        if (is_cuda_mode(m) && cpu > 0) snprintf(r1, sizeof r1, "%.1f", seps / cpu);
        if (is_cuda_mode(m) && b->seps[pi][fi][M_GPU] > 0)
            snprintf(r2, sizeof r2, "%.2f", seps / b->seps[pi][fi][M_GPU]);
        printf("%-9s %-10s %-20s %8d %12.0f %11.0f %9.3f %12s %8s %8s\n", p->preset, f,
               modes[m].name, batches, batches ? (double)edges / batches : 0,
               batches ? (double)inputs / batches : 0, secs, cli_count(seps, sc, sizeof sc), r1,
               r2);
        if (share >= 0)
            printf("  %s: GPU list cache %.1f MB, %.1f %% of minibatch 0's list reads\n",
                   modes[m].name, (double)cbytes / 1e6, 100 * share);
        if (modes[m].link && edges > 0)
            printf("  %s: minibatches 0-%d replayed; per sampled edge %.2f 32-byte "
                   "sectors and %.2f 128-byte lines of indices; %.1f GB/s of sectors\n",
                   modes[m].name, batches - 1, (double)plan.list_sectors / (double)edges,
                   (double)plan.list_lines / (double)edges,
                   secs > 0 ? 32.0 * (double)plan.list_sectors / secs / 1e9 : 0);
        fflush(stdout);
        if (add_run(b, p, fi, m, batches, secs, edges, inputs, gbytes, pbytes, cbytes, share) ||
            (modes[m].link && add_link_json(b, &plan))) {
            gd__read_plan_free(&plan);
            return -1;
        }
        if (cli_interrupted()) return -1;
    }
    gd__read_plan_free(&plan);
    /* The gpu ceiling runs last in the loop: print the UVA ratios to it now, and each
     * sampler's share of its link ceiling. */
    if (b->seps[pi][fi][M_GPU] > 0)
        for (int m = M_UVA; m < M_GPU; m++)
            if (b->seps[pi][fi][m] > 0)
                printf("  %s / gpu-resident: %.2f\n", modes[m].name,
                       b->seps[pi][fi][m] / b->seps[pi][fi][M_GPU]);
    for (int m = M_UVA; m < M_COUNT; m++) {
        const int of = modes[m].link ? modes[m].link - 1 : -1;
        if (of >= 0 && b->seps[pi][fi][m] > 0 && b->seps[pi][fi][of] > 0)
            printf("  %s / %s: %.2f of its link ceiling\n", modes[of].name, modes[m].name,
                   b->seps[pi][fi][of] / b->seps[pi][fi][m]);
    }
    fflush(stdout);
    return 0;
}

int bench_sample(int argc, char **argv) {
    int rc = CLI_EXIT_FAIL;
    sample_bench *b = calloc(1, sizeof *b);
    preset_data p;
    double t_start = bench_now();
    memset(&p, 0, sizeof p);
    if (!b) {
        bench_error("out of memory");
        return CLI_EXIT_FAIL;
    }
    {
        const int prc = parse_options(b, argc, argv);
        if (prc >= 0) {
            free(b);
            return prc;
        }
    }
    if (b->opt.json_path && bench_json_probe(b->opt.json_path) != 0) goto fail;
    {
        const int count = gd_device_count();
        if (gd_has_cuda() && count > 0) {
            BENCH_REQUIRE(b->opt.device < count, "GPU %d does not exist: %d GPU(s) visible (0..%d)",
                          b->opt.device, count, count - 1);
            b->gpu = 1;
            BENCH_GD(gd_context_default(b->opt.device, &b->context), "taking the GPU's context");
        } else {
            fprintf(stderr,
                    "bench sample: CUDA modes need a CUDA build and a GPU, and %s: "
                    "running the CPU modes only\n",
                    gd_has_cuda() ? "no GPU is visible" : "this build has no CUDA");
            for (int m = M_UVA; m < M_COUNT; m++) b->use[m] = 0;
        }
    }
    if (add_header_json(b) != 0) goto fail;
    printf("bench sample: batch %lld, %d CPU threads, %d CUDA streams, %s\n",
           (long long)b->opt.batch, b->opt.threads, b->streams,
           b->replace ? "with replacement" : "without replacement");
    printf("%-9s %-10s %-20s %8s %12s %11s %9s %12s %8s %8s\n", "preset", "fanouts", "mode",
           "batches", "edges/batch", "inputs/b", "seconds", "SEPS", "/cpu", "/gpu");
    for (int pi = 0; pi < b->npresets; pi++) {
        if (preset_load(b, b->presets[pi], &p) != 0) goto fail;
        for (int fi = 0; fi < b->nfsets; fi++)
            if (run_fanout_set(b, &p, pi, fi) != 0) goto fail;
        preset_release(&p);
    }
    if (b->gpu) print_targets(b);
    if (bench_run_done(&b->opt, b->root, "sample", t_start) != 0) goto fail;
    rc = 0;
fail:
    rc = bench_exit_status(rc);
    preset_release(&p);
    cJSON_Delete(b->root);
    gd_context_destroy(b->context);
    free(b);
    return rc;
}
