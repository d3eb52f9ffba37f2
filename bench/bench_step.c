/*
 * `graphdirect bench step`: the time of one training step of the default model (src/nn/model.h,
 * timed through src/instrument/step.h)
 * on the CUDA nn backend, on the blocks of real sampled minibatches, set against the same step
 * in PyTorch + PyG, which bench/pyg_step.py runs on the very blocks this benchmark dumps
 * (docs/nn.md, "Speed").
 *
 * The data path up to the step is the all-gpu one: the preset is generated in memory, the graph
 * is placed in GPU memory, the CUDA sampler draws each minibatch and the gpu gatherer copies its
 * input rows out of the GPU-resident feature table, all on the nn context's stream. Only the
 * nn step is timed, with CUDA events around it: forward with dropout, softmax cross-entropy,
 * zeroing the gradients, backward and the Adam step (what the trainer runs for a minibatch, less
 * the accuracy count). Every step is waited for before the next minibatch is sampled, so nothing
 * else shares the GPU while it runs. The model is sized as the trainer sizes it (src/train/
 * trainer.c): each layer for the worst case of its hop.
 *
 * --breakdown runs the timed minibatches a second time with the backend's op table wrapped so
 * that every op is bracketed by a pair of events, and reports the milliseconds per step of each
 * kind of op (the events add small gaps, so the step time of that pass is reported beside it).
 * --dump DIR writes the blocks and labels of the timed minibatches as .npy files with a
 * meta.json (written last, so a dump without it is incomplete); docs/nn.md gives the layout.
 *
 * The relational models (--model rsage, rgcn, rgat) run on a heterogeneous preset through the
 * heterogeneous trainer's data path instead (a typed step of step.h: typed sampling and the
 * per-type gather on the CPU, the minibatch copied to the GPU, then the timed step); their
 * dump adds the typed blocks, the per-type input rows and tables, the relations and the initial
 * parameters, which bench/pyg_hetero_step.py loads into PyG (docs/bench.md). --cpu runs their
 * model on the CPU backend, so that the benchmark and its dump are tested without a GPU.
 */
#include "bench.h"
#include "cli.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* The timed step: benchmark instrumentation (the gd_instrument library). */
#include "instrument/step.h"

enum { MAX_STEPS = 100000 };

typedef struct {
    /* options */
    bench_options opt; /* --preset, --nodes, --batch, --hidden, --device, --seed, --json ... */
    int fanouts[GD_SAMPLER_MAX_LAYERS], layers;
    int steps, warmup, breakdown;
    double dropout, lr, attn_dropout;
    const char *dump_dir;
    const char *model; /* NULL: GraphSAGE */
    int heads;
    const char *relation_fanouts; /* rsage, rgat: per (hop, edge type), as train's */
    int cpu;                      /* rsage, rgat: the model on the CPU backend (a test run) */
} step_bench;

/* The relational models, which train on heterogeneous presets (mag, igbh-*). */
static int typed_model(const step_bench *b) {
    return b->model && (strcmp(b->model, "rsage") == 0 || strcmp(b->model, "rgcn") == 0 ||
                        strcmp(b->model, "rgat") == 0);
}

static void help(void) {
    printf("usage: graphdirect bench step [options]\n\n"
           "The time of one %s training step (forward, cross-entropy, backward, Adam) on\n"
           "the CUDA nn backend over sampled minibatches of a generated preset, the graph and\n"
           "the features in GPU memory. --dump writes the timed blocks so that\n"
           "bench/pyg_step.py runs the same steps in PyTorch + PyG (docs/nn.md, \"Speed\").\n\n"
           "options:\n"
           "  --preset NAME      generator preset (default products; relational: mag)\n"
           "  --nodes N          scale the preset to N nodes (default: the preset's)\n"
           "  --fanouts LIST     neighbours per hop, seeds first (default 15,10,5;\n"
           "                     relational: 10,5 for every edge type)\n"
           "  --batch N          seeds per minibatch (default 1024)\n"
           "  --hidden N         hidden width (default 256)\n"
           "  --dropout P        dropout between layers (default 0.5)\n"
           "  --model NAME       sage (default), gat, or the relational rsage, rgcn, rgat on a\n"
           "                     heterogeneous preset; gat, rgat: --heads N (1),\n"
           "                     --attn-dropout P (0)\n"
           "  --relation-fanouts TEXT  relational: per (hop, edge type) fanouts, as train's\n"
           "                     (\"cites=5,writes=3;cites=2\")\n"
           "  --cpu              relational: run the model on the CPU backend, timed by the\n"
           "                     host clock (a test of the benchmark and its dump, no measurement)\n"
           "  --lr X             Adam learning rate (default 0.003)\n"
           "  --steps N          timed steps, each on its own minibatch (default 50)\n"
           "  --warmup N         untimed steps first (default 10)\n"
           "  --breakdown        time every op of the timed steps again (ms per op kind)\n"
           "  --dump DIR         write the timed blocks, labels and meta.json to DIR\n"
           "  --device N         GPU (default 0)\n"
           "  --seed N           graph, sampling, shuffle and initialisation (default 1)\n"
           "  --json FILE        write every parameter and measurement\n"
           "  --commit TEXT      commit recorded in the JSON (default: the configure-time one)\n",
           gd_instrument_step_model_title());
}

static int parse_fanouts(step_bench *b, const char *text) {
    return bench_parse_fanouts(text, 1, 100000, 1, &b->fanouts, &b->layers, NULL);
}

/* The command named in usage errors. */
static const char cmd[] = "bench step";

/* An option of this driver alone: 0, an exit status, or -1 for a shared option. */
static int own_option(void *self, int c, const char *arg) {
    step_bench *b = self;
    int64_t v;
    double x;
    switch (c) {
    case 'f':
        if (parse_fanouts(b, arg)) return CLI_EXIT_USAGE;
        break;
    case 'D':
        if (cli_parse_double(arg, &x) || !(x >= 0 && x < 1))
            return cli_usage_error(cmd, "--dropout '%s' is not a probability in [0, 1)", arg);
        b->dropout = x;
        break;
    case 'l':
        if (cli_parse_double(arg, &x) || !(x > 0 && x < 1e3))
            return cli_usage_error(cmd, "--lr '%s' is not a positive learning rate", arg);
        b->lr = x;
        break;
    case 'n':
        if (cli_parse_i64(arg, &v) || v < 1 || v > MAX_STEPS)
            return cli_usage_error(cmd, "--steps '%s' is not a count in [1, %d]", arg, MAX_STEPS);
        b->steps = (int)v;
        break;
    case 'w':
        if (cli_parse_i64(arg, &v) || v < 0 || v > MAX_STEPS)
            return cli_usage_error(cmd, "--warmup '%s' is not a count in [0, %d]", arg, MAX_STEPS);
        b->warmup = (int)v;
        break;
    case 'B':
        b->breakdown = 1;
        break;
    case 'u':
        b->dump_dir = arg;
        break;
    case 'M':
        b->model = arg;
        break;
    case 'A':
        if (cli_parse_i64(arg, &v) || v < 1 || v > 64)
            return cli_usage_error(cmd, "--heads '%s' is not in 1..64", arg);
        b->heads = (int)v;
        break;
    case 'R':
        b->relation_fanouts = arg;
        break;
    case 'c':
        b->cpu = 1;
        break;
    case 'a':
        if (cli_parse_double(arg, &x) || !(x >= 0 && x < 1))
            return cli_usage_error(cmd, "--attn-dropout '%s' is not a probability in [0, 1)",
                                   arg);
        b->attn_dropout = x;
        break;
    default:
        return -1;
    }
    return 0;
}

/* Parse the options into b; returns -1 to continue, else the exit code. */
static int parse_options(step_bench *b, int argc, char **argv) {
    static const struct option long_opts[] = {
        BENCH_LONG("preset", PRESET),           BENCH_LONG("nodes", NODES),
        {"fanouts", required_argument, 0, 'f'}, BENCH_LONG("batch", BATCH),
        BENCH_LONG("hidden", HIDDEN),           {"dropout", required_argument, 0, 'D'},
        {"lr", required_argument, 0, 'l'},      {"steps", required_argument, 0, 'n'},
        {"warmup", required_argument, 0, 'w'},  {"breakdown", no_argument, 0, 'B'},
        {"dump", required_argument, 0, 'u'},    {"model", required_argument, 0, 'M'},
        {"heads", required_argument, 0, 'A'},   {"attn-dropout", required_argument, 0, 'a'},
        {"relation-fanouts", required_argument, 0, 'R'}, {"cpu", no_argument, 0, 'c'},
        BENCH_LONG_END};
    bench_options_init(&b->opt);
    b->dropout = 0.5;
    b->lr = 3e-3;
    b->steps = 50;
    b->warmup = 10;
    const int rc = bench_parse_options(&b->opt, cmd, argc, argv, long_opts, help, own_option, b);
    if (rc >= 0) return rc;
    /* The defaults of the model's kind: the relational ones as the heterogeneous trainer's. */
    const int typed = typed_model(b);
    if (!b->opt.preset) b->opt.preset = typed ? "mag" : "products";
    if (!b->layers && parse_fanouts(b, typed ? "10,5" : "15,10,5")) return CLI_EXIT_FAIL;
    if (!typed && (b->cpu || b->relation_fanouts))
        return cli_usage_error(cmd, "%s is for the relational models (--model rsage, rgcn or rgat)",
                               b->cpu ? "--cpu" : "--relation-fanouts");
    if (typed && b->breakdown)
        return cli_usage_error(cmd, "--breakdown times the homogeneous models' op table; time "
                                    "the %s step without it", b->model);
    return -1;
}

/* ---- the run */

typedef struct {
    gd_dataset_t *ds;
    gd_context_t *context; /* the GPU's (default) context */
    gd_graph_t *graph;
    gd_instrument_step *step; /* the nn context (its stream carries everything), the model */
    void *stream;
    gd_sampler_t *sampler;
    gd_sampler_info sinfo;
    gd_minibatch_t *mb;
    gd_host_tensor_t *features;
    gd_gatherer_t *gatherer;
    int64_t *labels_host;
    int64_t *train, num_train, num_batches;
    int64_t *order; /* the shuffled training nodes of order_epoch */
    int64_t order_epoch;
    gd_array_view label_view;
    int64_t num_nodes, num_edges, in_dim, num_classes;
    /* dumps */
    int32_t *h_indptr, *h_indices;
    cJSON *dump_steps;
    /* rsage, rgat: the typed step (the trainer's data path and model) and its sizes */
    gd_instrument_tstep *tstep;
    int T, R;
    double t_nodes[(GD_SAMPLER_MAX_LAYERS + 1) * GD_MAX_NODE_TYPES]; /* mean, by (layer, type) */
    double t_edges[GD_SAMPLER_MAX_LAYERS * GD_MAX_EDGE_TYPES];       /* by (layer, edge type) */
    int64_t *t_rows, t_rows_cap; /* a dumped type's table rows */
    double check_loss;           /* the evaluation loss of timed step 0 on params0.npy */
} step_run;

static int64_t label_at(const gd_array_view *v, int64_t i) {
    switch (v->dtype) {
    case GD_DTYPE_INT32:
        return ((const int32_t *)v->data)[i];
    case GD_DTYPE_INT64:
        return ((const int64_t *)v->data)[i];
    default:
        return -1;
    }
}

static void run_release(step_run *r) {
    gd_gatherer_destroy(r->gatherer);
    gd_host_tensor_destroy(r->features);
    gd_minibatch_destroy(r->mb);
    gd_sampler_destroy(r->sampler);
    gd_instrument_step_destroy(r->step);
    gd_instrument_tstep_destroy(r->tstep);
    gd_graph_destroy(r->graph);
    gd_context_destroy(r->context);
    gd_dataset_close(r->ds);
    free(r->labels_host);
    free(r->train);
    free(r->order);
    free(r->h_indptr);
    free(r->h_indices);
    free(r->t_rows);
    cJSON_Delete(r->dump_steps);
    memset(r, 0, sizeof *r);
}

/* The model, sized as the trainer sizes it, and the step's buffers and events. */
static int create_model(const step_bench *b, step_run *r) {
    gd_graph_info gi = GD_GRAPH_INFO_INIT;
    BENCH_GD(gd_graph_get_info(r->graph, &gi), "reading the graph's sizes");
    const gd_instrument_step_config sc = {.num_layers = b->layers,
                                          .fanouts = b->fanouts,
                                          .batch = b->opt.batch,
                                          .in_dim = r->in_dim,
                                          .hidden = b->opt.hidden,
                                          .num_classes = r->num_classes,
                                          .dropout = b->dropout,
                                          .lr = b->lr,
                                          .seed = b->opt.seed,
                                          .max_degree = gi.max_degree,
                                          .num_nodes = r->num_nodes,
                                          .max_input_nodes = r->sinfo.max_input_nodes,
                                          .breakdown = b->breakdown,
                                          .model = b->model,
                                          .heads = b->heads,
                                          .attn_dropout = b->attn_dropout};
    BENCH_GD(gd_instrument_step_model(r->step, &sc), "creating the model");
    return 0;
fail:
    return -1;
}

/* Generate the preset in memory; read its sizes and its training nodes, the seeds. */
static int load_preset(const step_bench *b, step_run *r) {
    gd_status st;
    cli_progress prog;
    gd_array_view tv;
    gd_generate_options go = GD_GENERATE_OPTIONS_INIT;
    go.preset = b->opt.preset;
    go.seed = b->opt.seed;
    go.num_nodes = b->opt.nodes;
    cli_progress_init(&prog);
    go.progress = cli_progress_cb;
    go.progress_user = &prog;
    fprintf(stderr, "step: generating preset '%s' in memory\n", b->opt.preset);
    st = gd_generate(&go, &r->ds);
    cli_progress_end(&prog);
    BENCH_GD(st, "generating the benchmark's dataset");
    r->num_nodes = gd_dataset_num_nodes(r->ds);
    r->num_edges = gd_dataset_num_edges(r->ds);
    r->in_dim = gd_dataset_feature_dim(r->ds);
    r->num_classes = gd_dataset_num_classes(r->ds);
    BENCH_GD(gd_dataset_array(r->ds, GD_ARRAY_LABELS, &r->label_view), "reading the labels");

    /* Seeds: the training nodes, shuffled per epoch. */
    if (gd_dataset_array(r->ds, GD_ARRAY_TRAIN_IDX, &tv) == GD_OK && tv.shape[0] > 0) {
        r->num_train = tv.shape[0];
        r->train = malloc(sizeof *r->train * (size_t)r->num_train);
        BENCH_REQUIRE(r->train, "out of memory for %lld training ids", (long long)r->num_train);
        for (int64_t i = 0; i < r->num_train; i++) r->train[i] = label_at(&tv, i);
    } else {
        gd_clear_error();
        r->num_train = r->num_nodes;
        r->train = malloc(sizeof *r->train * (size_t)r->num_train);
        BENCH_REQUIRE(r->train, "out of memory for %lld seed ids", (long long)r->num_train);
        for (int64_t i = 0; i < r->num_train; i++) r->train[i] = i;
    }
    BENCH_REQUIRE(r->num_train >= b->opt.batch,
                  "preset %s has %lld training nodes, fewer than a batch of %lld: lower --batch",
                  b->opt.preset, (long long)r->num_train, (long long)b->opt.batch);
    r->order = malloc(sizeof *r->order * (size_t)r->num_train);
    BENCH_REQUIRE(r->order, "out of memory for the shuffled seeds");
    r->order_epoch = -1;
    return 0;
fail:
    return -1;
}

/* Generate the preset and set up the all-gpu data path, the model and the step's buffers. */
static int run_setup(const step_bench *b, step_run *r) {
    gd_array_view fv;
    const double t0 = bench_now();
    const int L = b->layers;
    BENCH_REQUIRE(gd_dataset_num_node_types(r->ds) <= 1,
                  "preset %s is heterogeneous: time it with a relational model (--model rsage, "
                  "rgcn or rgat)",
                  b->opt.preset);
    BENCH_GD(gd_dataset_array(r->ds, GD_ARRAY_FEATURES, &fv), "reading the features");
    BENCH_REQUIRE(fv.dtype == GD_DTYPE_FLOAT32,
                  "preset %s has %s features; the step trains on "
                  "float32",
                  b->opt.preset, gd_dtype_name(fv.dtype));

    /* The nn context first: its stream carries the sampler, the gather and the step. */
    BENCH_GD(gd_instrument_step_create(b->opt.device, &r->step), "creating the CUDA nn context");
    r->stream = gd_instrument_step_stream(r->step);
    BENCH_GD(gd_context_default(b->opt.device, &r->context), "taking the GPU's context");
    {
        gd_graph_options o = GD_GRAPH_OPTIONS_INIT;
        o.indptr_placement = GD_PLACE_GPU;
        o.indices_placement = GD_PLACE_GPU;
        o.context = r->context;
        BENCH_GD(gd_graph_create_from_dataset(r->ds, &o, &r->graph), "placing the graph on the GPU");
    }
    {
        gd_sampler_options o = GD_SAMPLER_OPTIONS_INIT;
        o.backend = GD_SAMPLER_CUDA;
        o.max_batch = b->opt.batch;
        o.seed = b->opt.seed;
        BENCH_GD(gd_sampler_create(r->graph, b->fanouts, L, &o, &r->sampler),
                 "creating the CUDA sampler");
        r->sinfo = (gd_sampler_info)GD_SAMPLER_INFO_INIT;
        BENCH_GD(gd_sampler_get_info(r->sampler, &r->sinfo), "reading the sampler's sizes");
        BENCH_GD(gd_minibatch_create(r->sampler, &r->mb), "creating a minibatch buffer");
    }
    {
        gd_gatherer_options o = GD_GATHERER_OPTIONS_INIT;
        o.max_ids = r->sinfo.max_input_nodes;
        BENCH_GD(gd_host_tensor_adopt(fv.data, fv.shape[0], fv.shape[1], fv.dtype,
                                      GD_HOST_TENSOR_READ_ONLY, &r->features),
                 "wrapping the features");
        BENCH_GD(gd_gatherer_create(r->features, r->context, GD_GATHER_GPU, &o, &r->gatherer),
                 "creating the gpu gatherer (the feature table in GPU memory)");
    }

    if (create_model(b, r)) goto fail;
    r->labels_host = malloc(sizeof(int64_t) * (size_t)b->opt.batch);
    BENCH_REQUIRE(r->labels_host, "out of memory for the labels of a minibatch");
    if (b->dump_dir) {
        r->h_indptr = malloc(sizeof(int32_t) * (size_t)(r->sinfo.max_input_nodes + 1));
        r->h_indices = malloc(sizeof(int32_t) * (size_t)(r->sinfo.max_edges + 1));
        BENCH_REQUIRE(r->h_indptr && r->h_indices, "out of memory for the dump buffers");
        BENCH_REQUIRE(r->dump_steps = cJSON_CreateArray(), "out of memory");
    }
    {
        char n[32], e[32];
        fprintf(stderr,
                "step: %s: %s nodes, %s edges, %lld features, %lld classes; model %lld "
                "parameters; up to %lld input nodes a minibatch (%.1f s)\n",
                b->opt.preset, cli_count((double)r->num_nodes, n, sizeof n),
                cli_count((double)r->num_edges, e, sizeof e), (long long)r->in_dim,
                (long long)r->num_classes, (long long)gd_instrument_step_num_params(r->step),
                (long long)r->sinfo.max_input_nodes, bench_now() - t0);
    }
    return 0;
fail:
    return -1;
}

/* The seeds of global minibatch i: minibatch i % batches of epoch i / batches. */
static int seeds_of(const step_bench *b, step_run *r, int64_t i, const int64_t **seeds,
                    int64_t *epoch) {
    if (r->num_batches == 0 || i / r->num_batches != r->order_epoch) {
        const int64_t e = r->num_batches ? i / r->num_batches : 0;
        BENCH_GD(gd_seed_batches(r->train, r->num_train, b->opt.batch, b->opt.seed, e, 1, r->order,
                                 &r->num_batches),
                 "shuffling the training nodes");
        r->order_epoch = e;
        if (i / r->num_batches != e) return seeds_of(b, r, i, seeds, epoch);
    }
    *epoch = r->order_epoch;
    *seeds = r->order + (i % r->num_batches) * b->opt.batch;
    return 0;
fail:
    return -1;
}

/* Sample minibatch i, gather its rows and upload its labels; waits for all of it. */
static int prepare(const step_bench *b, step_run *r, int64_t i, gd_block *blocks,
                   int64_t *num_in) {
    const int64_t *seeds, *ids;
    int64_t epoch;
    if (seeds_of(b, r, i, &seeds, &epoch)) goto fail;
    BENCH_GD(gd_sample(r->sampler, seeds, b->opt.batch, 0, epoch, i, r->stream, r->mb),
             "sampling (CUDA)");
    for (int l = 0; l < b->layers; l++)
        BENCH_GD(gd_minibatch_block(r->mb, l, &blocks[l]), "reading a block");
    BENCH_GD(gd_minibatch_input_nodes(r->mb, &ids, num_in), "reading the input nodes");
    BENCH_GD(gd_gather(r->gatherer, ids, *num_in, 1, gd_instrument_step_input(r->step), r->stream),
             "gathering the input rows");
    for (int64_t k = 0; k < b->opt.batch; k++)
        r->labels_host[k] = label_at(&r->label_view, seeds[k]);
    /* Waits for the stream, so the sample and the gather are done before the clock starts. */
    BENCH_GD(gd_instrument_step_labels(r->step, r->labels_host, b->opt.batch),
             "uploading the labels");
    return 0;
fail:
    return -1;
}

/* ---- the relational models (rsage, rgcn, rgat) */

/* The trainer's heterogeneous data path and the model, on the GPU or (--cpu) the CPU. */
static int typed_setup(const step_bench *b, step_run *r) {
    const double t0 = bench_now();
    r->T = gd_dataset_num_node_types(r->ds);
    r->R = gd_dataset_num_edge_types(r->ds);
    BENCH_REQUIRE(r->T > 1 || r->R > 1,
                  "preset %s is homogeneous: --model %s trains on heterogeneous presets (mag, "
                  "mag-tiny, igbh-tiny, igbh-medium)",
                  b->opt.preset, b->model);
    const gd_instrument_tstep_config c = {.model = b->model,
                                          .num_layers = b->layers,
                                          .fanouts = b->fanouts,
                                          .relation_fanouts = b->relation_fanouts,
                                          .batch = b->opt.batch,
                                          .hidden = b->opt.hidden,
                                          .dropout = b->dropout,
                                          .lr = b->lr,
                                          .heads = b->heads,
                                          .attn_dropout = b->attn_dropout,
                                          .seed = b->opt.seed,
                                          .device = b->cpu ? -1 : b->opt.device};
    BENCH_GD(gd_instrument_tstep_create(r->ds, &c, &r->tstep), "creating the typed data path and "
                                                              "the model");
    if (b->dump_dir) BENCH_REQUIRE(r->dump_steps = cJSON_CreateArray(), "out of memory");
    fprintf(stderr,
            "step: %s: %d node types, %d edge types, %lld classes; %s of %lld parameters on the "
            "%s (%.1f s)\n",
            b->opt.preset, r->T, r->R, (long long)r->num_classes,
            gd_instrument_tstep_title(r->tstep),
            (long long)gd_instrument_tstep_num_params(r->tstep), b->cpu ? "CPU" : "GPU",
            bench_now() - t0);
    return 0;
fail:
    return -1;
}

/* n values of dtype as the dump's file name. */
static int dump_array(const step_bench *b, const char *name, gd_dtype dtype, int64_t n,
                      const void *data) {
    char path[4096];
    static const int64_t none = 0;
    snprintf(path, sizeof path, "%s/%s", b->dump_dir, name);
    BENCH_GD(gd_npy_write(path, dtype, 1, &n, data ? data : &none), "writing the dump");
    return 0;
fail:
    return -1;
}

/*
 * What the PyG side needs before the steps: every featured type's table, the initial
 * parameters (params0.npy) and the evaluation loss of timed step 0 on them, which
 * bench/pyg_step.py recomputes with the same weights. Timed step 0 is sampled here and again
 * after the warm-up: the same minibatch, since the draws are keyed by its number.
 */
static int typed_dump_start(const step_bench *b, step_run *r) {
    char path[4096];
    float *params = NULL, loss = 0;
    const int64_t *seeds;
    int64_t epoch;
    for (int t = 0; t < r->T; t++) {
        gd_node_type_info ti = GD_NODE_TYPE_INFO_INIT;
        gd_array_view f;
        BENCH_GD(gd_dataset_node_type(r->ds, t, &ti), "reading a node type");
        if (ti.feature_dim == 0) continue;
        BENCH_GD(gd_dataset_type_features(r->ds, t, &f), "reading a type's features");
        snprintf(path, sizeof path, "%s/type%d_features.npy", b->dump_dir, t);
        BENCH_GD(gd_npy_write(path, f.dtype, 2, f.shape, f.data), "writing the dump");
    }
    const int64_t np = gd_instrument_tstep_num_params(r->tstep);
    params = malloc(sizeof *params * (size_t)np);
    BENCH_REQUIRE(params, "out of memory for %lld parameters", (long long)np);
    BENCH_GD(gd_instrument_tstep_params(r->tstep, params), "reading the parameters");
    if (dump_array(b, "params0.npy", GD_DTYPE_FLOAT32, np, params)) goto fail;
    if (seeds_of(b, r, b->warmup, &seeds, &epoch)) goto fail;
    BENCH_GD(gd_instrument_tstep_eval_loss(r->tstep, seeds, b->opt.batch, epoch, b->warmup, &loss),
             "the evaluation loss of the first timed minibatch");
    r->check_loss = loss;
    free(params);
    return 0;
fail:
    free(params);
    return -1;
}

/* The table rows (global id - the type's offset) of the n nodes of type t in ids. */
static int table_rows(step_run *r, int t, const int64_t *ids, int64_t n) {
    gd_node_type_info ti = GD_NODE_TYPE_INFO_INIT;
    BENCH_GD(gd_dataset_node_type(r->ds, t, &ti), "reading a node type");
    if (n > r->t_rows_cap) {
        int64_t *p = realloc(r->t_rows, sizeof *p * (size_t)n);
        BENCH_REQUIRE(p, "out of memory for %lld rows", (long long)n);
        r->t_rows = p;
        r->t_rows_cap = n;
    }
    for (int64_t i = 0; i < n; i++) r->t_rows[i] = ids[i] - ti.offset;
    return 0;
fail:
    return -1;
}

/* Write the typed blocks, each type's input rows and the labels of timed step s. */
static int typed_dump_step(const step_bench *b, step_run *r, int s) {
    char name[96];
    cJSON *js, *jn, *jl;
    BENCH_REQUIRE(js = cJSON_CreateObject(), "out of memory");
    cJSON_AddItemToArray(r->dump_steps, js);
    BENCH_JSON(jn = cJSON_AddArrayToObject(js, "num_nodes"));
    BENCH_JSON(jl = cJSON_AddArrayToObject(js, "blocks"));
    for (int l = 0; l <= b->layers; l++)
        for (int t = 0; t < r->T; t++) {
            const int64_t *ids;
            int64_t n;
            BENCH_GD(gd_instrument_tstep_nodes(r->tstep, l, t, &ids, &n), "reading the nodes");
            BENCH_JSON(cJSON_AddItemToArray(jn, cJSON_CreateNumber((double)n)));
            if (l > 0) continue; /* a layer's nodes are a prefix of the input layer's */
            if (table_rows(r, t, ids, n)) goto fail;
            snprintf(name, sizeof name, "step%04d_type%d_rows.npy", s, t);
            if (dump_array(b, name, GD_DTYPE_INT64, n, r->t_rows)) goto fail;
        }
    for (int l = 0; l < b->layers; l++)
        for (int e = 0; e < r->R; e++) {
            gd_block k;
            cJSON *o;
            BENCH_GD(gd_instrument_tstep_block(r->tstep, l, e, &k), "reading a block");
            snprintf(name, sizeof name, "step%04d_layer%d_rel%d_indptr.npy", s, l, e);
            if (dump_array(b, name, GD_DTYPE_INT32, k.num_dst + 1, k.indptr)) goto fail;
            snprintf(name, sizeof name, "step%04d_layer%d_rel%d_indices.npy", s, l, e);
            if (dump_array(b, name, GD_DTYPE_INT32, k.num_edges, k.indices)) goto fail;
            BENCH_REQUIRE(o = cJSON_CreateObject(), "out of memory");
            cJSON_AddItemToArray(jl, o);
            BENCH_JSON(cJSON_AddNumberToObject(o, "num_src", (double)k.num_src));
            BENCH_JSON(cJSON_AddNumberToObject(o, "num_dst", (double)k.num_dst));
            BENCH_JSON(cJSON_AddNumberToObject(o, "num_edges", (double)k.num_edges));
        }
    int64_t n;
    const int64_t *labels = gd_instrument_tstep_labels(r->tstep, &n);
    snprintf(name, sizeof name, "step%04d_labels.npy", s);
    return dump_array(b, name, GD_DTYPE_INT64, n, labels);
fail:
    return -1;
}

/* Weights w[0..n) of layer l's relation or type (key = index) as {layer, key, name, offset,
 * rows, cols} entries of a. */
static int add_weights(cJSON *a, int l, const char *key, int index, const gd_instrument_weight *w,
                       int n) {
    cJSON *o = NULL;
    for (int k = 0; k < n; k++) {
        BENCH_REQUIRE(o = cJSON_CreateObject(), "out of memory");
        cJSON_AddItemToArray(a, o);
        BENCH_JSON(cJSON_AddNumberToObject(o, "layer", l));
        BENCH_JSON(cJSON_AddNumberToObject(o, key, index));
        BENCH_JSON(cJSON_AddStringToObject(o, "name", w[k].name));
        BENCH_JSON(cJSON_AddNumberToObject(o, "offset", (double)w[k].offset));
        BENCH_JSON(cJSON_AddNumberToObject(o, "rows", (double)w[k].rows));
        BENCH_JSON(cJSON_AddNumberToObject(o, "cols", (double)w[k].cols));
    }
    return 0;
fail:
    return -1;
}

/* meta.json's schema of a typed dump: node types, relations, and every relation's weights. */
static int typed_dump_meta(const step_bench *b, const step_run *r, cJSON *root) {
    cJSON *a, *o;
    BENCH_JSON(cJSON_AddNumberToObject(root, "target_type", gd_dataset_target_type(r->ds)));
    if (b->relation_fanouts)
        BENCH_JSON(cJSON_AddStringToObject(root, "relation_fanouts", b->relation_fanouts));
    BENCH_JSON(a = cJSON_AddArrayToObject(root, "node_types"));
    for (int t = 0; t < r->T; t++) {
        gd_node_type_info ti = GD_NODE_TYPE_INFO_INIT;
        BENCH_GD(gd_dataset_node_type(r->ds, t, &ti), "reading a node type");
        BENCH_REQUIRE(o = cJSON_CreateObject(), "out of memory");
        cJSON_AddItemToArray(a, o);
        BENCH_JSON(cJSON_AddStringToObject(o, "name", ti.name));
        BENCH_JSON(cJSON_AddNumberToObject(o, "count", (double)ti.count));
        BENCH_JSON(cJSON_AddNumberToObject(o, "feature_dim", (double)ti.feature_dim));
    }
    BENCH_JSON(a = cJSON_AddArrayToObject(root, "relations"));
    for (int e = 0; e < r->R; e++) {
        gd_edge_type_info ei = GD_EDGE_TYPE_INFO_INIT;
        BENCH_GD(gd_dataset_edge_type(r->ds, e, &ei), "reading an edge type");
        BENCH_REQUIRE(o = cJSON_CreateObject(), "out of memory");
        cJSON_AddItemToArray(a, o);
        BENCH_JSON(cJSON_AddNumberToObject(o, "src", ei.src_type));
        BENCH_JSON(cJSON_AddStringToObject(o, "name", ei.name));
        BENCH_JSON(cJSON_AddNumberToObject(o, "dst", ei.dst_type));
    }
    BENCH_JSON(a = cJSON_AddArrayToObject(root, "weights"));
    for (int l = 0; l < b->layers; l++)
        for (int e = 0; e < r->R; e++) {
            gd_instrument_weight w[GD_INSTRUMENT_MAX_WEIGHTS];
            const int n = gd_instrument_tstep_weights(r->tstep, l, e, w);
            if (add_weights(a, l, "relation", e, w, n)) goto fail;
        }
    /* R-GCN: every node type's root (w_root, b) per layer, as "weights" lists the relations'. */
    BENCH_JSON(a = cJSON_AddArrayToObject(root, "type_weights"));
    for (int l = 0; l < b->layers; l++)
        for (int t = 0; t < gd_dataset_num_node_types(r->ds); t++) {
            gd_instrument_weight w[GD_INSTRUMENT_MAX_WEIGHTS];
            const int n = gd_instrument_tstep_type_weights(r->tstep, l, t, w);
            if (add_weights(a, l, "type", t, w, n)) goto fail;
        }
    BENCH_JSON(o = cJSON_AddObjectToObject(root, "check"));
    BENCH_JSON(cJSON_AddNumberToObject(o, "step", 0));
    BENCH_JSON(cJSON_AddNumberToObject(o, "eval_loss", r->check_loss));
    return 0;
fail:
    return -1;
}

/* One typed step on global minibatch i (sampled, gathered and copied first, untimed). */
static int typed_step(const step_bench *b, step_run *r, int64_t i, float *ms, float *loss) {
    const int64_t *seeds;
    int64_t epoch;
    if (seeds_of(b, r, i, &seeds, &epoch)) goto fail;
    BENCH_GD(gd_instrument_tstep_run(r->tstep, seeds, b->opt.batch, epoch, i, i, ms, loss),
             "running the training step");
    return 0;
fail:
    return -1;
}

/* Add the typed minibatch's sizes to the means over the timed steps. */
static void typed_sizes(const step_bench *b, step_run *r) {
    for (int l = 0; l <= b->layers; l++)
        for (int t = 0; t < r->T; t++) {
            const int64_t *ids;
            int64_t n = 0;
            if (gd_instrument_tstep_nodes(r->tstep, l, t, &ids, &n) == GD_OK)
                r->t_nodes[l * r->T + t] += (double)n / b->steps;
        }
    for (int l = 0; l < b->layers; l++)
        for (int e = 0; e < r->R; e++) {
            gd_block k;
            if (gd_instrument_tstep_block(r->tstep, l, e, &k) == GD_OK)
                r->t_edges[l * r->R + e] += (double)k.num_edges / b->steps;
        }
}

/* The typed sizes per layer into the results and on stdout. */
static int typed_report(const step_bench *b, const step_run *r, cJSON *res) {
    cJSON *jn, *je, *row;
    BENCH_JSON(jn = cJSON_AddArrayToObject(res, "num_nodes"));
    BENCH_JSON(je = cJSON_AddArrayToObject(res, "num_edges"));
    printf("%-7s", "layer");
    for (int t = 0; t < r->T; t++) {
        gd_node_type_info ti = GD_NODE_TYPE_INFO_INIT;
        BENCH_GD(gd_dataset_node_type(r->ds, t, &ti), "reading a node type");
        printf(" %14.14s", ti.name);
    }
    printf(" %12s   (mean nodes by type and edges over the timed minibatches; layer 0 = input)\n",
           "edges");
    for (int l = 0; l <= b->layers; l++) {
        double edges = 0;
        BENCH_REQUIRE(row = cJSON_CreateArray(), "out of memory");
        cJSON_AddItemToArray(jn, row);
        printf("%-7d", l);
        for (int t = 0; t < r->T; t++) {
            BENCH_JSON(cJSON_AddItemToArray(row, cJSON_CreateNumber(r->t_nodes[l * r->T + t])));
            printf(" %14.0f", r->t_nodes[l * r->T + t]);
        }
        if (l == b->layers) {
            printf("\n");
            break;
        }
        BENCH_REQUIRE(row = cJSON_CreateArray(), "out of memory");
        cJSON_AddItemToArray(je, row);
        for (int e = 0; e < r->R; e++) {
            BENCH_JSON(cJSON_AddItemToArray(row, cJSON_CreateNumber(r->t_edges[l * r->R + e])));
            edges += r->t_edges[l * r->R + e];
        }
        printf(" %12.0f\n", edges);
    }
    return 0;
fail:
    return -1;
}

/* Write the blocks and labels of timed step s to the dump directory. */
static int dump_step(const step_bench *b, step_run *r, int s, const gd_block *blocks) {
    char path[4096];
    cJSON *js, *jl;
    BENCH_REQUIRE(js = cJSON_CreateObject(), "out of memory");
    cJSON_AddItemToArray(r->dump_steps, js);
    BENCH_JSON(jl = cJSON_AddArrayToObject(js, "blocks"));
    for (int l = 0; l < b->layers; l++) {
        const gd_block *k = &blocks[l];
        const int64_t np = k->num_dst + 1, ne = k->num_edges;
        cJSON *o;
#ifdef GD_WITH_CUDA
        BENCH_CUDA(cudaMemcpy(r->h_indptr, k->indptr, sizeof(int32_t) * (size_t)np,
                              cudaMemcpyDeviceToHost));
        if (ne > 0)
            BENCH_CUDA(cudaMemcpy(r->h_indices, k->indices, sizeof(int32_t) * (size_t)ne,
                                  cudaMemcpyDeviceToHost));
#endif
        snprintf(path, sizeof path, "%s/step%04d_layer%d_indptr.npy", b->dump_dir, s, l);
        BENCH_GD(gd_npy_write(path, GD_DTYPE_INT32, 1, &np, r->h_indptr), "writing the dump");
        snprintf(path, sizeof path, "%s/step%04d_layer%d_indices.npy", b->dump_dir, s, l);
        BENCH_GD(gd_npy_write(path, GD_DTYPE_INT32, 1, &ne, r->h_indices), "writing the dump");
        BENCH_REQUIRE(o = cJSON_CreateObject(), "out of memory");
        cJSON_AddItemToArray(jl, o);
        BENCH_JSON(cJSON_AddNumberToObject(o, "num_src", (double)k->num_src));
        BENCH_JSON(cJSON_AddNumberToObject(o, "num_dst", (double)k->num_dst));
        BENCH_JSON(cJSON_AddNumberToObject(o, "num_edges", (double)k->num_edges));
    }
    snprintf(path, sizeof path, "%s/step%04d_labels.npy", b->dump_dir, s);
    BENCH_GD(gd_npy_write(path, GD_DTYPE_INT64, 1, &b->opt.batch, r->labels_host),
             "writing the dump");
    return 0;
fail:
    return -1;
}

static int write_dump_meta(const step_bench *b, const step_run *r) {
    char path[4096];
    cJSON *root = cJSON_CreateObject(), *a;
    int rc = -1;
    BENCH_REQUIRE(root, "out of memory");
    BENCH_JSON(cJSON_AddStringToObject(root, "preset", b->opt.preset));
    BENCH_JSON(cJSON_AddNumberToObject(root, "steps", b->steps));
    BENCH_JSON(cJSON_AddNumberToObject(root, "layers", b->layers));
    BENCH_JSON(a = cJSON_AddArrayToObject(root, "fanouts"));
    for (int l = 0; l < b->layers; l++)
        BENCH_JSON(cJSON_AddItemToArray(a, cJSON_CreateNumber(b->fanouts[l])));
    BENCH_JSON(cJSON_AddNumberToObject(root, "batch", (double)b->opt.batch));
    BENCH_JSON(cJSON_AddNumberToObject(root, "feature_dim", (double)r->in_dim));
    BENCH_JSON(cJSON_AddNumberToObject(root, "num_classes", (double)r->num_classes));
    BENCH_JSON(cJSON_AddNumberToObject(root, "hidden", (double)b->opt.hidden));
    BENCH_JSON(cJSON_AddNumberToObject(root, "dropout", b->dropout));
    BENCH_JSON(cJSON_AddNumberToObject(root, "lr", b->lr));
    BENCH_JSON(cJSON_AddStringToObject(root, "model", b->model ? b->model : "sage"));
    BENCH_JSON(cJSON_AddNumberToObject(root, "heads", b->heads > 0 ? b->heads : 1));
    BENCH_JSON(cJSON_AddNumberToObject(root, "attn_dropout", b->attn_dropout));
    if (r->tstep) {
        BENCH_JSON(cJSON_AddStringToObject(
            root, "files",
            "stepSSSS_layerL_relR_indptr.npy, stepSSSS_layerL_relR_indices.npy (int32 CSC of "
            "edge type R, local ids of its types; layer 0 = input layer), stepSSSS_typeT_rows.npy "
            "(int64 rows of typeT_features.npy), stepSSSS_labels.npy (int64), params0.npy"));
        if (typed_dump_meta(b, r, root)) goto fail;
    } else {
        BENCH_JSON(cJSON_AddStringToObject(root, "files", "stepSSSS_layerL_indptr.npy, "
                                                          "stepSSSS_layerL_indices.npy (int32 "
                                                          "CSC, layer 0 = input layer), "
                                                          "stepSSSS_labels.npy (int64)"));
    }
    cJSON_AddItemReferenceToObject(root, "step_blocks", r->dump_steps);
    snprintf(path, sizeof path, "%s/meta.json", b->dump_dir);
    if (bench_json_write(path, root) != 0) goto fail;
    rc = 0;
fail:
    cJSON_Delete(root);
    return rc;
}

static int cmp_double(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Median, mean, min and max of v[0..n) into a JSON object (v is sorted in place). */
static int add_stats(cJSON *parent, const char *name, double *v, int n, double *median,
                     double *mean) {
    cJSON *o;
    double s = 0;
    for (int i = 0; i < n; i++) s += v[i];
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    *mean = n ? s / n : 0;
    *median = n ? (n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2])) : 0;
    BENCH_JSON(o = cJSON_AddObjectToObject(parent, name));
    BENCH_JSON(cJSON_AddNumberToObject(o, "median", *median));
    BENCH_JSON(cJSON_AddNumberToObject(o, "mean", *mean));
    BENCH_JSON(cJSON_AddNumberToObject(o, "min", n ? v[0] : 0));
    BENCH_JSON(cJSON_AddNumberToObject(o, "max", n ? v[n - 1] : 0));
    return 0;
fail:
    return -1;
}

/*
 * One pass of steps: warm-up minibatches [0, warmup), then the timed ones [warmup, warmup +
 * steps); with timed_ops every op is timed too and the step object's totals per kind grow.
 */
static int run_pass(const step_bench *b, step_run *r, int timed_ops, double *ms, double *losses,
                    double (*sizes)[3]) {
    gd_block blocks[GD_SAMPLER_MAX_LAYERS];
    const int total = (timed_ops ? 0 : b->warmup) + b->steps;
    const int first = timed_ops ? b->warmup : 0;
    for (int k = 0; k < total; k++) {
        const int64_t i = first + k;
        const int s = (int)(i - b->warmup); /* timed step number, < 0 in the warm-up */
        int64_t num_in;
        float loss, elapsed;
        if (r->tstep) {
            if (typed_step(b, r, i, &elapsed, &loss)) goto fail;
        } else {
            if (prepare(b, r, i, blocks, &num_in)) goto fail;
            BENCH_GD(gd_instrument_step_run(r->step, blocks, num_in, i, timed_ops, &elapsed,
                                            &loss),
                     "running the training step");
        }
        BENCH_REQUIRE(isfinite(loss), "step %lld: the loss is %g: the step is broken, no number "
                      "is reported", (long long)i, (double)loss);
        if (s < 0) continue;
        ms[s] = elapsed;
        if (losses) losses[s] = loss;
        if (sizes && r->tstep) typed_sizes(b, r);
        if (sizes && !r->tstep)
            for (int l = 0; l < b->layers; l++) {
                sizes[l][0] += (double)blocks[l].num_src / b->steps;
                sizes[l][1] += (double)blocks[l].num_dst / b->steps;
                sizes[l][2] += (double)blocks[l].num_edges / b->steps;
            }
        if (!timed_ops && b->dump_dir &&
            (r->tstep ? typed_dump_step(b, r, s) : dump_step(b, r, s, blocks)))
            goto fail;
        if (cli_interrupted()) goto fail;
    }
    return 0;
fail:
    return -1;
}

/* The homogeneous blocks' mean sizes per layer into the results and on stdout. */
static int block_report(const step_bench *b, double (*sizes)[3], cJSON *res) {
    cJSON *jl;
    BENCH_JSON(jl = cJSON_AddArrayToObject(res, "blocks"));
    printf("%-7s %12s %12s %12s   (mean over the timed minibatches; layer 0 = input layer)\n",
           "layer", "num_src", "num_dst", "edges");
    for (int l = 0; l < b->layers; l++) {
        cJSON *o;
        BENCH_REQUIRE(o = cJSON_CreateObject(), "out of memory");
        cJSON_AddItemToArray(jl, o);
        BENCH_JSON(cJSON_AddNumberToObject(o, "num_src", sizes[l][0]));
        BENCH_JSON(cJSON_AddNumberToObject(o, "num_dst", sizes[l][1]));
        BENCH_JSON(cJSON_AddNumberToObject(o, "num_edges", sizes[l][2]));
        printf("%-7d %12.0f %12.0f %12.0f\n", l, sizes[l][0], sizes[l][1], sizes[l][2]);
    }
    return 0;
fail:
    return -1;
}

/* Set up the model's data path, run the passes, report (and dump) them. */
static int run(const step_bench *b, cJSON *root) {
    step_run r;
    double *ms = NULL, *ms_bd = NULL, *losses = NULL;
    double sizes[GD_SAMPLER_MAX_LAYERS][3] = {{0}};
    double median, mean, bd_median = 0, bd_mean = 0;
    cJSON *res, *jb;
    int rc = -1;
    memset(&r, 0, sizeof r);
    ms = calloc((size_t)b->steps, sizeof *ms);
    ms_bd = calloc((size_t)b->steps, sizeof *ms_bd);
    losses = calloc((size_t)b->steps, sizeof *losses);
    BENCH_REQUIRE(ms && ms_bd && losses, "out of memory for %d steps", b->steps);
    if (load_preset(b, &r)) goto fail;
    if (typed_model(b) ? typed_setup(b, &r) : run_setup(b, &r)) goto fail;
    if (r.tstep && b->dump_dir && typed_dump_start(b, &r)) goto fail;

    fprintf(stderr, "step: %d warm-up and %d timed steps\n", b->warmup, b->steps);
    if (run_pass(b, &r, 0, ms, losses, sizes)) goto fail;
    if (b->breakdown && run_pass(b, &r, 1, ms_bd, NULL, NULL)) goto fail;
    if (r.tstep) {
        BENCH_GD(gd_instrument_tstep_check_errors(r.tstep), "the training step");
    } else {
        BENCH_GD(gd_sampler_check_errors(r.sampler), "sampling (CUDA)");
        BENCH_GD(gd_gatherer_check_errors(r.gatherer), "gathering (gpu)");
        BENCH_GD(gd_instrument_step_check_errors(r.step), "the training step");
    }
    if (b->dump_dir && write_dump_meta(b, &r)) goto fail;

    BENCH_JSON(res = cJSON_AddObjectToObject(root, "results"));
    BENCH_JSON(cJSON_AddNumberToObject(res, "parameters",
                                       (double)(r.tstep ? gd_instrument_tstep_num_params(r.tstep)
                                                        : gd_instrument_step_num_params(r.step))));
    BENCH_JSON(cJSON_AddStringToObject(res, "backend", b->cpu ? "cpu (host clock)" : "cuda"));
    BENCH_JSON(cJSON_AddStringToObject(res, "model", b->model ? b->model : "sage"));
    BENCH_JSON(cJSON_AddNumberToObject(res, "heads", b->heads > 0 ? b->heads : 1));
    BENCH_JSON(cJSON_AddNumberToObject(res, "attn_dropout", b->attn_dropout));
    BENCH_JSON(cJSON_AddNumberToObject(res, "num_nodes", (double)r.num_nodes));
    BENCH_JSON(cJSON_AddNumberToObject(res, "num_edges", (double)r.num_edges));
    BENCH_JSON(cJSON_AddNumberToObject(res, "feature_dim", (double)r.in_dim));
    BENCH_JSON(cJSON_AddNumberToObject(res, "num_classes", (double)r.num_classes));
    BENCH_JSON(cJSON_AddNumberToObject(res, "first_loss", losses[0]));
    BENCH_JSON(cJSON_AddNumberToObject(res, "last_loss", losses[b->steps - 1]));
    if (add_stats(res, "step_ms", ms, b->steps, &median, &mean)) goto fail;
    if (r.tstep && b->dump_dir)
        BENCH_JSON(cJSON_AddNumberToObject(res, "check_eval_loss", r.check_loss));
    printf("bench step: %s, %s, fanouts", b->opt.preset,
           r.tstep ? gd_instrument_tstep_title(r.tstep) : gd_instrument_step_model_title());
    for (int l = 0; l < b->layers; l++) printf("%s%d", l ? "," : " ", b->fanouts[l]);
    /* A heterogeneous preset's widths are per type: its input layer's table names the types. */
    char features[48] = "";
    if (!r.tstep) snprintf(features, sizeof features, ", %lld features", (long long)r.in_dim);
    printf("%s%s%s, batch %lld, hidden %lld%s, %lld classes, dropout %g, Adam lr %g\n",
           r.tstep ? " (every edge type)" : "", b->relation_fanouts ? "; " : "",
           b->relation_fanouts ? b->relation_fanouts : "", (long long)b->opt.batch,
           (long long)b->opt.hidden, features, (long long)r.num_classes, b->dropout, b->lr);
    if (r.tstep ? typed_report(b, &r, res) : block_report(b, sizes, res)) goto fail;
    printf("training step%s: median %.3f ms, mean %.3f ms, min %.3f, max %.3f over %d minibatches "
           "(after %d warm-up); loss %.4f -> %.4f\n",
           b->cpu ? " (CPU backend, host clock: a test run, not a measurement)" : "", median, mean, ms[0], ms[b->steps - 1], b->steps, b->warmup,
           cJSON_GetObjectItem(res, "first_loss")->valuedouble,
           cJSON_GetObjectItem(res, "last_loss")->valuedouble);
    if (b->breakdown) {
        double sum = 0;
        if (add_stats(res, "breakdown_step_ms", ms_bd, b->steps, &bd_median, &bd_mean)) goto fail;
        BENCH_JSON(jb = cJSON_AddObjectToObject(res, "breakdown_ms_per_step"));
        printf("\nper op kind (ms per step, each op between its own events; that pass: median "
               "%.3f ms a step)\n",
               bd_median);
        for (int k = 0; k < gd_instrument_step_op_kinds(); k++) {
            const char *name = gd_instrument_step_op_name(k);
            double op_ms;
            int64_t calls;
            gd_instrument_step_op_total(r.step, k, &op_ms, &calls);
            if (!calls) continue;
            cJSON *o;
            BENCH_JSON(o = cJSON_AddObjectToObject(jb, name));
            BENCH_JSON(cJSON_AddNumberToObject(o, "ms", op_ms / b->steps));
            BENCH_JSON(cJSON_AddNumberToObject(o, "calls", (double)calls / b->steps));
            printf("  %-27s %8.3f ms  %5.1f calls  %5.1f %%\n", name, op_ms / b->steps,
                   (double)calls / b->steps, bd_mean > 0 ? 100 * op_ms / b->steps / bd_mean : 0);
            sum += op_ms / b->steps;
        }
        printf("  %-27s %8.3f ms\n", "sum of the ops", sum);
        BENCH_JSON(cJSON_AddNumberToObject(res, "breakdown_sum_ms", sum));
    }
    if (b->dump_dir) printf("blocks of the %d timed steps written to %s\n", b->steps, b->dump_dir);
    rc = 0;
fail:
    run_release(&r);
    free(ms);
    free(ms_bd);
    free(losses);
    return rc;
}

static int add_parameters(const step_bench *b, cJSON *root) {
    cJSON *p, *a;
    BENCH_JSON(p = cJSON_AddObjectToObject(root, "parameters"));
    BENCH_JSON(cJSON_AddStringToObject(p, "preset", b->opt.preset));
    BENCH_JSON(cJSON_AddNumberToObject(p, "nodes", (double)b->opt.nodes));
    BENCH_JSON(a = cJSON_AddArrayToObject(p, "fanouts"));
    for (int l = 0; l < b->layers; l++)
        BENCH_JSON(cJSON_AddItemToArray(a, cJSON_CreateNumber(b->fanouts[l])));
    BENCH_JSON(cJSON_AddNumberToObject(p, "batch", (double)b->opt.batch));
    BENCH_JSON(cJSON_AddNumberToObject(p, "hidden", (double)b->opt.hidden));
    if (b->relation_fanouts)
        BENCH_JSON(cJSON_AddStringToObject(p, "relation_fanouts", b->relation_fanouts));
    BENCH_JSON(cJSON_AddStringToObject(p, "model", b->model ? b->model : "sage"));
    BENCH_JSON(cJSON_AddNumberToObject(p, "dropout", b->dropout));
    BENCH_JSON(cJSON_AddNumberToObject(p, "lr", b->lr));
    BENCH_JSON(cJSON_AddNumberToObject(p, "steps", b->steps));
    BENCH_JSON(cJSON_AddNumberToObject(p, "warmup", b->warmup));
    BENCH_JSON(cJSON_AddNumberToObject(p, "seed", (double)b->opt.seed));
    BENCH_JSON(cJSON_AddStringToObject(p, "precision", "float32 (cuBLAS default math, no TF32)"));
    BENCH_JSON(cJSON_AddStringToObject(p, "timed", "forward with dropout, softmax cross-entropy, "
                                                   "zero grad, backward, Adam step"));
    return 0;
fail:
    return -1;
}

int bench_step(int argc, char **argv) {
    step_bench b;
    cJSON *root = NULL;
    int rc = CLI_EXIT_FAIL;
    const double t_start = bench_now();
    memset(&b, 0, sizeof b);
    {
        const int prc = parse_options(&b, argc, argv);
        if (prc >= 0) return prc;
    }
    if (b.opt.json_path && bench_json_probe(b.opt.json_path) != 0) goto fail;
    if (!b.cpu) {
        const int count = gd_device_count();
        BENCH_REQUIRE(gd_has_cuda() && count > 0,
                      "the training step runs on the CUDA nn backend, which needs a CUDA build "
                      "and a GPU, and %s (%s)",
                      gd_has_cuda() ? "no GPU is visible" : "this build has no CUDA",
                      typed_model(&b) ? "--cpu runs the relational models' step on the CPU "
                                        "backend as a test, without a measurement"
                                      : "train on the CPU with `graphdirect train --mode cpu`");
        BENCH_REQUIRE(b.opt.device < count, "GPU %d does not exist: %d GPU(s) visible (0..%d)",
                      b.opt.device, count, count - 1);
    }
    if (b.dump_dir) {
        BENCH_REQUIRE(mkdir(b.dump_dir, 0755) == 0 || errno == EEXIST,
                      "--dump %s: cannot create the directory: %s", b.dump_dir, strerror(errno));
        struct stat sb;
        BENCH_REQUIRE(stat(b.dump_dir, &sb) == 0 && S_ISDIR(sb.st_mode),
                      "--dump %s: not a directory", b.dump_dir);
    }
    if (bench_json_header(&root, "step", &b.opt, !b.cpu) != 0) goto fail;
    if (add_parameters(&b, root) != 0) goto fail;
    if (run(&b, root) != 0) goto fail;
    if (bench_run_done(&b.opt, root, "step", t_start) != 0) goto fail;
    rc = 0;
fail:
    rc = bench_exit_status(rc);
    cJSON_Delete(root);
    return rc;
}
