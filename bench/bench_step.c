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
} step_bench;

static void help(void) {
    printf("usage: graphdirect bench step [options]\n\n"
           "The time of one %s training step (forward, cross-entropy, backward, Adam) on\n"
           "the CUDA nn backend over sampled minibatches of a generated preset, the graph and\n"
           "the features in GPU memory. --dump writes the timed blocks so that\n"
           "bench/pyg_step.py runs the same steps in PyTorch + PyG (docs/nn.md, \"Speed\").\n\n"
           "options:\n"
           "  --preset NAME      generator preset (default products)\n"
           "  --nodes N          scale the preset to N nodes (default: the preset's)\n"
           "  --fanouts LIST     neighbours per hop, seeds first (default 15,10,5)\n"
           "  --batch N          seeds per minibatch (default 1024)\n"
           "  --hidden N         hidden width (default 256)\n"
           "  --dropout P        dropout between layers (default 0.5)\n"
           "  --model sage|gat   the model (default sage); gat: --heads N (1), --attn-dropout P (0)\n"
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
        BENCH_LONG_END};
    bench_options_init(&b->opt);
    b->opt.preset = "products";
    b->dropout = 0.5;
    b->lr = 3e-3;
    b->steps = 50;
    b->warmup = 10;
    if (parse_fanouts(b, "15,10,5")) return CLI_EXIT_FAIL;
    return bench_parse_options(&b->opt, cmd, argc, argv, long_opts, help, own_option, b);
}

#ifdef GD_WITH_CUDA

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
    gd_graph_destroy(r->graph);
    gd_context_destroy(r->context);
    gd_dataset_close(r->ds);
    free(r->labels_host);
    free(r->train);
    free(r->order);
    free(r->h_indptr);
    free(r->h_indices);
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

/* Generate the preset and set up the all-gpu data path, the model and the step's buffers. */
static int run_setup(const step_bench *b, step_run *r) {
    gd_status st;
    cli_progress prog;
    gd_array_view fv, tv;
    const double t0 = bench_now();
    const int L = b->layers;
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
    BENCH_GD(gd_dataset_array(r->ds, GD_ARRAY_FEATURES, &fv), "reading the features");
    BENCH_REQUIRE(fv.dtype == GD_DTYPE_FLOAT32,
                  "preset %s has %s features; the step trains on "
                  "float32",
                  b->opt.preset, gd_dtype_name(fv.dtype));

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
        BENCH_CUDA(cudaMemcpy(r->h_indptr, k->indptr, sizeof(int32_t) * (size_t)np,
                              cudaMemcpyDeviceToHost));
        if (ne > 0)
            BENCH_CUDA(cudaMemcpy(r->h_indices, k->indices, sizeof(int32_t) * (size_t)ne,
                                  cudaMemcpyDeviceToHost));
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
    BENCH_JSON(cJSON_AddStringToObject(root, "files", "stepSSSS_layerL_indptr.npy, "
                                                      "stepSSSS_layerL_indices.npy (int32 CSC, "
                                                      "layer 0 = input layer), "
                                                      "stepSSSS_labels.npy (int64)"));
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
        if (prepare(b, r, i, blocks, &num_in)) goto fail;
        BENCH_GD(gd_instrument_step_run(r->step, blocks, num_in, i, timed_ops, &elapsed, &loss),
                 "running the training step");
        BENCH_REQUIRE(isfinite(loss), "step %lld: the loss is %g: the step is broken, no number "
                      "is reported", (long long)i, (double)loss);
        if (s < 0) continue;
        ms[s] = elapsed;
        if (losses) losses[s] = loss;
        if (sizes)
            for (int l = 0; l < b->layers; l++) {
                sizes[l][0] += (double)blocks[l].num_src / b->steps;
                sizes[l][1] += (double)blocks[l].num_dst / b->steps;
                sizes[l][2] += (double)blocks[l].num_edges / b->steps;
            }
        if (!timed_ops && b->dump_dir && dump_step(b, r, s, blocks)) goto fail;
        if (cli_interrupted()) goto fail;
    }
    return 0;
fail:
    return -1;
}

static int run_cuda(const step_bench *b, cJSON *root) {
    step_run r;
    double *ms = NULL, *ms_bd = NULL, *losses = NULL;
    double sizes[GD_SAMPLER_MAX_LAYERS][3] = {{0}};
    double median, mean, bd_median = 0, bd_mean = 0;
    cJSON *res, *jl, *jb;
    int rc = -1;
    memset(&r, 0, sizeof r);
    ms = calloc((size_t)b->steps, sizeof *ms);
    ms_bd = calloc((size_t)b->steps, sizeof *ms_bd);
    losses = calloc((size_t)b->steps, sizeof *losses);
    BENCH_REQUIRE(ms && ms_bd && losses, "out of memory for %d steps", b->steps);
    if (run_setup(b, &r)) goto fail;

    fprintf(stderr, "step: %d warm-up and %d timed steps\n", b->warmup, b->steps);
    if (run_pass(b, &r, 0, ms, losses, sizes)) goto fail;
    if (b->breakdown && run_pass(b, &r, 1, ms_bd, NULL, NULL)) goto fail;
    BENCH_GD(gd_sampler_check_errors(r.sampler), "sampling (CUDA)");
    BENCH_GD(gd_gatherer_check_errors(r.gatherer), "gathering (gpu)");
    BENCH_GD(gd_instrument_step_check_errors(r.step), "the training step");
    if (b->dump_dir && write_dump_meta(b, &r)) goto fail;

    BENCH_JSON(res = cJSON_AddObjectToObject(root, "results"));
    BENCH_JSON(cJSON_AddNumberToObject(res, "parameters", (double)gd_instrument_step_num_params(r.step)));
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
    BENCH_JSON(jl = cJSON_AddArrayToObject(res, "blocks"));
    printf("bench step: %s, fanouts", b->opt.preset);
    for (int l = 0; l < b->layers; l++) printf("%s%d", l ? "," : " ", b->fanouts[l]);
    printf(", batch %lld, hidden %lld, %lld features, %lld classes, dropout %g, Adam lr %g\n",
           (long long)b->opt.batch, (long long)b->opt.hidden, (long long)r.in_dim,
           (long long)r.num_classes, b->dropout, b->lr);
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
    printf("training step: median %.3f ms, mean %.3f ms, min %.3f, max %.3f over %d minibatches "
           "(after %d warm-up); loss %.4f -> %.4f\n",
           median, mean, ms[0], ms[b->steps - 1], b->steps, b->warmup,
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

#endif /* GD_WITH_CUDA */

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
    {
        const int count = gd_device_count();
        BENCH_REQUIRE(gd_has_cuda() && count > 0,
                      "the training step runs on the CUDA nn backend, which needs a CUDA build "
                      "and a GPU, and %s (train on the CPU with `graphdirect train --mode cpu`)",
                      gd_has_cuda() ? "no GPU is visible" : "this build has no CUDA");
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
    if (bench_json_header(&root, "step", &b.opt, 1) != 0) goto fail;
    if (add_parameters(&b, root) != 0) goto fail;
#ifdef GD_WITH_CUDA
    if (run_cuda(&b, root) != 0) goto fail;
#endif
    if (bench_run_done(&b.opt, root, "step", t_start) != 0) goto fail;
    rc = 0;
fail:
    rc = bench_exit_status(rc);
    cJSON_Delete(root);
    return rc;
}
