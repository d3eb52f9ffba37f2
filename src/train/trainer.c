/*
 * The trainer: the data path (datapath.h) plus a model (nn/model.h; or the MLP baseline) as the
 * last stage of the pipeline (pipeline.h), in the modes of src/train/internal.h. Creation builds
 * the data path for the mode, the nn backend, the model and the per-pass logs; an epoch then
 * allocates nothing.
 *
 * The stages per minibatch b (set b % depth):
 *
 *   sample   (sample stream or host)  -> gather (gather stream or host) -> train (train stream
 *   or host): forward, loss, backward, Adam; its end frees the set for minibatch b + depth.
 *
 * Losses and correct counts are copied into pinned arrays by the train stream and read at the
 * end of the pass; progress reports read the latest finished one without waiting.
 */
#include "train/datapath.h"
#include "train/infer.h"

#include "core/comm.h"
#include "core/context.h"
#include "core/cuda.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

/* Philox domain of the per-minibatch dropout keys ("trDK"). */
#define GD__TRAIN_RNG_DROPOUT 0x7472444bu
/*
 * The stages: the data path's two and the train stage; with several ranks the train stage stops
 * after backward, and the gradients' all-reduce and the optimizer step follow as stages.
 */
enum { ST_SAMPLE, ST_GATHER, ST_TRAIN, ST_ALLREDUCE, ST_OPTIMIZE, ST_COUNT };

static const char *const mode_names[GD__TRAIN_MODE_COUNT] = {"cpu", "all-gpu", "zero-copy",
                                                             "cpu-centric", "auto"};

const char *gd__train_mode_name(gd__train_mode mode) {
    return (int)mode >= 0 && mode < GD__TRAIN_MODE_COUNT ? mode_names[mode] : NULL;
}

gd_status gd__train_mode_parse(const char *name, gd__train_mode *out) {
    for (int m = 0; m < GD__TRAIN_MODE_COUNT; m++)
        if (name && strcmp(name, mode_names[m]) == 0) {
            *out = (gd__train_mode)m;
            return GD_OK;
        }
    return gd__error(GD_ERR_INVALID_ARG,
                     "unknown training mode '%s': use cpu, all-gpu, zero-copy, cpu-centric or auto",
                     name ? name : "(null)");
}

struct gd__trainer {
    gd__train_config cfg;
    const gd_dataset_t *ds;
    /* A heterogeneous dataset's data path (hetero.c), which owns the model; NULL otherwise. */
    gd__htrain *h;
    int64_t num_nodes, in_dim, num_classes, batch;
    gd__datapath *d;
    gd__pipe *pipe;
    gd__nn_ctx ctx;
    gd__model *model;
    gd__nn_adam_options adam;
    gd__nn_tensor loss;    /* 1 x 1 */
    int64_t *d_correct;    /* nn backend memory: one count */
    gd__nn_tensor dlogits; /* batch x classes */
    float *loss_log;       /* per minibatch of a pass (pinned in GPU modes) */
    int64_t *correct_log;
    int64_t log_cap;
    /* Data parallelism (NULL: alone): the context's communicator and its stream. */
    gd__comm *comm;
    void *s_comm;
    double *share_log; /* per minibatch: this rank's labelled seeds / the global minibatch's */
    double *sums;      /* 2 * log_cap + 1: a pass's logs as the ranks sum them */
};

double gd__cpu_seconds(void) {
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0) return 0;
    return (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec +
           (double)ru.ru_stime.tv_sec + 1e-6 * (double)ru.ru_stime.tv_usec;
}

/* --------------------------------------------------------------- teardown */

static void free_nn(gd__trainer *t, void *p) {
    if (p) t->ctx.be->release(&t->ctx, p);
}

void gd__trainer_destroy(gd__trainer *t) {
    if (!t) return;
    if (t->h) {
        gd__htrain_destroy(t->h);
        gd_free(t);
        return;
    }
    gd__pipe_destroy(t->pipe);
#ifdef GD_WITH_CUDA
    gd__cuda_stream_destroy(t->s_comm);
#endif
    gd_free(t->share_log);
    gd_free(t->sums);
    if (t->ctx.be) (void)t->ctx.be->synchronize(&t->ctx);
    gd__model_destroy(t->model);
    /* The data path's buffers live on the nn backend: they go before it. */
    gd__datapath_destroy(t->d);
    if (t->ctx.be) {
        gd__nn_tensor_free(&t->ctx, &t->loss);
        gd__nn_tensor_free(&t->ctx, &t->dlogits);
        free_nn(t, t->d_correct);
    }
#ifdef GD_WITH_CUDA
    if (t->ctx.be == &gd__nn_cuda_backend) {
        gd__cuda_host_free(t->loss_log);
        gd__cuda_host_free(t->correct_log);
        t->loss_log = NULL;
        t->correct_log = NULL;
    }
#endif
    if (t->ctx.be) gd__datapath_nn_release(&t->ctx);
    gd_free(t->loss_log);
    gd_free(t->correct_log);
    gd_free(t);
}

/* ----------------------------------------------------------------- create */

static gd_status check_config(const gd_dataset_t *ds, const gd__train_config *c) {
    gd_status st = GD_OK;
    GD_REQUIRE(ds && c, GD_ERR_INVALID_ARG, "gd__trainer_create: NULL dataset or config");
    GD_CHECK(gd__threads_check(c->threads, "trainer"));
    GD_REQUIRE(c->num_layers >= 1 && c->num_layers <= GD_SAMPLER_MAX_LAYERS &&
                   c->num_layers <= GD__MODEL_MAX_LAYERS,
               GD_ERR_INVALID_ARG, "trainer: %d layers; use 1 to %d", c->num_layers,
               GD_SAMPLER_MAX_LAYERS);
    for (int h = 0; h < c->num_layers; h++)
        GD_REQUIRE(c->fanouts[h] >= -1, GD_ERR_INVALID_ARG,
                   "trainer: fanout %d of hop %d; use -1 (all neighbours) or a count >= 0",
                   c->fanouts[h], h);
    GD_REQUIRE(c->batch_size >= 1, GD_ERR_INVALID_ARG, "trainer: batch size %lld; use >= 1",
               (long long)c->batch_size);
    GD_REQUIRE(c->hidden_dim >= 1, GD_ERR_INVALID_ARG, "trainer: hidden size %lld; use >= 1",
               (long long)c->hidden_dim);
    GD_REQUIRE(c->dropout >= 0 && c->dropout < 1, GD_ERR_INVALID_ARG,
               "trainer: dropout %g; use a probability in [0, 1)", c->dropout);
    GD_REQUIRE(c->lr > 0 && isfinite(c->lr), GD_ERR_INVALID_ARG,
               "trainer: learning rate %g; use a positive number", c->lr);
    GD_REQUIRE(c->weight_decay >= 0 && isfinite(c->weight_decay), GD_ERR_INVALID_ARG,
               "trainer: weight decay %g; use a number >= 0", c->weight_decay);
    GD_REQUIRE((int)c->mode >= 0 && c->mode < GD__TRAIN_MODE_COUNT, GD_ERR_INVALID_ARG,
               "trainer: mode %d is not a mode", (int)c->mode);
    GD_REQUIRE(gd__model_kind_iface(c->model), GD_ERR_INVALID_ARG,
               "trainer: model kind %d is not a model kind", (int)c->model);
    GD_REQUIRE(c->depth >= 2 && c->depth <= GD__PIPE_MAX_DEPTH, GD_ERR_INVALID_ARG,
               "trainer: a ring of %d buffer sets; use 2 to %d", c->depth, GD__PIPE_MAX_DEPTH);
    GD_REQUIRE(c->gpu_cache_bytes >= -1 && c->graph_cache_bytes >= -1 && c->gpu_mem_budget >= 0 &&
                   c->max_batches >= 0 && c->report_every >= 0,
               GD_ERR_INVALID_ARG, "trainer: a negative cache size, budget or count");
    GD_REQUIRE(gd_dataset_feature_dim(ds) > 0 || gd_dataset_num_node_types(ds) > 0,
               GD_ERR_INVALID_ARG, "trainer: dataset '%s' has no node features",
               gd_dataset_name(ds));
    GD_REQUIRE(gd_dataset_num_classes(ds) >= 2, GD_ERR_INVALID_ARG,
               "trainer: dataset '%s' has %lld classes; training needs labels of >= 2 classes",
               gd_dataset_name(ds), (long long)gd_dataset_num_classes(ds));
fail:
    return st;
}

/* The fanouts the sampler uses: all 0 for the MLP baseline. */
static void sampler_fanouts(const gd__train_config *c, int *fanouts) {
    for (int h = 0; h < c->num_layers; h++) fanouts[h] = c->mlp ? 0 : c->fanouts[h];
}

/* The model's config: its shape from the trainer's, its capacities for the sampler's blocks. */
static void model_config(const gd__trainer *t, int64_t max_degree, int64_t max_input,
                         gd__model_config *mc) {
    int fanouts[GD_SAMPLER_MAX_LAYERS];
    sampler_fanouts(&t->cfg, fanouts);
    *mc = gd__model_config_make(t->cfg.model, t->cfg.num_layers, t->in_dim, t->cfg.hidden_dim,
                                t->num_classes, t->cfg.dropout, GD_DTYPE_FLOAT32);
    mc->heads = t->cfg.heads;
    mc->attn_dropout = t->cfg.attn_dropout;
    const gd__model_shape shape = {.num_layers = t->cfg.num_layers,
                                   .fanouts = fanouts,
                                   .batch = t->batch,
                                   .max_degree = max_degree,
                                   .num_nodes = t->num_nodes,
                                   .max_input_nodes = max_input};
    gd__model_capacity(&shape, mc);
}

/* The model's GPU bytes for the plan (the data path asks once it knows the worst case). */
static int64_t plan_model_bytes(void *user, int64_t max_degree, int64_t max_input) {
    const gd__trainer *t = user;
    gd__model_config mc;
    model_config(t, max_degree, max_input, &mc);
    return gd__model_bytes(&mc);
}

/* The train stage of minibatch b (train_stage below), and with several ranks the next two. */
static gd_status train_stage(void *user, gd__pass *p, int64_t b, int set, void *stream);
static gd_status allreduce_stage(void *user, gd__pass *p, int64_t b, int set, void *stream);
static gd_status optimize_stage(void *user, gd__pass *p, int64_t b, int set, void *stream);

static void add_stage(gd__pipe_config *pc, const char *name, gd__stage_fn run, void *user,
                      void *stream) {
    gd__stage *s = &pc->stages[pc->num_stages++];
    s->name = name;
    s->run = run;
    s->user = user;
    s->stream = stream;
}

/*
 * The data path's stages and the train stage, in one pipeline. With several ranks, the
 * all-reduce runs on its own stream once backward has ended, and the optimizer step on the train
 * stream after it: the next minibatch's forward (train stream) follows the step, and its sampling
 * and gathering overlap the all-reduce.
 */
static gd_status make_pipe(gd__trainer *t) {
    gd__pipe_config pc;
    gd__datapath_pipe_config(t->d, &pc);
    void *train_stream = t->d->gpu ? t->ctx.stream : NULL;
    add_stage(&pc, "train", train_stage, t, train_stream);
    if (t->comm) {
        add_stage(&pc, "all-reduce", allreduce_stage, t, t->s_comm);
        add_stage(&pc, "optimize", optimize_stage, t, train_stream);
    }
    pc.last_stage_frees = 1;
    return gd__pipe_create(&pc, &t->pipe);
}

/* The per-pass logs of the losses and the correct counts. */
static gd_status make_logs(gd__trainer *t) {
    gd_status st = GD_OK;
    const int64_t most = gd__datapath_max_batches(t->d);
    t->log_cap = most;
#ifdef GD_WITH_CUDA
    if (t->d->gpu) {
        GD_CHECK(gd__cuda_pinned_alloc((void **)&t->loss_log, (size_t)most * sizeof(float),
                                       "the loss log", "lower the number of minibatches"));
        GD_CHECK(gd__cuda_pinned_alloc((void **)&t->correct_log, (size_t)most * sizeof(int64_t),
                                       "the accuracy log", "lower the number of minibatches"));
        return GD_OK;
    }
#endif
    GD_ALLOC(t->loss_log, (size_t)most * sizeof(float), "the loss log");
    GD_ALLOC(t->correct_log, (size_t)most * sizeof(int64_t), "the accuracy log");
fail:
    return st;
}

/* The data path's configuration: the trainer's, and its model's bytes for the plan. */
static void data_config(gd__trainer *t, gd__data_config *dc) {
    const gd__train_config *cfg = &t->cfg;
    memset(dc, 0, sizeof *dc);
    GD__DATA_OPTIONS_COPY(dc, cfg);
    sampler_fanouts(cfg, dc->fanouts);
    dc->mode = cfg->mode;
    dc->host_mem_budget = cfg->host_mem_budget;
    dc->placement = cfg->placement;
    dc->locality = cfg->locality;
    dc->host_gather = cfg->host_gather;
    dc->host_split = cfg->host_split;
    dc->startup_progress = cfg->startup_progress;
    dc->startup_progress_user = cfg->startup_progress_user;
    dc->model_bytes = plan_model_bytes;
    dc->model_user = t;
}

/* The trainer's shape from the dataset (what the model's sizing reads). */
static void shape_from(gd__trainer *t, const gd_dataset_t *ds, const gd__train_config *cfg) {
    t->cfg = *cfg;
    t->ds = ds;
    t->num_nodes = gd_dataset_num_nodes(ds);
    t->in_dim = gd_dataset_feature_dim(ds);
    t->num_classes = gd_dataset_num_classes(ds);
    t->batch = gd__min64(cfg->batch_size, t->num_nodes);
}

/*
 * The exact inference of a fit (infer.c) in the plan: on a GPU it gets half of the memory the
 * trainer leaves free (a zero-copy feature cache sized "what is left" takes the budget but the
 * reserve), and places its tables by gd__plan_infer; on the CPU its hidden tables are host
 * memory. An attention model's (GAT) hidden layers are heads x hidden wide, and its projection
 * of every node (heads x the widest layer, plus two scores a head) comes out of the GPU budget
 * first, as infer.c takes it. Models without a layer-wise form (and the MLP, whose sampled
 * inference is exact) add nothing.
 */
static gd_status plan_inference(const gd__trainer *t, gd__plan *p) {
    gd_status st = GD_OK;
    const gd__model_i *iface = gd__model_kind_iface(t->cfg.model);
    if (t->cfg.mlp || !gd__model_i_exact(iface)) return GD_OK;
    const int attention = iface->attn_combine != NULL;
    const int64_t heads = attention && t->cfg.heads > 0 ? t->cfg.heads : 1;
    gd__infer_plan_input in;
    memset(&in, 0, sizeof in);
    gd_array_view ix;
    GD_CHECK(gd_dataset_array(t->ds, GD_ARRAY_INDICES, &ix));
    in.num_nodes = t->num_nodes;
    in.num_edges = ix.shape[0];
    in.num_layers = t->cfg.num_layers;
    in.index_bytes = (int64_t)gd_dtype_size(ix.dtype);
    in.dims[0] = t->in_dim;
    for (int l = 1; l < in.num_layers; l++) in.dims[l] = heads * t->cfg.hidden_dim;
    in.dims[in.num_layers] = t->num_classes;
    const int64_t widest = in.num_layers > 1 ? gd__max64(t->cfg.hidden_dim, t->num_classes)
                                             : t->num_classes;
    const int64_t attn =
        attention ? gd__infer_attention_bytes(t->num_nodes, heads * widest, heads) : 0;
    gd__infer_plan ip;
    if (p->mode == GD__TRAIN_CPU) {
        /* No budget on the CPU: the plan's table sizes, with every table in host memory. */
        in.budget = INT64_MAX;
        GD_CHECK(gd__plan_infer(&in, &ip));
        gd__plan_add_infer_cpu(p, ip.hidden_tables, ip.hidden_bytes);
        return GD_OK;
    }
    int64_t taken = p->gpu_bytes;
    if (p->feature_cache_bytes < 0)
        taken += gd__max64(0, p->budget - p->gpu_bytes - GD__PLAN_GPU_RESERVE);
    in.budget = gd__max64(0, p->gpu_free - taken) / 2 - attn;
    if (gd__plan_infer(&in, &ip) == GD_OK) {
        gd__plan_add_infer(p, &ip);
    } else {
        gd_clear_error();
        gd__plan_add_infer_none(p, ip.unit_bytes * GD__PLAN_INFER_MIN_CHUNK_ROWS + attn);
    }
fail:
    return st;
}

gd_status gd__trainer_plan(const gd_dataset_t *ds, const gd__train_config *cfg, gd__plan *out) {
    gd_status st = GD_OK;
    gd__trainer t;
    gd__data_config dc;
    memset(&t, 0, sizeof t);
    GD_CHECK(check_config(ds, cfg));
    if (gd_dataset_num_node_types(ds) > 0) return gd__htrain_plan(ds, cfg, out);
    shape_from(&t, ds, cfg);
    data_config(&t, &dc);
    GD_CHECK(gd__datapath_plan(ds, &dc,
                               cfg->context ? gd_context_device(cfg->context) : cfg->device, out));
    GD_CHECK(plan_inference(&t, out));
fail:
    return st;
}

/*
 * Data parallelism: the communicator must move the gradients where the nn backend keeps them
 * (NCCL: GPU memory, the local reference: host memory), and gets its stream and the share log.
 */
static gd_status make_comm(gd__trainer *t) {
    gd_status st = GD_OK;
    if (!t->comm) return GD_OK;
    const int on_device = gd__comm_on_device(t->comm);
    GD_REQUIRE(on_device == t->d->gpu, GD_ERR_INVALID_ARG,
               "trainer: rank %d of %d: --mode %s keeps the gradients in %s memory, but the "
               "communicator sums %s memory: %s",
               gd__comm_rank(t->comm), gd__comm_world(t->comm), mode_names[t->d->mode],
               t->d->gpu ? "GPU" : "host", on_device ? "GPU" : "host",
               on_device ? "several ranks train on GPUs; use a GPU mode (all-gpu, zero-copy, "
                           "cpu-centric or auto)"
                         : "a group of CPU ranks trains in cpu mode");
    GD_ALLOC(t->share_log, (size_t)t->log_cap * sizeof(double), "the loss share log");
    GD_ALLOC(t->sums, (size_t)(2 * t->log_cap + 1) * sizeof(double), "the pass sums");
#ifdef GD_WITH_CUDA
    if (on_device) GD_CHECK(gd__cuda_stream_create(t->cfg.device, &t->s_comm));
#endif
fail:
    return st;
}

gd_status gd__trainer_create(const gd_dataset_t *ds, const gd__train_config *cfg,
                             gd__trainer **out) {
    gd_status st = GD_OK;
    gd__trainer *t = NULL;
    gd_context_t *ctx = NULL;
    char a[32], b[32];
    GD_REQUIRE(out, GD_ERR_INVALID_ARG, "gd__trainer_create: out is NULL");
    *out = NULL;
    GD_CHECK(check_config(ds, cfg));
    GD_ALLOC(t, sizeof *t, "the trainer");
    memset(t, 0, sizeof *t);
    if (gd_dataset_num_node_types(ds) > 0) {
        t->cfg = *cfg;
        t->ds = ds;
        GD_CHECK(gd__htrain_create(ds, cfg, &t->h));
        t->model = gd__htrain_model(t->h);
        t->ctx = *gd__htrain_ctx(t->h);
        *out = t;
        return GD_OK;
    }
    shape_from(t, ds, cfg);
    GD_CHECK(gd__context_acquire(cfg->context, &t->cfg.device, &ctx));
    t->comm = gd__context_comm(ctx);
    gd__data_config dc;
    data_config(t, &dc);
    dc.rank = gd__comm_rank(t->comm);
    dc.world = gd__comm_world(t->comm);
    GD_CHECK(gd__datapath_create(ds, &dc, ctx, &t->ctx, &t->d));
    gd__context_unref(ctx);
    ctx = NULL;
    gd__datapath *d = t->d;
    GD_REQUIRE(d->split_n[0] > 0, GD_ERR_INVALID_ARG,
               "trainer: dataset '%s' has no training nodes (train_idx is absent or empty)",
               gd_dataset_name(ds));

    /* The model. */
    gd__model_config mc;
    model_config(t, d->max_degree, d->sinfo.max_input_nodes, &mc);
    GD_CHECK(gd__model_create(&t->ctx, &mc, cfg->seed, &t->model));
    t->adam = (gd__nn_adam_options)GD__NN_ADAM_OPTIONS_INIT;
    t->adam.lr = cfg->lr;
    t->adam.weight_decay = cfg->weight_decay;
    GD_CHECK(gd__nn_tensor_alloc(&t->ctx, GD_DTYPE_FLOAT32, 1, 1, &t->loss));
    GD_CHECK(t->ctx.be->alloc(&t->ctx, sizeof(int64_t), (void **)&t->d_correct));
    GD_CHECK(gd__nn_tensor_alloc(&t->ctx, GD_DTYPE_FLOAT32, d->batch, d->num_classes, &t->dlogits));
    GD_CHECK(make_logs(t));
    GD_CHECK(make_comm(t));
    GD_CHECK(gd__datapath_place_features(d));
    GD_CHECK(make_pipe(t));
#ifdef GD_WITH_CUDA
    if (d->gpu) {
        int64_t f, total;
        GD_CHECK(gd__cuda_mem_info(t->cfg.device, &f, &total));
        d->gpu_bytes = d->free0 - f;
        GD_REQUIRE(cfg->gpu_mem_budget == 0 || d->gpu_bytes <= cfg->gpu_mem_budget,
                   GD_ERR_NO_MEMORY,
                   "--mode %s took %s of GPU memory, more than the budget of %s: lower "
                   "--gpu-cache or --graph-cache, the batch size or the ring depth",
                   mode_names[d->mode], gd__plan_gib(d->gpu_bytes, a, sizeof a),
                   gd__plan_gib(cfg->gpu_mem_budget, b, sizeof b));
    }
#endif
    (void)a;
    (void)b;
    if (gd__comm_world(t->comm) > 1) {
        /*
         * Every rank built before any trains: a rank's first all-reduce kernel, spinning for
         * the others, must not meet another rank of this process still allocating (comm_nccl.cu
         * says why that deadlocks); and a rank whose build failed stops the others here.
         */
        double built = 1;
        GD_CHECK(gd__comm_sum_host(t->comm, &built, 1));
    }
    GD_INFO("trainer: %s; %d layers, batch %lld, %lld input nodes and %lld edges at most per "
            "minibatch, %lld parameters",
            d->plan.text, cfg->num_layers, (long long)d->batch, (long long)d->sinfo.max_input_nodes,
            (long long)d->sinfo.max_edges, (long long)gd__model_num_params(t->model));
    *out = t;
    return GD_OK;
fail:
    /*
     * The other ranks would wait at their next collective for this one: stop them now, with
     * this rank's reason.
     */
    if (t && gd__comm_world(t->comm) > 1) {
        char why[320];
        snprintf(why, sizeof why, "rank %d could not create its trainer: %.280s",
                 gd__comm_rank(t->comm), gd_last_error());
        gd__comm_abort(t->comm, why);
    }
    gd__context_unref(ctx);
    gd__trainer_destroy(t);
    return st;
}

void gd__trainer_get_info(const gd__trainer *t, gd__trainer_info *info) {
    if (t->h) {
        gd__htrain_info(t->h, info);
        return;
    }
    const gd__datapath *d = t->d;
    memset(info, 0, sizeof *info);
    info->mode = d->mode;
    snprintf(info->plan, sizeof info->plan, "%s", d->plan.text);
    snprintf(info->startup, sizeof info->startup, "%s", d->startup);
    info->max_input_nodes = d->sinfo.max_input_nodes;
    info->max_edges = d->sinfo.max_edges;
    info->feature_bytes = (int64_t)(gd__nn_numel(&d->sets[0].x) * (int64_t)sizeof(float));
    info->num_params = gd__model_num_params(t->model);
    info->train_nodes = d->split_n[0];
    info->valid_nodes = d->split_n[1];
    info->test_nodes = d->split_n[2];
    info->gpu_bytes = d->gpu_bytes;
    info->feature_cache_rows = d->feature_cache_rows;
    info->feature_cache_bytes = d->feature_cache_bytes;
    info->graph_cache_bytes = d->graph_cache_bytes;
}

gd__htrain *gd__trainer_hetero(gd__trainer *t) { return t ? t->h : NULL; }

gd__model *gd__trainer_model(gd__trainer *t) {
    return t->model;
}

const gd__nn_ctx *gd__trainer_nn_ctx(const gd__trainer *t) {
    return &t->ctx;
}

/* ------------------------------------------------------------ one pass */

static uint64_t dropout_seed(const gd__trainer *t, int64_t epoch, int64_t b) {
    gd_philox_ctr k = gd_philox(t->cfg.seed, (uint32_t)epoch, (uint32_t)((uint64_t)epoch >> 32),
                                (uint32_t)b, GD__TRAIN_RNG_DROPOUT);
    return ((uint64_t)k.v[1] << 32) | k.v[0];
}

/*
 * The train stage of minibatch b on its set: forward (with dropout when training), the correct
 * count, and for training the loss, backward and (alone) an Adam step. The loss and the count go
 * to the logs at b. With several ranks, the loss gradient is scaled by this rank's share of the
 * global minibatch's labelled seeds, so that the sum over the ranks of their gradients is the
 * gradient of the global minibatch's mean loss: what one GPU computes at the global batch size.
 */
static gd_status train_stage(void *user, gd__pass *p, int64_t b, int set, void *stream) {
    gd_status st = GD_OK;
    gd__trainer *t = user;
    gd__batch_set *s = &t->d->sets[set];
    gd__nn_tensor x = gd__nn_rows(&s->x, s->num_in), logits;
    gd_block *blocks = s->blocks;
    gd__nn_params *params = gd__model_params(t->model);
    double scale = 1.0;
    (void)stream; /* the nn backend's own stream: the pipeline gave it */
    if (t->comm && p->train) {
        const int64_t global = gd__datapath_global_labelled(t->d, p, b);
        scale = global > 0 ? (double)s->labelled / (double)global : 0.0;
        t->share_log[b] = scale;
    }
    if (s->seeds == 0) {
        /* No share of this global minibatch: no loss, and zero gradients to the all-reduce. */
        t->correct_log[b] = 0;
        if (p->train) {
            t->loss_log[b] = 0;
            GD_CHECK(gd__nn_params_zero_grad(&t->ctx, params));
        }
        return GD_OK;
    }
    GD_CHECK(gd__model_forward(t->model, blocks, &x, s->node_ids, p->train,
                               dropout_seed(t, p->epoch, b), &logits));
    GD_CHECK(gd__nn_accuracy(&t->ctx, &logits, s->labels, t->d_correct));
    if (p->train) {
        gd__nn_tensor dl = gd__nn_rows(&t->dlogits, s->seeds);
        GD_CHECK(gd__nn_softmax_xent(&t->ctx, &logits, s->labels, scale, &t->loss, &dl));
        GD_CHECK(gd__nn_params_zero_grad(&t->ctx, params));
        GD_CHECK(gd__model_backward(t->model, blocks, &dl, NULL));
        if (!t->comm) GD_CHECK(gd__nn_params_adam(&t->ctx, params, &t->adam));
    }
#ifdef GD_WITH_CUDA
    if (t->d->gpu) {
        if (p->train)
            GD_CHECK(
                gd__cuda_memcpy_async(&t->loss_log[b], t->loss.data, sizeof(float), t->ctx.stream));
        GD_CHECK(gd__cuda_memcpy_async(&t->correct_log[b], t->d_correct, sizeof(int64_t),
                                       t->ctx.stream));
        return GD_OK;
    }
#endif
    if (p->train) t->loss_log[b] = *(const float *)t->loss.data;
    t->correct_log[b] = *t->d_correct;
fail:
    return st;
}

/* Several ranks: sum the flat gradient buffer over the ranks (one collective). */
static gd_status allreduce_stage(void *user, gd__pass *p, int64_t b, int set, void *stream) {
    gd__trainer *t = user;
    gd__nn_params *params = gd__model_params(t->model);
    (void)b;
    (void)set;
    if (!p->train) return GD_OK;
    return gd__comm_allreduce_f32(t->comm, (float *)params->grads.data, params->numel, stream);
}

/* Several ranks: the Adam step with the summed gradients, the same on every rank. */
static gd_status optimize_stage(void *user, gd__pass *p, int64_t b, int set, void *stream) {
    gd__trainer *t = user;
    (void)b;
    (void)set;
    (void)stream;
    if (!p->train) return GD_OK;
    return gd__nn_params_adam(&t->ctx, gd__model_params(t->model), &t->adam);
}

/* The loss of the latest minibatch before `issued` that has finished, without waiting. */
static double latest_loss(gd__trainer *t, int64_t issued) {
    for (int64_t b = issued - 1; b >= 0 && b >= issued - t->d->depth; b--)
        if (gd__pipe_done(t->pipe, b)) return t->loss_log[b];
    return NAN;
}

/* Report progress every report_every minibatches; a non-zero answer interrupts. */
static gd_status report(gd__trainer *t, gd__pass *p, int64_t done) {
    const int64_t every = t->cfg.report_every > 0 ? t->cfg.report_every : 20;
    if (!t->cfg.progress || !p->train || (done % every != 0 && done != p->batches)) return GD_OK;
    if (t->cfg.progress(t->cfg.progress_user, done, p->batches, latest_loss(t, done)))
        return gd__error(GD_ERR_INTERRUPTED, "training interrupted at minibatch %lld of %lld",
                         (long long)done, (long long)p->batches);
    return GD_OK;
}

/*
 * Several ranks: turn this rank's logs of pass p into the global minibatches' (every rank gets
 * the same): the loss of global minibatch b is the sum of the ranks' mean losses weighted by
 * their shares of its labelled seeds, the correct counts and the labelled seeds add up.
 */
static gd_status sum_over_ranks(gd__trainer *t, gd__pass *p) {
    gd_status st = GD_OK;
    const int64_t n = p->batches;
    double *v = t->sums;
    if (!t->comm) return GD_OK;
    for (int64_t b = 0; b < n; b++) {
        v[b] = p->train ? (double)t->loss_log[b] * t->share_log[b] : 0.0;
        v[n + b] = (double)t->correct_log[b];
    }
    v[2 * n] = (double)p->labelled;
    GD_CHECK(gd__comm_sum_host(t->comm, v, 2 * n + 1));
    for (int64_t b = 0; b < n; b++) {
        if (p->train) t->loss_log[b] = (float)v[b];
        t->correct_log[b] = (int64_t)v[n + b];
    }
    p->labelled = (int64_t)v[2 * n];
fail:
    return st;
}

/* Every minibatch of a pass over ids[0..n) through the pipeline. */
static gd_status run_pass(gd__trainer *t, const int64_t *ids, int64_t n, int64_t epoch, int train,
                          gd__pass *p) {
    gd_status st = GD_OK;
    GD_CHECK(gd__datapath_start_pass(t->d, ids, n, epoch, train, p));
    if (train && t->cfg.max_batches > 0) p->batches = gd__min64(p->batches, t->cfg.max_batches);
    GD_REQUIRE(p->batches <= t->log_cap, GD_ERR_INTERNAL,
               "trainer: %lld minibatches, the logs hold %lld", (long long)p->batches,
               (long long)t->log_cap);
    gd__pipe_start(t->pipe, p);
    for (int64_t b = 0; b < p->batches && st == GD_OK; b++) {
        st = gd__pipe_issue(t->pipe, b);
        if (st == GD_OK) st = report(t, p, b + 1);
    }
    st = gd__pipe_finish(t->pipe, st);
    GD_CHECK(st);
    GD_CHECK(gd__datapath_check_errors(t->d));
    GD_CHECK(gd__nn_check_errors(&t->ctx));
    GD_CHECK(gd__comm_check(t->comm));
    GD_CHECK(sum_over_ranks(t, p));
fail:
    return st;
}

gd_status gd__trainer_epoch(gd__trainer *t, int64_t epoch, gd__train_epoch_stats *stats) {
    gd_status st = GD_OK;
    GD_REQUIRE(t && stats, GD_ERR_INVALID_ARG, "gd__trainer_epoch: NULL trainer or stats");
    GD_REQUIRE(epoch >= 0 && epoch < GD__TRAIN_EVAL_EPOCH, GD_ERR_INVALID_ARG,
               "gd__trainer_epoch: epoch %lld out of range", (long long)epoch);
    if (t->h) return gd__htrain_epoch(t->h, epoch, stats);
    memset(stats, 0, sizeof *stats);
    stats->epoch = epoch;
    gd__datapath *d = t->d;
    const double start = gd__now(), cpu0 = gd__cpu_seconds();
    const int64_t n = d->split_n[0];
    int64_t num_batches, correct = 0, disk_rows0, disk_bytes0, host_rows0, host_bytes0;
    gd__pass p;
    GD_CHECK(gd__datapath_disk_read(d, &disk_rows0, &disk_bytes0));
    gd__datapath_host_copied(d, &host_rows0, &host_bytes0);
    GD_CHECK(
        gd_seed_batches(d->split[0], n, d->batch, t->cfg.seed, epoch, 0, d->order, &num_batches));
    GD_CHECK(run_pass(t, d->order, n, epoch, 1, &p));
    double loss_sum = 0;
    for (int64_t b = 0; b < p.batches; b++) {
        GD_REQUIRE(isfinite(t->loss_log[b]), GD_ERR_RANGE,
                   "trainer: the loss of epoch %lld, minibatch %lld is %g; lower the learning "
                   "rate (now %g)",
                   (long long)epoch, (long long)b, (double)t->loss_log[b], t->cfg.lr);
        loss_sum += t->loss_log[b];
        correct += t->correct_log[b];
    }
    stats->batches = p.batches;
    stats->loss = p.batches ? loss_sum / (double)p.batches : NAN;
    stats->train_acc = p.labelled ? (double)correct / (double)p.labelled : NAN;
    stats->seconds = gd__now() - start;
    stats->cpu_core_s = gd__cpu_seconds() - cpu0;
    stats->sample_s = p.stage_s[ST_SAMPLE];
    stats->gather_s = p.stage_s[ST_GATHER];
    stats->train_s = p.stage_s[ST_TRAIN] + (t->comm ? p.stage_s[ST_OPTIMIZE] : 0);
    stats->allreduce_s = t->comm ? p.stage_s[ST_ALLREDUCE] : 0;
    GD_CHECK(gd__datapath_disk_read(d, &stats->disk_rows_read, &stats->disk_bytes_read));
    stats->disk_rows_read -= disk_rows0;
    stats->disk_bytes_read -= disk_bytes0;
    gd__datapath_host_copied(d, &stats->host_rows_copied, &stats->host_bytes_copied);
    stats->host_rows_copied -= host_rows0;
    stats->host_bytes_copied -= host_bytes0;
    if (d->gpu) {
        stats->wait_s = stats->seconds > stats->train_s ? stats->seconds - stats->train_s : 0;
#ifdef GD_WITH_CUDA
        int64_t f, total;
        GD_CHECK(gd__cuda_mem_info(t->cfg.device, &f, &total));
        stats->gpu_mem_bytes = total - f;
#endif
    }
fail:
    return st;
}

gd_status gd__trainer_evaluate(gd__trainer *t, gd_array_id split, double *accuracy,
                               int64_t *count) {
    gd_status st = GD_OK;
    GD_REQUIRE(t && accuracy, GD_ERR_INVALID_ARG, "gd__trainer_evaluate: NULL argument");
    GD_REQUIRE(split >= GD_ARRAY_TRAIN_IDX && split <= GD_ARRAY_TEST_IDX, GD_ERR_INVALID_ARG,
               "gd__trainer_evaluate: %s is not a split (train_idx, valid_idx or test_idx)",
               gd_array_name(split));
    if (t->h) return gd__htrain_evaluate(t->h, split, accuracy, count);
    const int s = (int)(split - GD_ARRAY_TRAIN_IDX);
    gd__pass p;
    int64_t correct = 0;
    memset(&p, 0, sizeof p);
    if (t->d->split_n[s] > 0)
        GD_CHECK(run_pass(t, t->d->split[s], t->d->split_n[s], GD__TRAIN_EVAL_EPOCH + s, 0, &p));
    for (int64_t b = 0; b < p.batches; b++) correct += t->correct_log[b];
    *accuracy = p.labelled ? (double)correct / (double)p.labelled : NAN;
    if (count) *count = p.labelled;
fail:
    return st;
}

gd_status gd__trainer_params_get(gd__trainer *t, void *params, void *state) {
    gd_status st = GD_OK;
    GD_REQUIRE(t && params, GD_ERR_INVALID_ARG, "gd__trainer_params_get: NULL argument");
    const gd__nn_params *p = gd__model_params(t->model);
    GD_CHECK(gd__nn_to_host(&t->ctx, &p->params, params));
    if (state) GD_CHECK(gd__nn_to_host(&t->ctx, &p->state, state));
fail:
    return st;
}

gd_status gd__trainer_params_set(gd__trainer *t, const void *params, const void *state,
                                 int64_t adam_step) {
    gd_status st = GD_OK;
    GD_REQUIRE(t && params, GD_ERR_INVALID_ARG, "gd__trainer_params_set: NULL argument");
    GD_REQUIRE(adam_step >= 0, GD_ERR_INVALID_ARG, "gd__trainer_params_set: step %lld",
               (long long)adam_step);
    gd__nn_params *p = gd__model_params(t->model);
    GD_CHECK(gd__nn_from_host(&t->ctx, &p->params, params));
    if (state) {
        GD_CHECK(gd__nn_from_host(&t->ctx, &p->state, state));
        p->step = adam_step;
    }
fail:
    return st;
}

/* ------------------------------------------------------------ checkpoints */

void gd__trainer_checkpoint_meta(const gd__trainer *t, gd__checkpoint_meta *m) {
    if (t->h) {
        gd__htrain_checkpoint_meta(t->h, m);
        return;
    }
    gd__checkpoint_meta_init(m);
    snprintf(m->model, sizeof m->model, "%s", gd__model_iface(t->model)->name);
    m->num_layers = t->cfg.num_layers;
    m->in_dim = t->d->in_dim;
    m->hidden_dim = t->cfg.hidden_dim;
    m->heads = t->cfg.heads > 0 ? t->cfg.heads : 1;
    m->num_classes = t->d->num_classes;
    sampler_fanouts(&t->cfg, m->fanouts);
    m->seed = t->cfg.seed;
    m->adam_step = gd__model_params(t->model)->step;
    snprintf(m->dataset, sizeof m->dataset, "%s nodes=%lld edges=%lld features=%lld classes=%lld",
             gd_dataset_name(t->d->ds), (long long)t->d->num_nodes,
             (long long)gd_dataset_num_edges(t->d->ds), (long long)t->d->in_dim,
             (long long)t->d->num_classes);
    /* The mode is left out on purpose: every mode samples and trains the same way. */
    char attn[48] = "";
    if (t->cfg.attn_dropout > 0) snprintf(attn, sizeof attn, " attn_dropout=%g", t->cfg.attn_dropout);
    /* The global batch: a run of N ranks at B / N each resumes one of any other rank count. */
    snprintf(m->config, sizeof m->config,
             "batch=%lld dropout=%g lr=%g weight_decay=%g mlp=%d max_batches=%lld%s",
             (long long)t->cfg.batch_size * gd__comm_world(t->comm), t->cfg.dropout, t->cfg.lr, t->cfg.weight_decay,
             t->cfg.mlp, (long long)t->cfg.max_batches, attn);
}

gd_status gd__trainer_save(gd__trainer *t, const char *path, const gd__checkpoint_meta *meta,
                           const void *params, int with_state) {
    gd_status st = GD_OK;
    void *host = NULL, *state = NULL;
    GD_REQUIRE(t && path && meta, GD_ERR_INVALID_ARG, "gd__trainer_save: NULL argument");
    const size_t bytes = (size_t)gd__model_num_params(t->model) * sizeof(float);
    if (!params || with_state) {
        GD_ALLOC(host, bytes, "a copy of the parameters");
        if (with_state) GD_ALLOC(state, 2 * bytes, "a copy of the optimizer state");
        GD_CHECK(gd__trainer_params_get(t, host, state));
    }
    GD_CHECK(
        gd__checkpoint_save(path, meta, gd__model_params(t->model), params ? params : host, state));
fail:
    gd_free(host);
    gd_free(state);
    return st;
}

gd_status gd__trainer_resume(gd__trainer *t, const char *path, gd__checkpoint_meta *saved) {
    gd_status st = GD_OK;
    void *params = NULL, *state = NULL;
    int has_state = 0;
    gd__checkpoint_meta run;
    GD_REQUIRE(t && path && saved, GD_ERR_INVALID_ARG, "gd__trainer_resume: NULL argument");
    const size_t bytes = (size_t)gd__model_num_params(t->model) * sizeof(float);
    GD_ALLOC(params, bytes, "the checkpoint's parameters");
    GD_ALLOC(state, 2 * bytes, "the checkpoint's optimizer state");
    GD_CHECK(gd__checkpoint_peek(path, saved, NULL, &has_state));
    gd__trainer_checkpoint_meta(t, &run);
    GD_CHECK(gd__checkpoint_check_resume(path, saved, &run));
    GD_REQUIRE(has_state, GD_ERR_INVALID_ARG,
               "'%s' holds a model without the optimizer state (a best-model file); resume from "
               "the checkpoint file instead",
               path);
    GD_CHECK(
        gd__checkpoint_load(path, gd__model_params(t->model), saved, params, state, &has_state));
    GD_CHECK(gd__trainer_params_set(t, params, state, saved->adam_step));
fail:
    gd_free(params);
    gd_free(state);
    return st;
}

gd_host_tensor_t *gd__trainer_registered_features(gd__trainer *t) {
    return t && t->d && t->d->features && gd_host_tensor_is_registered(t->d->features)
               ? t->d->features
               : NULL;
}

int gd__trainer_rank(const gd__trainer *t) {
    return t ? gd__comm_rank(t->comm) : 0;
}

void gd__trainer_set_max_batches(gd__trainer *t, int64_t max_batches) {
    if (t && max_batches >= 0) t->cfg.max_batches = max_batches;
    if (t && t->h) gd__htrain_set_max_batches(t->h, max_batches);
}

int gd__trainer_locality_adapt(gd__trainer *t, double gather_s, double train_s, double epoch_s) {
    if (t->h) return 0;
    return gd__datapath_locality_adapt(t->d, gather_s, train_s, epoch_s);
}
