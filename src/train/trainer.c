/*
 * The trainer, cpu mode: the data path of docs/design.md run one minibatch after another on the
 * CPU. For each minibatch the CPU sampler writes the blocks and the input node ids, the CPU
 * gather copies the input nodes' feature rows into one buffer, and the CPU nn backend runs
 * GraphSAGE forward, softmax cross-entropy, backward and an Adam step. Evaluation is the same
 * minus the backward, without dropout, over a split in order.
 *
 * Everything is allocated at create: the minibatch buffer (sized by the sampler from the batch
 * size and the fanouts), the feature buffer (its max_input_nodes rows), the model with its
 * activations (sized per layer by the same worst case as the sampler's), the labels and the
 * gradient of the logits, int64 copies of the three splits and the epoch's shuffled order.
 */
#include "train/internal.h"

#include "nn/internal.h"

#include <math.h>
#include <string.h>

/* Philox domain of the per-minibatch dropout keys ("trDK"). */
#define GD__TRAIN_RNG_DROPOUT 0x7472444bu
/* The epoch key of evaluation draws: far from any training epoch, one per split. */
#define GD__TRAIN_EVAL_EPOCH (INT64_C(1) << 48)

struct gd__trainer {
    gd__train_config cfg;
    const gd_dataset_t *ds;
    int64_t num_nodes, in_dim, num_classes;
    gd__nn_ctx ctx;
    gd_graph_t *graph;
    gd_sampler_t *sampler;
    gd_sampler_info sinfo;
    gd_minibatch_t *mb;
    gd_host_tensor_t *features;
    gd_gatherer_t *gatherer;
    gd__sage *model;
    gd__nn_adam_options adam;
    gd__nn_tensor x;       /* max_input_nodes x in_dim: the gathered rows */
    gd__nn_tensor loss;    /* 1 x 1 */
    gd__nn_tensor dlogits; /* batch_size x num_classes */
    int64_t *labels;       /* batch_size: the labels of the seeds */
    gd_array_view label_view;
    int64_t *split[3]; /* train, valid, test node ids as int64 (NULL: absent) */
    int64_t split_n[3];
    int64_t *order; /* split_n[0]: the shuffled train ids of an epoch */
};

static int64_t min64(int64_t a, int64_t b) {
    return a < b ? a : b;
}

static int64_t int_at(const gd_array_view *v, int64_t i) {
    return v->dtype == GD_DTYPE_INT32 ? (int64_t)((const int32_t *)v->data)[i]
                                      : ((const int64_t *)v->data)[i];
}

void gd__trainer_destroy(gd__trainer *t) {
    if (!t) return;
    gd__sage_destroy(t->model);
    gd__nn_tensor_free(&t->ctx, &t->x);
    gd__nn_tensor_free(&t->ctx, &t->loss);
    gd__nn_tensor_free(&t->ctx, &t->dlogits);
    gd_gatherer_destroy(t->gatherer);
    gd_host_tensor_destroy(t->features);
    gd_minibatch_destroy(t->mb);
    gd_sampler_destroy(t->sampler);
    gd_graph_destroy(t->graph);
    for (int i = 0; i < 3; i++) gd_free(t->split[i]);
    gd_free(t->order);
    gd_free(t->labels);
    gd_free(t);
}

static gd_status check_config(const gd_dataset_t *ds, const gd__train_config *c) {
    gd_status st = GD_OK;
    GD_REQUIRE(ds && c, GD_ERR_INVALID_ARG, "gd__trainer_create: NULL dataset or config");
    GD_REQUIRE(c->num_layers >= 1 && c->num_layers <= GD_SAMPLER_MAX_LAYERS &&
                   c->num_layers <= GD__SAGE_MAX_LAYERS,
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
    GD_REQUIRE(gd_dataset_feature_dim(ds) > 0, GD_ERR_INVALID_ARG,
               "trainer: dataset '%s' has no node features", gd_dataset_name(ds));
    GD_REQUIRE(gd_dataset_num_classes(ds) >= 2, GD_ERR_INVALID_ARG,
               "trainer: dataset '%s' has %lld classes; training needs labels of >= 2 classes",
               gd_dataset_name(ds), (long long)gd_dataset_num_classes(ds));
fail:
    return st;
}

/* An int64 copy of split id (NULL and 0 if the dataset has none). */
static gd_status load_split(const gd_dataset_t *ds, gd_array_id id, int64_t **out, int64_t *n) {
    gd_status st = GD_OK;
    gd_array_view v;
    *out = NULL;
    *n = 0;
    st = gd_dataset_array(ds, id, &v);
    if (st == GD_ERR_NOT_FOUND) {
        gd_clear_error();
        return GD_OK;
    }
    GD_CHECK(st);
    int64_t *ids = NULL;
    GD_ALLOC(ids, (size_t)v.shape[0] * sizeof(int64_t), gd_array_name(id));
    for (int64_t i = 0; i < v.shape[0]; i++) ids[i] = int_at(&v, i);
    *out = ids;
    *n = v.shape[0];
fail:
    return st;
}

gd_status gd__trainer_create(const gd_dataset_t *ds, const gd__train_config *cfg,
                             gd__trainer **out) {
    gd_status st = GD_OK;
    gd__trainer *t = NULL;
    GD_REQUIRE(out, GD_ERR_INVALID_ARG, "gd__trainer_create: out is NULL");
    *out = NULL;
    GD_CHECK(check_config(ds, cfg));
    GD_ALLOC(t, sizeof *t, "the trainer");
    memset(t, 0, sizeof *t);
    t->cfg = *cfg;
    t->ds = ds;
    t->ctx = gd__nn_cpu_ctx();
    t->num_nodes = gd_dataset_num_nodes(ds);
    t->in_dim = gd_dataset_feature_dim(ds);
    t->num_classes = gd_dataset_num_classes(ds);
    const int L = cfg->num_layers;
    int fanouts[GD_SAMPLER_MAX_LAYERS];
    for (int h = 0; h < L; h++) fanouts[h] = cfg->mlp ? 0 : cfg->fanouts[h];

    /* The splits and the labels. */
    for (int i = 0; i < 3; i++)
        GD_CHECK(
            load_split(ds, (gd_array_id)(GD_ARRAY_TRAIN_IDX + i), &t->split[i], &t->split_n[i]));
    GD_REQUIRE(t->split_n[0] > 0, GD_ERR_INVALID_ARG,
               "trainer: dataset '%s' has no training nodes (train_idx is absent or empty)",
               gd_dataset_name(ds));
    GD_ALLOC(t->order, (size_t)t->split_n[0] * sizeof(int64_t), "the epoch order");
    GD_CHECK(gd_dataset_array(ds, GD_ARRAY_LABELS, &t->label_view));

    /* The graph where the CPU sampler reads it, the sampler and its minibatch buffer. */
    const int64_t batch = min64(cfg->batch_size, t->num_nodes);
    GD_CHECK(gd_graph_create_from_dataset(ds, NULL, &t->graph));
    gd_sampler_options so = GD_SAMPLER_OPTIONS_INIT;
    so.backend = GD_SAMPLER_CPU;
    so.max_batch = batch;
    so.seed = cfg->seed;
    so.threads = cfg->threads;
    GD_CHECK(gd_sampler_create(t->graph, fanouts, L, &so, &t->sampler));
    t->sinfo = (gd_sampler_info)GD_SAMPLER_INFO_INIT;
    GD_CHECK(gd_sampler_get_info(t->sampler, &t->sinfo));
    GD_CHECK(gd_minibatch_create(t->sampler, &t->mb));

    /* The feature table (borrowed from the dataset) and the CPU gatherer. */
    gd_array_view fv;
    GD_CHECK(gd_dataset_array(ds, GD_ARRAY_FEATURES, &fv));
    GD_REQUIRE(fv.dtype == GD_DTYPE_FLOAT32, GD_ERR_UNSUPPORTED,
               "trainer: dataset '%s' has %s features; cpu mode trains on float32 features "
               "(regenerate or convert with float32)",
               gd_dataset_name(ds), gd_dtype_name(fv.dtype));
    GD_CHECK(gd_host_tensor_adopt(fv.data, fv.shape[0], fv.shape[1], fv.dtype,
                                  GD_HOST_TENSOR_READ_ONLY, &t->features));
    gd_gatherer_options go = GD_GATHERER_OPTIONS_INIT;
    go.threads = cfg->threads;
    GD_CHECK(gd_gatherer_create(t->features, 0, GD_GATHER_CPU, &go, &t->gatherer));

    /*
     * The model, sized per layer by the worst case of each hop: a hop of d destination nodes
     * and fanout k has at most d (1 + k) source nodes (k capped by the largest in-degree), and
     * at most all the nodes; the input layer by the sampler's own bound.
     */
    gd_graph_info gi = GD_GRAPH_INFO_INIT;
    GD_CHECK(gd_graph_get_info(t->graph, &gi));
    gd__sage_config mc = {0};
    mc.num_layers = L;
    mc.in_dim = t->in_dim;
    mc.hidden_dim = cfg->hidden_dim;
    mc.num_classes = t->num_classes;
    mc.dropout = cfg->dropout;
    mc.dtype = GD_DTYPE_FLOAT32;
    int64_t nodes = batch;
    mc.max_nodes[L] = nodes;
    for (int h = 0; h < L; h++) {
        int64_t k = fanouts[h] < 0 ? gi.max_degree : min64(fanouts[h], gi.max_degree), next;
        if (gd__mul_overflow_i64(nodes, k + 1, &next)) next = INT64_MAX;
        nodes = min64(next, t->num_nodes);
        mc.max_nodes[L - 1 - h] = nodes;
    }
    mc.max_nodes[0] = min64(mc.max_nodes[0], t->sinfo.max_input_nodes);
    GD_CHECK(gd__sage_create(&t->ctx, &mc, cfg->seed, &t->model));
    t->adam = (gd__nn_adam_options)GD__NN_ADAM_OPTIONS_INIT;
    t->adam.lr = cfg->lr;
    t->adam.weight_decay = cfg->weight_decay;

    /* The per-minibatch buffers. */
    GD_CHECK(
        gd__nn_tensor_alloc(&t->ctx, GD_DTYPE_FLOAT32, t->sinfo.max_input_nodes, t->in_dim, &t->x));
    GD_CHECK(gd__nn_tensor_alloc(&t->ctx, GD_DTYPE_FLOAT32, 1, 1, &t->loss));
    GD_CHECK(gd__nn_tensor_alloc(&t->ctx, GD_DTYPE_FLOAT32, batch, t->num_classes, &t->dlogits));
    GD_ALLOC(t->labels, (size_t)batch * sizeof(int64_t), "the labels of a minibatch");
    GD_INFO("trainer: %d layers, batch %lld, %lld input nodes and %lld edges at most per "
            "minibatch, %lld parameters",
            L, (long long)batch, (long long)t->sinfo.max_input_nodes, (long long)t->sinfo.max_edges,
            (long long)t->model->params.numel);
    *out = t;
    return GD_OK;
fail:
    gd__trainer_destroy(t);
    return st;
}

void gd__trainer_get_info(const gd__trainer *t, gd__trainer_info *info) {
    memset(info, 0, sizeof *info);
    info->max_input_nodes = t->sinfo.max_input_nodes;
    info->max_edges = t->sinfo.max_edges;
    info->feature_bytes = (int64_t)(gd__nn_numel(&t->x) * (int64_t)sizeof(float));
    info->num_params = t->model->params.numel;
    info->train_nodes = t->split_n[0];
    info->valid_nodes = t->split_n[1];
    info->test_nodes = t->split_n[2];
}

/* The outcome of one minibatch. */
typedef struct {
    double loss;
    int64_t correct, labelled;
    double sample_s, gather_s, nn_s;
} batch_result;

/*
 * Sample, gather and run one minibatch of seeds[0..n). train = 1: forward with dropout, loss,
 * backward and an Adam step; 0: forward only.
 */
static gd_status run_batch(gd__trainer *t, const int64_t *seeds, int64_t n, int64_t epoch,
                           int64_t batch, int train, batch_result *r) {
    gd_status st = GD_OK;
    const int L = t->cfg.num_layers;
    gd_block blocks[GD_SAMPLER_MAX_LAYERS];
    const int64_t *ids;
    int64_t num_in;
    double t0 = gd__now();
    GD_CHECK(gd_sample(t->sampler, seeds, n, 0, epoch, batch, NULL, t->mb));
    for (int l = 0; l < L; l++) GD_CHECK(gd_minibatch_block(t->mb, l, &blocks[l]));
    GD_CHECK(gd_minibatch_input_nodes(t->mb, &ids, &num_in));
    double t1 = gd__now();
    GD_CHECK(gd_gather(t->gatherer, ids, num_in, 0, t->x.data, NULL));
    /* The seeds were checked by the sampler: their labels can be read. */
    r->labelled = 0;
    for (int64_t i = 0; i < n; i++) {
        t->labels[i] = int_at(&t->label_view, seeds[i]);
        r->labelled += t->labels[i] >= 0;
    }
    double t2 = gd__now();

    gd__nn_tensor x = gd__nn_rows(&t->x, num_in), logits;
    gd_philox_ctr k = gd_philox(t->cfg.seed, (uint32_t)epoch, (uint32_t)((uint64_t)epoch >> 32),
                                (uint32_t)batch, GD__TRAIN_RNG_DROPOUT);
    uint64_t dropout_seed = ((uint64_t)k.v[1] << 32) | k.v[0];
    GD_CHECK(gd__sage_forward(t->model, blocks, &x, train, dropout_seed, &logits));
    GD_CHECK(gd__nn_accuracy(&t->ctx, &logits, t->labels, &r->correct));
    r->loss = 0;
    if (train) {
        gd__nn_tensor dl = gd__nn_rows(&t->dlogits, n);
        float loss;
        GD_CHECK(gd__nn_softmax_xent(&t->ctx, &logits, t->labels, 1.0, &t->loss, &dl));
        GD_CHECK(gd__nn_params_zero_grad(&t->ctx, &t->model->params));
        GD_CHECK(gd__sage_backward(t->model, blocks, &dl, NULL));
        GD_CHECK(gd__nn_params_adam(&t->ctx, &t->model->params, &t->adam));
        GD_CHECK(gd__nn_to_host(&t->ctx, &t->loss, &loss));
        r->loss = loss;
    }
    double t3 = gd__now();
    r->sample_s = t1 - t0;
    r->gather_s = t2 - t1;
    r->nn_s = t3 - t2;
fail:
    return st;
}

gd_status gd__trainer_epoch(gd__trainer *t, int64_t epoch, gd__train_epoch_stats *stats) {
    gd_status st = GD_OK;
    GD_REQUIRE(t && stats, GD_ERR_INVALID_ARG, "gd__trainer_epoch: NULL trainer or stats");
    GD_REQUIRE(epoch >= 0 && epoch < GD__TRAIN_EVAL_EPOCH, GD_ERR_INVALID_ARG,
               "gd__trainer_epoch: epoch %lld out of range", (long long)epoch);
    memset(stats, 0, sizeof *stats);
    stats->epoch = epoch;
    double start = gd__now();
    const int64_t n = t->split_n[0], bs = t->dlogits.rows;
    int64_t num_batches, correct = 0, labelled = 0;
    double loss_sum = 0;
    GD_CHECK(gd_seed_batches(t->split[0], n, bs, t->cfg.seed, epoch, 0, t->order, &num_batches));
    for (int64_t b = 0; b < num_batches; b++) {
        batch_result r;
        const int64_t lo = b * bs, cnt = min64(bs, n - lo);
        GD_CHECK(run_batch(t, t->order + lo, cnt, epoch, b, 1, &r));
        GD_REQUIRE(isfinite(r.loss), GD_ERR_RANGE,
                   "trainer: the loss of epoch %lld, minibatch %lld is %g; lower the learning "
                   "rate (now %g)",
                   (long long)epoch, (long long)b, r.loss, t->cfg.lr);
        loss_sum += r.loss;
        correct += r.correct;
        labelled += r.labelled;
        stats->sample_s += r.sample_s;
        stats->gather_s += r.gather_s;
        stats->nn_s += r.nn_s;
    }
    stats->batches = num_batches;
    stats->loss = num_batches ? loss_sum / (double)num_batches : NAN;
    stats->train_acc = labelled ? (double)correct / (double)labelled : NAN;
    stats->seconds = gd__now() - start;
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
    const int s = (int)(split - GD_ARRAY_TRAIN_IDX);
    const int64_t n = t->split_n[s], bs = t->dlogits.rows;
    const int64_t epoch = GD__TRAIN_EVAL_EPOCH + s;
    int64_t correct = 0, labelled = 0;
    for (int64_t lo = 0, b = 0; lo < n; lo += bs, b++) {
        batch_result r;
        GD_CHECK(run_batch(t, t->split[s] + lo, min64(bs, n - lo), epoch, b, 0, &r));
        correct += r.correct;
        labelled += r.labelled;
    }
    *accuracy = labelled ? (double)correct / (double)labelled : NAN;
    if (count) *count = labelled;
fail:
    return st;
}
