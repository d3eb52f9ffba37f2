/*
 * `graphdirect bench epoch`: the training epoch of each mode of docs/train.md, measured side by
 * side in one run on one generated dataset, with the all-in-GPU epoch as the ceiling
 * (docs/bench.md). For each mode a trainer is built (not timed), a short warm-up epoch runs
 * (cuBLAS handles, first-touch faults, the caches' first reads), then one epoch is timed: its
 * wall time, the busy time of each stage (sample / gather / train from stream events in the GPU
 * modes, host wall time for the CPU stages), the time training waited, CPU core-seconds
 * (getrusage, every thread of the process) and GPU memory. Then the ratios the targets of
 * issue 5 are stated in: zero-copy / all-gpu, cpu-centric / zero-copy, and CPU core-seconds
 * of zero-copy / cpu-centric.
 *
 * A mode may carry a GPU memory budget, "zero-copy@16G", to stand for a smaller GPU, and a
 * zero-copy run the way its host rows come, "zero-copy@16G:host=cpu" (issue 16: zero-copy loads,
 * CPU gather + DMA, both at once with host=split, the CPU's fraction from the probe or given
 * with ":split=0.6", or auto's probe); every zero-copy run is printed as a ratio to the all-gpu
 * epoch. The cpu
 * mode trains on the CPU, which takes minutes per epoch on the large presets: it is timed over
 * --cpu-batches minibatches and its epoch time is projected from them (marked "projected" in
 * the output and the JSON). Every mode samples and trains the same minibatches from the same
 * parameters, so the warm-up losses printed beside each mode must agree to float tolerance; a
 * mode that differs is reported as a failure, not as a time.
 */
#include "bench.h"
#include "cli.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_RUNS = 12 };

typedef struct {
    char label[64];
    char mode[16];       /* cpu, all-gpu, zero-copy or cpu-centric */
    int64_t budget;      /* --gpu-mem-budget of this run (0: none) */
    int64_t cache;       /* feature cache bytes (-1: the bench's --gpu-cache) */
    double cache_frac;   /* or a fraction of the feature table (>= 0), else -1 */
    int64_t graph_cache; /* neighbour-list cache bytes (-1: the bench's --graph-cache) */
    char sms[16];        /* gather SM budget ("": the bench's --gather-sms) */
    char host[32];       /* zero-copy's host gather ("": the bench's --host-gather) */
} run_spec;

typedef struct {
    bench_options opt; /* --preset, --nodes, --batch, --hidden, --threads, --device, --seed ... */
    int depth;
    int64_t gpu_cache, graph_cache, max_batches, warmup, cpu_batches;
    int layers, fanouts[GD_SAMPLER_MAX_LAYERS];
    const char *gather_sms;
    const char *host_gather; /* --host-gather: zero-copy runs without host= (NULL: zero-copy) */
    const char *model; /* --model: the kind every run trains (NULL: the default) */
    int heads;         /* --heads: attention heads of gat and rgat (0: 1) */
    gd_dtype dtype;    /* the generated features' (GD_DTYPE_INVALID: float32) */
    run_spec runs[MAX_RUNS];
    int nruns;
} epoch_bench;

typedef struct {
    int done;
    gd_epoch_stats st;
    double warm_loss, create_s, scale;
    gd_trainer_info info;
} run_result;

/* How a run's zero-copy host rows come: its host= or the bench's --host-gather (NULL: loads). */
static const char *run_host_gather(const epoch_bench *b, const run_spec *r) {
    return r->host[0] ? r->host : b->host_gather;
}

static void help(void) {
    gd_model_info model = GD_MODEL_INFO_INIT;
    (void)gd_model_get_info(NULL, &model);
    printf("usage: graphdirect bench epoch [options]\n\n"
           "One training epoch of %s in each mode, side by side on one generated dataset:\n"
           "epoch time and its breakdown (sample / gather / train / wait), CPU core-seconds and\n"
           "GPU memory, and the ratios zero-copy / all-gpu, cpu-centric / zero-copy and the\n"
           "CPU core-seconds of zero-copy / cpu-centric.\n\n"
           "  --preset NAME      generator preset (default products)\n"
           "  --nodes N          scale the preset to N nodes\n"
           "  --modes LIST       runs, in order (default all-gpu,zero-copy,cpu-centric); a run is\n"
           "                     MODE[:budget=SIZE][:cache=SIZE|N%%][:graph=SIZE][:sms=N|N%%]\n"
           "                     [:host=zero-copy|cpu|split|auto][:split=F] (GPU memory budget,\n"
           "                     feature cache, neighbour-list cache, gather SMs, zero-copy's\n"
           "                     host gather; split=F: host=split with the CPU's fraction F of\n"
           "                     the host rows, else the probe's); MODE@SIZE is MODE:budget=SIZE\n"
           "  --fanouts LIST     neighbours per hop (default 15,10,5: three layers)\n"
           "  --batch B          seeds per minibatch (default 1024)\n"
           "  --hidden H         hidden width (default 256)\n"
           "  --model NAME       the model every run trains (default sage; gat, and rsage,\n"
           "                     rgcn or rgat on a heterogeneous preset such as mag or mag-tiny)\n"
           "  --heads H          attention heads of gat and rgat (default 1)\n"
           "  --gpu-cache SIZE   zero-copy feature cache (default: what the budget leaves)\n"
           "  --graph-cache SIZE zero-copy neighbour-list cache (default: a quarter of what the\n"
           "                     budget leaves; three quarters for host=cpu, split or auto)\n"
           "  --gather-sms N     SMs of the gather kernel, N or N%% (default: all)\n"
           "  --host-gather H    zero-copy runs without host=: zero-copy (default), cpu, split,\n"
           "                     split=F, auto\n"
           "  --dtype T          the generated features: float32 (default), float16, bfloat16\n"
           "  --depth D          pipeline ring depth (default 3)\n"
           "  --warmup N         minibatches of the warm-up epoch (default 20)\n"
           "  --max-batches N    time only the first N minibatches of the epoch (0: all)\n"
           "  --cpu-batches N    cpu mode: minibatches timed, epoch projected (default 10)\n"
           "  --threads N        CPU threads (default: all cores)\n"
           "  --device N         the GPU (default 0)\n"
           "  --seed S           dataset and training seed (default 1)\n"
           "  --json FILE        write the results as JSON (atomically)\n"
           "  --commit TEXT      commit recorded in the JSON\n",
           model.title);
}

/*
 * A run: MODE[:key=value]...; keys: budget=SIZE (GPU memory budget), cache=SIZE or N%
 * (feature cache, N % of the feature table), graph=SIZE (neighbour-list cache), sms=N or N%
 * (gather SM budget), host=WAY (zero-copy's host rows), split=F (host=split with the CPU's
 * fraction F). "zero-copy@16G" is short for "zero-copy:budget=16G".
 */
static int parse_run(char *tok, run_spec *r) {
    snprintf(r->label, sizeof r->label, "%s", tok);
    r->budget = 0;
    r->cache = -1;
    r->cache_frac = -1;
    r->graph_cache = -1;
    r->sms[0] = 0;
    r->host[0] = 0;
    char *at = strchr(tok, '@'), *save = NULL;
    if (at) {
        /* MODE@SIZE[:key=value...]: the size ends at the next ':', the keys follow the mode. */
        char *rest = strchr(at + 1, ':');
        if (rest) *rest = 0;
        if (cli_parse_i64(at + 1, &r->budget) || r->budget < 1) {
            bench_error("--modes: '%s' is not a GPU memory size (e.g. 16G)", at + 1);
            return -1;
        }
        *at = 0;
        if (rest) memmove(at + 1, rest + 1, strlen(rest + 1) + 1), *at = ':';
    }
    char *mode = strtok_r(tok, ":", &save);
    for (char *kv = strtok_r(NULL, ":", &save); kv; kv = strtok_r(NULL, ":", &save)) {
        char *eq = strchr(kv, '=');
        int64_t v = 0;
        if (!eq) goto bad;
        *eq = 0;
        const char *val = eq + 1;
        if (strcmp(kv, "budget") == 0) {
            if (cli_parse_i64(val, &r->budget) || r->budget < 1) goto bad;
        } else if (strcmp(kv, "cache") == 0) {
            size_t n = strlen(val);
            if (n > 1 && val[n - 1] == '%') {
                double f = strtod(val, NULL);
                if (f < 0 || f > 100) goto bad;
                r->cache_frac = f / 100.0;
            } else if (cli_parse_i64(val, &r->cache) || r->cache < 0) {
                goto bad;
            }
        } else if (strcmp(kv, "graph") == 0) {
            if (cli_parse_i64(val, &v) || v < 0) goto bad;
            r->graph_cache = v;
        } else if (strcmp(kv, "sms") == 0) {
            snprintf(r->sms, sizeof r->sms, "%s", val);
        } else if (strcmp(kv, "host") == 0) {
            if (!cli_host_gather_ok(val) || (r->host[0] && strcmp(val, "split"))) goto bad;
            if (!r->host[0]) snprintf(r->host, sizeof r->host, "%s", val);
        } else if (strcmp(kv, "split") == 0) {
            /* split=F: host=split with that fraction; host= may name split too, not another. */
            char way[32];
            snprintf(way, sizeof way, "split=%s", val);
            if (!cli_host_gather_ok(way) || (r->host[0] && strcmp(r->host, "split"))) goto bad;
            snprintf(r->host, sizeof r->host, "%s", way);
        } else {
            goto bad;
        }
    }
    if (!mode || gd_train_mode_check(mode) != GD_OK || strcmp(mode, "auto") == 0) {
        bench_error("--modes: '%s' is not cpu, all-gpu, zero-copy or cpu-centric",
                    mode ? mode : "");
        return -1;
    }
    snprintf(r->mode, sizeof r->mode, "%s", mode);
    return 0;
bad:
    bench_error("--modes: '%s' is not a run: MODE[:budget=SIZE][:cache=SIZE|N%%][:graph=SIZE]"
                "[:sms=N|N%%][:host=zero-copy|cpu|split|auto][:split=F]",
                r->label);
    return -1;
}

static int parse_modes(epoch_bench *b, const char *text) {
    char buf[512];
    snprintf(buf, sizeof buf, "%s", text);
    b->nruns = 0;
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        if (b->nruns == MAX_RUNS) {
            bench_error("--modes: at most %d runs", MAX_RUNS);
            return -1;
        }
        if (parse_run(tok, &b->runs[b->nruns])) return -1;
        b->nruns++;
    }
    return b->nruns ? 0 : -1;
}

static int parse_fanouts(epoch_bench *b, const char *text) {
    return bench_parse_fanouts(text, -1, 100000, 1, &b->fanouts, &b->layers, NULL);
}

/* The command named in usage errors. */
static const char cmd[] = "bench epoch";

/* An option of this driver alone: 0, an exit status, or -1 for a shared option. */
static int own_option(void *self, int c, const char *arg) {
    epoch_bench *b = self;
    int64_t v;
    switch (c) {
    case 'm':
        if (parse_modes(b, arg)) return CLI_EXIT_USAGE;
        break;
    case 'f':
        if (parse_fanouts(b, arg)) return CLI_EXIT_USAGE;
        break;
    case 'c':
        if (cli_parse_i64(arg, &v) || v < 0)
            return cli_usage_error(cmd, "--gpu-cache '%s' is not a size", arg);
        b->gpu_cache = v;
        break;
    case 'g':
        if (cli_parse_i64(arg, &v) || v < 0)
            return cli_usage_error(cmd, "--graph-cache '%s' is not a size", arg);
        b->graph_cache = v;
        break;
    case 'S':
        b->gather_sms = arg;
        break;
    case 'X':
        if (!cli_host_gather_ok(arg))
            return cli_usage_error(cmd,
                                   "--host-gather '%s' is none of zero-copy, cpu, split, "
                                   "split=F (F in [0, 1]), auto",
                                   arg);
        b->host_gather = arg;
        break;
    case 't':
        if (gd_dtype_parse(arg, &b->dtype) != GD_OK ||
            (b->dtype != GD_DTYPE_FLOAT32 && b->dtype != GD_DTYPE_FLOAT16 &&
             b->dtype != GD_DTYPE_BFLOAT16))
            return cli_usage_error(cmd, "--dtype '%s' is not float32, float16 or bfloat16", arg);
        break;
    case 'R':
        if (cli_parse_i64(arg, &v) || v < 2 || v > 8)
            return cli_usage_error(cmd, "--depth '%s' is not in 2..8", arg);
        b->depth = (int)v;
        break;
    case 'w':
        if (cli_parse_i64(arg, &v) || v < 1)
            return cli_usage_error(cmd, "--warmup '%s' is not a positive count", arg);
        b->warmup = v;
        break;
    case 'M':
        if (cli_parse_i64(arg, &v) || v < 0)
            return cli_usage_error(cmd, "--max-batches '%s' is not a count", arg);
        b->max_batches = v;
        break;
    case 'C':
        if (cli_parse_i64(arg, &v) || v < 1)
            return cli_usage_error(cmd, "--cpu-batches '%s' is not a positive count", arg);
        b->cpu_batches = v;
        break;
    case 'k':
        b->model = arg; /* the trainer names the kinds it knows when it refuses one */
        break;
    case 'H':
        if (cli_parse_i64(arg, &v) || v < 1 || v > 64)
            return cli_usage_error(cmd, "--heads '%s' is not in 1..64", arg);
        b->heads = (int)v;
        break;
    default:
        return -1;
    }
    return 0;
}

static int parse_options(epoch_bench *b, int argc, char **argv) {
    static const struct option long_opts[] = {BENCH_LONG("preset", PRESET),
                                              BENCH_LONG("nodes", NODES),
                                              {"modes", required_argument, 0, 'm'},
                                              {"fanouts", required_argument, 0, 'f'},
                                              BENCH_LONG("batch", BATCH),
                                              BENCH_LONG("hidden", HIDDEN),
                                              {"gpu-cache", required_argument, 0, 'c'},
                                              {"graph-cache", required_argument, 0, 'g'},
                                              {"gather-sms", required_argument, 0, 'S'},
                                              {"host-gather", required_argument, 0, 'X'},
                                              {"dtype", required_argument, 0, 't'},
                                              {"depth", required_argument, 0, 'R'},
                                              {"warmup", required_argument, 0, 'w'},
                                              {"max-batches", required_argument, 0, 'M'},
                                              {"cpu-batches", required_argument, 0, 'C'},
                                              {"model", required_argument, 0, 'k'},
                                              {"heads", required_argument, 0, 'H'},
                                              BENCH_LONG("threads", THREADS),
                                              BENCH_LONG_END};
    int rc;
    bench_options_init(&b->opt);
    b->opt.preset = "products";
    b->gpu_cache = -1;
    b->graph_cache = -1;
    b->depth = 3;
    b->warmup = 20;
    b->cpu_batches = 10;
    if (parse_modes(b, "all-gpu,zero-copy,cpu-centric") || parse_fanouts(b, "15,10,5"))
        return CLI_EXIT_FAIL;
    if ((rc = bench_parse_options(&b->opt, cmd, argc, argv, long_opts, help, own_option, b)) != -1)
        return rc;
    return -1;
}

/* The element type of ds's feature table. */
static gd_dtype feature_dtype(const gd_dataset_t *ds) {
    gd_array_view fv;
    if (gd_dataset_array(ds, GD_ARRAY_FEATURES, &fv) != GD_OK) {
        gd_clear_error();
        return GD_DTYPE_FLOAT32;
    }
    return fv.dtype;
}

/*
 * The bytes of the feature tables, what cache=N% is a share of: the one table, or every node
 * type's of a heterogeneous dataset (whose per-type caches share the cache budget).
 */
static double table_bytes(const gd_dataset_t *ds) {
    double bytes = 0;
    if (gd_dataset_num_node_types(ds) == 0)
        return (double)gd_dataset_num_nodes(ds) * (double)gd_dataset_feature_dim(ds) *
               (double)gd_dtype_size(feature_dtype(ds));
    for (int t = 0; t < gd_dataset_num_node_types(ds); t++) {
        gd_array_view f;
        if (gd_dataset_type_features(ds, t, &f) != GD_OK) {
            gd_clear_error(); /* a type without features */
            continue;
        }
        bytes += (double)f.shape[0] * (double)f.shape[1] * (double)gd_dtype_size(f.dtype);
    }
    return bytes;
}

/* Build the trainer of run r, warm it up, time one epoch. 0 or -1 (message printed). */
static int run_mode(const epoch_bench *b, const gd_dataset_t *ds, const run_spec *r,
                    run_result *out) {
    int rc = -1;
    gd_trainer_t *t = NULL;
    gd_train_options cfg = GD_TRAIN_OPTIONS_INIT;
    const int cpu = strcmp(r->mode, "cpu") == 0;
    cfg.num_layers = b->layers;
    memcpy(cfg.fanouts, b->fanouts, sizeof cfg.fanouts);
    cfg.batch_size = b->opt.batch;
    cfg.hidden = b->opt.hidden;
    cfg.model = b->model;
    cfg.heads = b->heads;
    cfg.seed = b->opt.seed;
    cfg.threads = b->opt.threads;
    cfg.mode = r->mode;
    cfg.device = b->opt.device;
    cfg.gpu_cache_bytes = r->cache >= 0 ? r->cache : b->gpu_cache;
    if (r->cache_frac >= 0)
        cfg.gpu_cache_bytes = (int64_t)(r->cache_frac * table_bytes(ds));
    cfg.graph_cache_bytes = r->graph_cache >= 0 ? r->graph_cache : b->graph_cache;
    cfg.gpu_mem_budget = r->budget;
    cfg.gather_sms = r->sms[0] ? r->sms : b->gather_sms;
    cfg.host_gather = run_host_gather(b, r);
    cfg.depth = b->depth;
    fprintf(stderr, "epoch: %s: building the trainer\n", r->label);
    double t0 = bench_now();
    BENCH_GD(gd_trainer_create(ds, &cfg, &t), r->label);
    out->create_s = bench_now() - t0;
    out->info = (gd_trainer_info)GD_TRAINER_INFO_INIT;
    BENCH_GD(gd_trainer_get_info(t, &out->info), r->label);
    fprintf(stderr, "epoch: %s: %s (%.1f s); warm-up of %lld minibatches\n", r->label,
            out->info.plan, out->create_s, (long long)b->warmup);
    gd_epoch_stats warm;
    BENCH_GD(bench_one_epoch(t, 0, b->warmup, &warm), "the warm-up epoch");
    out->warm_loss = warm.loss;
    const int64_t all = (out->info.train_nodes + b->opt.batch - 1) / b->opt.batch;
    int64_t timed = b->max_batches ? b->max_batches : all;
    if (cpu) timed = b->cpu_batches < timed ? b->cpu_batches : timed;
    fprintf(stderr, "epoch: %s: timing %lld of %lld minibatches\n", r->label, (long long)timed,
            (long long)all);
    BENCH_GD(bench_one_epoch(t, 1, timed, &out->st), "the timed epoch");
    {
        /* host=auto: its trial ran in these epochs; the plan now names the way it kept (the
         * timed epoch includes the rest of the trial, the slower ways too). */
        gd_trainer_info after = GD_TRAINER_INFO_INIT;
        BENCH_GD(gd_trainer_get_info(t, &after), r->label);
        const char *kept = strstr(after.plan, "; auto kept ");
        if (kept) fprintf(stderr, "epoch: %s: %s\n", r->label, kept + 2);
        out->info = after;
    }
    out->scale = cpu ? (double)all / (double)out->st.batches : 1.0;
    out->done = 1;
    rc = 0;
fail:
    gd_trainer_destroy(t);
    return rc;
}

/*
 * The ceiling of a CPU gather of host rows (--host-gather cpu and split): the library's CPU
 * gather (a "cpu" gatherer: the routine whose threads copy the rows the GPU lists into pinned
 * staging) of random rows of the dataset's feature table into one buffer, the best of three
 * passes: GB/s (1e9 bytes), and the rows a pass copies. Up to 256 MiB of rows, drawn uniformly
 * over the table.
 */
static int cpu_gather_ceiling(const gd_dataset_t *ds, int threads, uint64_t seed, double *gbs,
                              int64_t *rows_out) {
    int rc = -1;
    gd_array_view v;
    int64_t *ids = NULL;
    char *dst = NULL;
    gd_host_tensor_t *table = NULL;
    gd_gatherer_t *g = NULL;
    BENCH_GD(gd_dataset_array(ds, GD_ARRAY_FEATURES, &v), "reading the feature table");
    const int64_t rows = v.shape[0], cols = v.ndim > 1 ? v.shape[1] : 1;
    const size_t rb = (size_t)cols * gd_dtype_size(v.dtype);
    int64_t n = ((int64_t)256 << 20) / (int64_t)rb;
    if (n > rows) n = rows;
    BENCH_REQUIRE(n > 0 && rb > 0, "the feature table is empty: no CPU gather ceiling");
    ids = malloc((size_t)n * sizeof *ids);
    dst = malloc((size_t)n * rb);
    BENCH_REQUIRE(ids && dst, "out of memory for the CPU gather ceiling (%lld rows)", (long long)n);
    bench_random_ids(ids, n, n, rows, seed, threads);
    bench_fill_pattern(dst, (size_t)n * rb, threads);
    gd_gatherer_options o = GD_GATHERER_OPTIONS_INIT;
    o.max_ids = n;
    o.threads = threads;
    BENCH_GD(gd_host_tensor_adopt(v.data, rows, cols, v.dtype, 0u, &table), "wrapping the table");
    BENCH_GD(gd_gatherer_create(table, NULL, GD_GATHER_CPU, &o, &g), "a CPU gatherer");
    double best = 0;
    for (int rep = 0; rep < 3; rep++) {
        const double t0 = bench_now();
        BENCH_GD(gd_gather(g, ids, n, 0, dst, NULL), "the CPU gather");
        const double dt = bench_now() - t0;
        if (best == 0 || dt < best) best = dt;
    }
    *gbs = best > 0 ? (double)n * (double)rb / best / 1e9 : 0;
    *rows_out = n;
    rc = 0;
fail:
    gd_gatherer_destroy(g);
    gd_host_tensor_destroy(table);
    free(ids);
    free(dst);
    return rc;
}

/* The first finished run of mode (by its mode, whatever its label says). */
static const run_result *find_mode(const epoch_bench *b, const run_result *res, const char *mode) {
    for (int i = 0; i < b->nruns; i++)
        if (res[i].done && strcmp(b->runs[i].mode, mode) == 0) return &res[i];
    return NULL;
}

static const run_result *find(const epoch_bench *b, const run_result *res, const char *mode) {
    for (int i = 0; i < b->nruns; i++)
        if (res[i].done && strcmp(b->runs[i].label, mode) == 0) return &res[i];
    return NULL;
}

/* The "config" object of the JSON record: the dataset and the settings every run shares. */
static int add_config_json(const epoch_bench *b, cJSON *root, gd_dataset_t *ds) {
    cJSON *cfgj = cJSON_AddObjectToObject(root, "config");
    BENCH_JSON(cfgj);
    BENCH_JSON(cJSON_AddStringToObject(cfgj, "preset", b->opt.preset));
    BENCH_JSON(cJSON_AddNumberToObject(cfgj, "nodes", (double)gd_dataset_num_nodes(ds)));
    BENCH_JSON(cJSON_AddNumberToObject(cfgj, "edges", (double)gd_dataset_num_edges(ds)));
    BENCH_JSON(cJSON_AddNumberToObject(cfgj, "layers", b->layers));
    cJSON *fj = cJSON_AddArrayToObject(cfgj, "fanouts");
    BENCH_JSON(fj);
    for (int h = 0; h < b->layers; h++) cJSON_AddItemToArray(fj, cJSON_CreateNumber(b->fanouts[h]));
    BENCH_JSON(cJSON_AddNumberToObject(cfgj, "batch", (double)b->opt.batch));
    BENCH_JSON(cJSON_AddNumberToObject(cfgj, "hidden", (double)b->opt.hidden));
    BENCH_JSON(cJSON_AddStringToObject(cfgj, "model", b->model ? b->model : "sage"));
    BENCH_JSON(cJSON_AddNumberToObject(cfgj, "heads", b->heads > 0 ? b->heads : 1));
    BENCH_JSON(cJSON_AddStringToObject(cfgj, "feature_dtype", gd_dtype_name(feature_dtype(ds))));
    BENCH_JSON(cJSON_AddNumberToObject(cfgj, "threads", b->opt.threads));
    BENCH_JSON(cJSON_AddNumberToObject(cfgj, "depth", b->depth));
    BENCH_JSON(cJSON_AddNumberToObject(cfgj, "warmup_batches", (double)b->warmup));
    return 0;
fail:
    return -1;
}

/* One run's object in the "results" array, its times projected to a whole epoch (r->scale). */
static int add_result_json(cJSON *runs, const run_spec *spec, const run_result *r) {
    const gd_epoch_stats *s = &r->st;
    const double k = r->scale;
    cJSON *o = cJSON_CreateObject();
    BENCH_JSON(o);
    cJSON_AddItemToArray(runs, o);
    BENCH_JSON(cJSON_AddStringToObject(o, "mode", spec->label));
    BENCH_JSON(cJSON_AddStringToObject(o, "plan", r->info.plan));
    BENCH_JSON(cJSON_AddStringToObject(o, "host_gather", spec->host));
    BENCH_JSON(cJSON_AddNumberToObject(o, "gpu_mem_budget", (double)spec->budget));
    BENCH_JSON(cJSON_AddNumberToObject(o, "minibatches_timed", (double)s->batches));
    BENCH_JSON(cJSON_AddBoolToObject(o, "projected", k != 1.0));
    BENCH_JSON(cJSON_AddNumberToObject(o, "epoch_s", s->seconds * k));
    BENCH_JSON(cJSON_AddNumberToObject(o, "sample_s", s->sample_s * k));
    BENCH_JSON(cJSON_AddNumberToObject(o, "gather_s", s->gather_s * k));
    BENCH_JSON(cJSON_AddNumberToObject(o, "train_s", s->train_s * k));
    BENCH_JSON(cJSON_AddNumberToObject(o, "wait_s", s->wait_s * k));
    BENCH_JSON(cJSON_AddNumberToObject(o, "train_ms_per_minibatch",
                                       s->batches ? 1e3 * s->train_s / (double)s->batches : 0));
    BENCH_JSON(cJSON_AddNumberToObject(o, "cpu_core_s", s->cpu_core_s * k));
    BENCH_JSON(cJSON_AddNumberToObject(o, "gpu_mem_bytes", (double)s->gpu_mem_bytes));
    BENCH_JSON(cJSON_AddNumberToObject(o, "trainer_gpu_bytes", (double)r->info.gpu_bytes));
    BENCH_JSON(
        cJSON_AddNumberToObject(o, "feature_cache_bytes", (double)r->info.feature_cache_bytes));
    BENCH_JSON(cJSON_AddNumberToObject(o, "graph_cache_bytes", (double)r->info.graph_cache_bytes));
    BENCH_JSON(cJSON_AddNumberToObject(o, "create_s", r->create_s));
    BENCH_JSON(cJSON_AddNumberToObject(o, "warmup_loss", r->warm_loss));
    BENCH_JSON(cJSON_AddNumberToObject(o, "loss", s->loss));
    BENCH_JSON(cJSON_AddNumberToObject(o, "host_rows_copied", (double)s->host_rows_copied * k));
    BENCH_JSON(cJSON_AddNumberToObject(o, "host_bytes_copied", (double)s->host_bytes_copied * k));
    return 0;
fail:
    return -1;
}

int bench_epoch(int argc, char **argv) {
    epoch_bench b;
    memset(&b, 0, sizeof b);
    int rc = parse_options(&b, argc, argv);
    if (rc >= 0) return rc;
    rc = CLI_EXIT_FAIL;
    gd_dataset_t *ds = NULL;
    cJSON *root = NULL, *runs = NULL, *targets = NULL;
    run_result res[MAX_RUNS];
    memset(res, 0, sizeof res);
    int any_gpu = 0;
    for (int i = 0; i < b.nruns; i++) any_gpu |= strcmp(b.runs[i].mode, "cpu") != 0;
    if (b.opt.json_path && bench_json_probe(b.opt.json_path)) return CLI_EXIT_FAIL;
    if (bench_json_header(&root, "epoch", &b.opt, any_gpu)) goto fail;

    fprintf(stderr, "epoch: generating preset '%s' in memory\n", b.opt.preset);
    double t0 = bench_now();
    gd_generate_options go = GD_GENERATE_OPTIONS_INIT;
    go.preset = b.opt.preset;
    go.seed = b.opt.seed;
    go.num_nodes = b.opt.nodes;
    go.feature_dtype = b.dtype;
    BENCH_GD(gd_generate(&go, &ds), "generating the dataset");
    fprintf(stderr, "epoch: %s: %lld nodes, %lld edges, %lld features, %lld classes (%.1f s)\n",
            b.opt.preset, (long long)gd_dataset_num_nodes(ds), (long long)gd_dataset_num_edges(ds),
            (long long)gd_dataset_feature_dim(ds), (long long)gd_dataset_num_classes(ds),
            bench_now() - t0);

    if (add_config_json(&b, root, ds)) goto fail;
    runs = cJSON_AddArrayToObject(root, "results");
    BENCH_JSON(runs);

    printf("%-26s %8s %9s %8s %8s %8s %8s %9s %9s %9s %10s\n", "mode", "batches", "epoch_s",
           "sample", "gather", "train", "wait", "train_ms", "cpu_cs", "gpu_GiB", "warm_loss");
    for (int i = 0; i < b.nruns; i++) {
        if (run_mode(&b, ds, &b.runs[i], &res[i])) goto fail;
        const run_result *r = &res[i];
        const gd_epoch_stats *s = &r->st;
        const double k = r->scale;
        printf("%-26s %8lld %9.3f %8.3f %8.3f %8.3f %8.3f %9.3f %9.2f %9.2f %10.5f%s\n",
               b.runs[i].label, (long long)s->batches, s->seconds * k, s->sample_s * k,
               s->gather_s * k, s->train_s * k, s->wait_s * k,
               s->batches ? 1e3 * s->train_s / (double)s->batches : 0, s->cpu_core_s * k,
               (double)s->gpu_mem_bytes / (double)(INT64_C(1) << 30), r->warm_loss,
               k != 1.0 ? "  (projected from the timed minibatches)" : "");
        fflush(stdout);
        if (add_result_json(runs, &b.runs[i], r)) goto fail;
    }

    /* Every mode trained the same warm-up minibatches from the same parameters. */
    for (int i = 1; i < b.nruns; i++) {
        const double a = res[0].warm_loss, c = res[i].warm_loss;
        BENCH_REQUIRE(fabs(a - c) <= 2e-3 * fabs(a) + 1e-4,
                      "%s and %s disagree on the warm-up loss (%.6f vs %.6f): the modes must "
                      "train the same minibatches the same way",
                      b.runs[0].label, b.runs[i].label, a, c);
    }

    /*
     * The runs whose CPU threads copied host rows (--host-gather cpu, split, auto's choice):
     * those bytes at the CPU gather rate of this machine, measured here, are a floor of the
     * epoch's gather stage whatever the pipeline overlaps.
     */
    int any_copied = 0;
    for (int i = 0; i < b.nruns; i++) any_copied |= res[i].done && res[i].st.host_bytes_copied > 0;
    if (any_copied) {
        double cgbs = 0;
        int64_t crows = 0;
        const int threads = b.opt.threads > 0 ? b.opt.threads : bench_cpus();
        if (cpu_gather_ceiling(ds, threads, b.opt.seed, &cgbs, &crows)) goto fail;
        printf("ceiling: %d CPU threads gathering %lld random rows of the table: %.1f GB/s\n",
               threads, (long long)crows, cgbs);
        cJSON *cj = cJSON_AddObjectToObject(root, "ceilings");
        BENCH_JSON(cj);
        BENCH_JSON(cJSON_AddNumberToObject(cj, "cpu_gather_gbs", cgbs));
        BENCH_JSON(cJSON_AddNumberToObject(cj, "cpu_gather_threads", threads));
        const run_result *all = find_mode(&b, res, "all-gpu");
        for (int i = 0; i < b.nruns && cgbs > 0; i++) {
            const double gb = (double)res[i].st.host_bytes_copied * res[i].scale / 1e9;
            if (!res[i].done || gb <= 0) continue;
            printf("%s: CPU threads copied %.2f GB of host rows in the epoch: at %.1f GB/s >= "
                   "%.3f s of gather",
                   b.runs[i].label, gb, cgbs, gb / cgbs);
            if (all) printf(" (%.2fx the all-gpu epoch)", gb / cgbs / all->st.seconds);
            printf("\n");
        }
#ifdef GD_WITH_CUDA
        /*
         * A run whose CPU threads copied every host row (--host-gather cpu) counted the bytes
         * that any zero-copy run with the same cache must bring over PCIe in the epoch: at the
         * pinned DMA bandwidth measured here, a floor of every zero-copy run's gather stage.
         */
        const run_result *full = NULL;
        const char *full_label = NULL;
        for (int i = 0; i < b.nruns; i++) {
            const char *way = run_host_gather(&b, &b.runs[i]);
            if (res[i].done && way && strcmp(way, "cpu") == 0 && res[i].st.host_bytes_copied > 0 &&
                (!full || res[i].st.host_bytes_copied > full->st.host_bytes_copied)) {
                full = &res[i];
                full_label = b.runs[i].label;
            }
        }
        if (full) {
            double dma = 0;
            const int dev = b.opt.device;
            if (bench_dma_gbs(&dev, 1, &dma)) goto fail;
            const double gb = (double)full->st.host_bytes_copied * full->scale / 1e9;
            printf("ceiling: pinned host-to-GPU DMA %.1f GB/s; the %.2f GB of host rows %s copied "
                   "take >= %.3f s over PCIe",
                   dma, gb, full_label, gb / dma);
            if (all) printf(" (%.2fx the all-gpu epoch)", gb / dma / all->st.seconds);
            printf("\n");
            BENCH_JSON(cJSON_AddNumberToObject(cj, "host_dma_gbs", dma));
            BENCH_JSON(cJSON_AddNumberToObject(cj, "host_rows_gb", gb));
            BENCH_JSON(cJSON_AddNumberToObject(cj, "pcie_floor_s", gb / dma));
        }
#endif
    }

    targets = cJSON_AddArrayToObject(root, "targets");
    BENCH_JSON(targets);
    const run_result *ag = find(&b, res, "all-gpu"), *zc = find(&b, res, "zero-copy"),
                     *cc = find(&b, res, "cpu-centric");
    if (zc && ag) {
        printf("zero-copy / all-gpu epoch: %.3f (target <= 1.10)\n",
               zc->st.seconds / ag->st.seconds);
        bench_target(targets, "all-gpu / zero-copy epoch (>= 1/1.10)",
                     ag->st.seconds / zc->st.seconds, 1.0 / 1.10, "x");
    }
    /* Every zero-copy run (each budget, each host gather) against the all-gpu ceiling. */
    const run_result *ag_any = find_mode(&b, res, "all-gpu");
    for (int i = 0; ag_any && i < b.nruns; i++) {
        if (!res[i].done || strcmp(b.runs[i].mode, "zero-copy") != 0) continue;
        char what[128];
        printf("%s / all-gpu epoch: %.3f\n", b.runs[i].label,
               res[i].st.seconds / ag_any->st.seconds);
        snprintf(what, sizeof what, "all-gpu / %s epoch (issue 16: >= 1/2.0)", b.runs[i].label);
        bench_target(targets, what, ag_any->st.seconds / res[i].st.seconds, 1.0 / 2.0, "x");
    }
    if (zc && cc) {
        printf("cpu-centric / zero-copy epoch: %.3f (target >= 3)\n",
               cc->st.seconds / zc->st.seconds);
        bench_target(targets, "cpu-centric / zero-copy epoch", cc->st.seconds / zc->st.seconds, 3.0,
                     "x");
        printf("CPU core-seconds zero-copy / cpu-centric: %.3f (target <= 0.10)\n",
               zc->st.cpu_core_s / cc->st.cpu_core_s);
        bench_target(targets, "cpu-centric / zero-copy CPU core-seconds (>= 10)",
                     cc->st.cpu_core_s / (zc->st.cpu_core_s > 0 ? zc->st.cpu_core_s : 1e-9), 10.0,
                     "x");
    }
    if (b.opt.json_path && bench_json_write(b.opt.json_path, root)) goto fail;
    rc = 0;
fail:
    cJSON_Delete(root);
    gd_dataset_close(ds);
    return rc;
}
