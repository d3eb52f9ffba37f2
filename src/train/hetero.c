/*
 * The trainer's data path for heterogeneous graphs (docs/hetero.md): the typed sampler, a
 * gather of each node type's input rows from that type's own table, and a relational model
 * (R-SAGE or R-GAT: any kind with typed entries) through the model interface, so that the
 * public trainer (fit, evaluate, checkpoints, the best model, resume) runs it as it runs
 * GraphSAGE. trainer.c hands a heterogeneous dataset
 * here at create and calls this file for the epochs and the evaluations; parameters, Adam and
 * checkpoints stay in trainer.c, which reads them through the model.
 *
 * This version runs the whole path on the CPU (mode cpu): sampling and the per-type gather on
 * CPU threads, the model on the CPU backend, one minibatch after another. The GPU modes of a
 * heterogeneous dataset are refused with a message saying so (docs/hetero.md lists what is not
 * built).
 */
#include "core/comm.h"
#include "nn/rsage.h"
#include "sample/hetero.h"
#include "train/internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* Philox domain of the per-minibatch dropout keys, as trainer.c's ("trDK"). */
#define HT_RNG_DROPOUT 0x7472444bu

struct gd__htrain {
    const gd_dataset_t *ds;
    gd__train_config cfg;
    int T, R, L, target;
    gd__model_kind kind; /* the model's: cfg.model, or R-SAGE for the MLP baseline */
    gd_hetero_sampler_t *sampler;
    gd_hetero_minibatch_t *mb;
    gd__nn_ctx ctx;
    gd__model *model;
    gd__nn_adam_options adam;
    /* The gathered input rows of each type (float32, capacity rows x width), their ids. */
    gd__nn_tensor x[GD_MAX_NODE_TYPES];
    const gd__nn_tensor *xp[GD_MAX_NODE_TYPES];
    const int64_t *ids[GD_MAX_NODE_TYPES];
    gd_array_view feat[GD_MAX_NODE_TYPES]; /* data NULL: the type has no features */
    gd_block blocks[GD_SAMPLER_MAX_LAYERS * GD_MAX_EDGE_TYPES];
    int64_t num_nodes[(GD_SAMPLER_MAX_LAYERS + 1) * GD_MAX_NODE_TYPES];
    int64_t *labels; /* the seeds' labels */
    gd__nn_tensor loss, dlogits;
    int64_t correct;
    /* The splits and the shuffled order of an epoch. */
    gd_array_view split[3];
    int64_t *order;
    gd_array_view label_view;
};

/* The dropout key of minibatch b of an epoch, as the homogeneous trainer draws it. */
static uint64_t dropout_seed(const gd__htrain *h, int64_t epoch, int64_t b) {
    gd_philox_ctr k = gd_philox(h->cfg.seed, (uint32_t)epoch, (uint32_t)((uint64_t)epoch >> 32),
                                (uint32_t)b, HT_RNG_DROPOUT);
    return ((uint64_t)k.v[1] << 32) | k.v[0];
}

static float elem(const gd_array_view *v, int64_t i) {
    switch (v->dtype) {
    case GD_DTYPE_FLOAT16:
        return gd_half_to_float(((const uint16_t *)v->data)[i]);
    case GD_DTYPE_BFLOAT16:
        return gd_bfloat16_to_float(((const uint16_t *)v->data)[i]);
    default:
        return ((const float *)v->data)[i];
    }
}

void gd__htrain_destroy(gd__htrain *h) {
    if (!h) return;
    for (int t = 0; t < GD_MAX_NODE_TYPES; t++) gd__nn_tensor_free(&h->ctx, &h->x[t]);
    gd__nn_tensor_free(&h->ctx, &h->loss);
    gd__nn_tensor_free(&h->ctx, &h->dlogits);
    gd__model_destroy(h->model);
    gd_hetero_minibatch_destroy(h->mb);
    gd_hetero_sampler_destroy(h->sampler);
    gd_free(h->labels);
    gd_free(h->order);
    gd_free(h);
}

gd_status gd__htrain_create(const gd_dataset_t *ds, const gd__train_config *cfg, gd__htrain **out) {
    gd_status st = GD_OK;
    gd__htrain *h = NULL;
    *out = NULL;
    GD_REQUIRE(cfg->mode == GD__TRAIN_CPU || cfg->mode == GD__TRAIN_AUTO, GD_ERR_UNSUPPORTED,
               "trainer: dataset '%s' is heterogeneous; relational models train in mode cpu in "
               "this version (the typed sampler and the per-type gather run on the CPU): use "
               "--mode cpu",
               gd_dataset_name(ds));
    GD_REQUIRE(gd__model_kind_typed(cfg->model), GD_ERR_INVALID_ARG,
               "trainer: dataset '%s' is heterogeneous (%d node types, %d edge types); train "
               "it with a relational model: --model rsage or --model rgat",
               gd_dataset_name(ds), gd_dataset_num_node_types(ds), gd_dataset_num_edge_types(ds));
    GD_REQUIRE(cfg->context == NULL || gd__comm_world(gd__context_comm(cfg->context)) <= 1,
               GD_ERR_UNSUPPORTED,
               "trainer: heterogeneous datasets train on one rank in this version");
    GD_REQUIRE(cfg->locality == 0, GD_ERR_UNSUPPORTED,
               "trainer: locality-aware sampling (--locality) is for homogeneous datasets");
    GD_ALLOC(h, sizeof *h, "the heterogeneous trainer");
    memset(h, 0, sizeof *h);
    h->ds = ds;
    h->cfg = *cfg;
    h->T = gd_dataset_num_node_types(ds);
    h->R = gd_dataset_num_edge_types(ds);
    h->L = cfg->num_layers;
    h->target = gd_dataset_target_type(ds);
    h->ctx = (gd__nn_ctx){&gd__nn_cpu_backend, GD__NN_HOST, NULL, NULL, NULL};
    const int T = h->T, R = h->R, L = h->L;
    /*
     * The MLP baseline is R-SAGE with nothing sampled: an MLP over the seeds' own rows (their
     * root weights). R-GAT has no such term (no self loops between node sets), so with nothing
     * sampled it would see no features at all; its baseline is R-SAGE's.
     */
    h->kind = cfg->mlp ? GD__MODEL_RSAGE : cfg->model;

    /*
     * The sampler: each layer's fanout for every edge type. The MLP baseline samples nothing
     * (fanout 0): every relation's mean is then 0 and the model sees only the seeds' own rows.
     */
    int fanouts[GD_SAMPLER_MAX_LAYERS * GD_MAX_EDGE_TYPES];
    for (int l = 0; l < L; l++)
        for (int r = 0; r < R; r++) fanouts[l * R + r] = cfg->mlp ? 0 : cfg->fanouts[l];
    gd_sampler_options so = GD_SAMPLER_OPTIONS_INIT;
    so.max_batch = cfg->batch_size;
    so.seed = cfg->seed;
    so.threads = cfg->threads;
    GD_CHECK(gd_hetero_sampler_create(ds, fanouts, L, &so, &h->sampler));
    GD_CHECK(gd_hetero_minibatch_create(h->sampler, &h->mb));

    /* The model, sized from the sampler's capacities. */
    gd__rsage_config rc;
    memset(&rc, 0, sizeof rc);
    rc.schema.num_types = T;
    rc.schema.num_relations = R;
    rc.schema.target_type = h->target;
    for (int r = 0; r < R; r++) {
        gd_edge_type_info ei = GD_EDGE_TYPE_INFO_INIT;
        GD_CHECK(gd_dataset_edge_type(ds, r, &ei));
        rc.schema.rel_src[r] = ei.src_type;
        rc.schema.rel_dst[r] = ei.dst_type;
    }
    for (int t = 0; t < T; t++) {
        gd_node_type_info ti = GD_NODE_TYPE_INFO_INIT;
        GD_CHECK(gd_dataset_node_type(ds, t, &ti));
        rc.in_dim[t] = ti.feature_dim;
        if (ti.feature_dim > 0) GD_CHECK(gd_dataset_type_features(ds, t, &h->feat[t]));
    }
    int64_t widths = 0;
    for (int t = 0; t < T; t++) widths += rc.in_dim[t];
    GD_REQUIRE(widths > 0, GD_ERR_INVALID_ARG,
               "trainer: no node type of dataset '%s' has features; give at least one type a "
               "feature table",
               gd_dataset_name(ds));
    rc.hidden_dim = cfg->hidden_dim;
    rc.num_classes = gd_dataset_num_classes(ds);
    rc.num_layers = L;
    rc.dropout = cfg->dropout;
    rc.dtype = GD_DTYPE_FLOAT32;
    /* The typed kinds share this config; attention kinds read heads and attn_dropout too. */
    GD_CHECK(gd__hetero_sampler_capacity(h->sampler, rc.max_nodes, rc.max_edges));
    gd__model_config mc = gd__model_config_make(h->kind, L, 0, cfg->hidden_dim,
                                                rc.num_classes, cfg->dropout, GD_DTYPE_FLOAT32);
    mc.typed = &rc;
    mc.heads = cfg->heads;
    mc.attn_dropout = cfg->attn_dropout;
    GD_CHECK(gd__model_create(&h->ctx, &mc, cfg->seed, &h->model));
    h->adam = (gd__nn_adam_options)GD__NN_ADAM_OPTIONS_INIT;
    h->adam.lr = cfg->lr;
    h->adam.weight_decay = cfg->weight_decay;

    /* Buffers: every type's input rows at its most, the seeds' labels and logits' gradient. */
    for (int t = 0; t < T; t++) {
        if (rc.in_dim[t] == 0) continue;
        GD_CHECK(gd__nn_tensor_alloc(&h->ctx, GD_DTYPE_FLOAT32, rc.max_nodes[t] > 0 ? rc.max_nodes[t] : 1,
                                     rc.in_dim[t], &h->x[t]));
    }
    GD_ALLOC(h->labels, (size_t)cfg->batch_size * sizeof *h->labels, "the seeds' labels");
    GD_CHECK(gd__nn_tensor_alloc(&h->ctx, GD_DTYPE_FLOAT32, 1, 1, &h->loss));
    GD_CHECK(gd__nn_tensor_alloc(&h->ctx, GD_DTYPE_FLOAT32, cfg->batch_size, rc.num_classes,
                                 &h->dlogits));
    GD_CHECK(gd_dataset_array(ds, GD_ARRAY_LABELS, &h->label_view));
    int64_t most = 1;
    for (int s = 0; s < 3; s++) {
        if (gd_dataset_array(ds, (gd_array_id)(GD_ARRAY_TRAIN_IDX + s), &h->split[s]) != GD_OK)
            memset(&h->split[s], 0, sizeof h->split[s]);
        else if (h->split[s].shape[0] > most)
            most = h->split[s].shape[0];
    }
    GD_REQUIRE(h->split[0].data && h->split[0].shape[0] > 0, GD_ERR_INVALID_ARG,
               "trainer: dataset '%s' has no training nodes (train_idx is absent or empty)",
               gd_dataset_name(ds));
    GD_ALLOC(h->order, (size_t)most * sizeof *h->order, "the epoch's order");
    GD_INFO("trainer: heterogeneous dataset %s (%d node types, %d edge types), %s of %d "
            "layers on the CPU, %lld parameters",
            gd_dataset_name(ds), T, R, gd__model_iface(h->model)->title, L,
            (long long)gd__model_num_params(h->model));
    *out = h;
    return GD_OK;
fail:
    gd__htrain_destroy(h);
    return st;
}

gd__model *gd__htrain_model(gd__htrain *h) { return h->model; }
const gd__nn_ctx *gd__htrain_ctx(const gd__htrain *h) { return &h->ctx; }

static int64_t split_id(const gd_array_view *v, int64_t i) {
    return v->dtype == GD_DTYPE_INT32 ? ((const int32_t *)v->data)[i]
                                      : ((const int64_t *)v->data)[i];
}

/*
 * One minibatch: sample, gather each type's rows, forward; for training also the loss,
 * backward and an Adam step. *loss gets the minibatch's mean loss (training), correct and
 * labelled its counts.
 */
static gd_status one_batch(gd__htrain *h, const int64_t *seeds, int64_t n, int64_t epoch,
                           int64_t b, int train, double *loss, int64_t *correct,
                           int64_t *labelled, double *times) {
    gd_status st = GD_OK;
    const int T = h->T, R = h->R, L = h->L;
    double t0 = gd__now();
    GD_CHECK(gd_hetero_sample(h->sampler, seeds, n, epoch, b, h->mb));
    for (int l = 0; l < L; l++)
        for (int r = 0; r < R; r++)
            GD_CHECK(gd_hetero_minibatch_block(h->mb, l, r, &h->blocks[l * R + r]));
    for (int l = 0; l <= L; l++)
        for (int t = 0; t < T; t++) {
            const int64_t *ids;
            GD_CHECK(gd_hetero_minibatch_nodes(h->mb, l, t, &ids, &h->num_nodes[l * T + t]));
            if (l == 0) h->ids[t] = ids;
        }
    double t1 = gd__now();
    times[0] += t1 - t0;
    /* The rows of each featured type, from its table (float16 and bfloat16 widened). */
    for (int t = 0; t < T; t++) {
        h->xp[t] = NULL;
        if (!h->feat[t].data) continue;
        const gd_array_view *f = &h->feat[t];
        gd_node_type_info ti = GD_NODE_TYPE_INFO_INIT;
        GD_CHECK(gd_dataset_node_type(h->ds, t, &ti));
        const int64_t rows = h->num_nodes[t], dim = f->shape[1];
        float *dst = h->x[t].data;
        const int64_t *ids = h->ids[t];
#pragma omp parallel for num_threads(gd__num_threads()) schedule(static) if (rows * dim > 65536)
        for (int64_t i = 0; i < rows; i++) {
            const int64_t row = ids[i] - ti.offset;
            if (f->dtype == GD_DTYPE_FLOAT32)
                memcpy(dst + i * dim, (const float *)f->data + row * dim,
                       (size_t)dim * sizeof(float));
            else
                for (int64_t j = 0; j < dim; j++) dst[i * dim + j] = elem(f, row * dim + j);
        }
        h->xp[t] = &h->x[t];
    }
    int64_t lab = 0;
    for (int64_t i = 0; i < n; i++) {
        h->labels[i] = split_id(&h->label_view, seeds[i]);
        lab += h->labels[i] >= 0;
    }
    double t2 = gd__now();
    times[1] += t2 - t1;
    gd__nn_tensor logits;
    GD_CHECK(gd__model_typed_forward(h->model, h->blocks, h->num_nodes, h->xp, h->ids, train,
                                     dropout_seed(h, epoch, b), &logits));
    GD_CHECK(gd__nn_accuracy(&h->ctx, &logits, h->labels, &h->correct));
    if (train) {
        gd__nn_params *params = gd__model_params(h->model);
        gd__nn_tensor dl = gd__nn_rows(&h->dlogits, n);
        GD_CHECK(gd__nn_softmax_xent(&h->ctx, &logits, h->labels, 1.0, &h->loss, &dl));
        GD_CHECK(gd__nn_params_zero_grad(&h->ctx, params));
        GD_CHECK(gd__model_typed_backward(h->model, &dl, NULL));
        GD_CHECK(gd__nn_params_adam(&h->ctx, params, &h->adam));
        *loss = *(const float *)h->loss.data;
    }
    *correct = h->correct;
    *labelled = lab;
    times[2] += gd__now() - t2;
fail:
    return st;
}

gd_status gd__htrain_epoch(gd__htrain *h, int64_t epoch, gd__train_epoch_stats *stats) {
    gd_status st = GD_OK;
    const double start = gd__now(), cpu0 = gd__cpu_seconds();
    const int64_t n = h->split[0].shape[0], B = h->cfg.batch_size;
    int64_t batches = 0, correct = 0, labelled = 0;
    double loss_sum = 0, times[3] = {0, 0, 0};
    memset(stats, 0, sizeof *stats);
    stats->epoch = epoch;
    int64_t *ids = NULL;
    GD_ALLOC(ids, (size_t)n * sizeof *ids, "the training nodes");
    for (int64_t i = 0; i < n; i++) ids[i] = split_id(&h->split[0], i);
    GD_CHECK(gd_seed_batches(ids, n, B, h->cfg.seed, epoch, 0, h->order, &batches));
    if (h->cfg.max_batches > 0 && batches > h->cfg.max_batches) batches = h->cfg.max_batches;
    for (int64_t b = 0; b < batches; b++) {
        const int64_t k = b * B + B <= n ? B : n - b * B;
        double loss = 0;
        int64_t c = 0, l = 0;
        GD_CHECK(one_batch(h, h->order + b * B, k, epoch, b, 1, &loss, &c, &l, times));
        GD_REQUIRE(isfinite(loss), GD_ERR_RANGE,
                   "trainer: the loss of epoch %lld, minibatch %lld is %g; lower the learning "
                   "rate (now %g)",
                   (long long)epoch, (long long)b, loss, h->cfg.lr);
        loss_sum += loss;
        correct += c;
        labelled += l;
        if (h->cfg.progress &&
            ((b + 1) % (h->cfg.report_every > 0 ? h->cfg.report_every : 20) == 0 ||
             b + 1 == batches))
            GD_REQUIRE(h->cfg.progress(h->cfg.progress_user, b + 1, batches, loss) == 0,
                       GD_ERR_INTERRUPTED, "training stopped by the progress callback");
    }
    stats->batches = batches;
    stats->loss = batches ? loss_sum / (double)batches : NAN;
    stats->train_acc = labelled ? (double)correct / (double)labelled : NAN;
    stats->sample_s = times[0];
    stats->gather_s = times[1];
    stats->train_s = times[2];
    stats->seconds = gd__now() - start;
    stats->cpu_core_s = gd__cpu_seconds() - cpu0;
fail:
    gd_free(ids);
    return st;
}

gd_status gd__htrain_evaluate(gd__htrain *h, gd_array_id split, double *accuracy,
                              int64_t *count) {
    gd_status st = GD_OK;
    const int s = (int)(split - GD_ARRAY_TRAIN_IDX);
    const gd_array_view *v = &h->split[s];
    const int64_t n = v->data ? v->shape[0] : 0, B = h->cfg.batch_size;
    int64_t correct = 0, labelled = 0;
    double times[3] = {0, 0, 0}, loss = 0;
    for (int64_t i = 0; i < n; i++) h->order[i] = split_id(v, i);
    for (int64_t b = 0; b * B < n; b++) {
        const int64_t k = b * B + B <= n ? B : n - b * B;
        int64_t c = 0, l = 0;
        GD_CHECK(one_batch(h, h->order + b * B, k, GD__TRAIN_EVAL_EPOCH + s, b, 0, &loss, &c, &l,
                           times));
        correct += c;
        labelled += l;
    }
    *accuracy = labelled ? (double)correct / (double)labelled : NAN;
    if (count) *count = labelled;
fail:
    return st;
}

void gd__htrain_info(const gd__htrain *h, gd__trainer_info *info) {
    memset(info, 0, sizeof *info);
    info->mode = GD__TRAIN_CPU;
    snprintf(info->plan, sizeof info->plan,
             "heterogeneous (%d node types, %d edge types): typed sampling and per-type gather "
             "on the CPU, %s on the CPU",
             h->T, h->R, gd__model_iface(h->model)->title);
    info->num_params = gd__model_num_params(h->model);
    for (int t = 0; t < h->T; t++) {
        info->max_input_nodes += h->x[t].rows;
        info->feature_bytes += gd__nn_numel(&h->x[t]) * (int64_t)sizeof(float);
    }
    for (int s = 0; s < 3; s++) {
        const int64_t n = h->split[s].data ? h->split[s].shape[0] : 0;
        if (s == 0) info->train_nodes = n;
        if (s == 1) info->valid_nodes = n;
        if (s == 2) info->test_nodes = n;
    }
}

void gd__htrain_checkpoint_meta(const gd__htrain *h, gd__checkpoint_meta *m) {
    gd__checkpoint_meta_init(m);
    snprintf(m->model, sizeof m->model, "%s", gd__model_iface(h->model)->name);
    m->num_layers = h->L;
    /* The input width of every type together (each one's is in the config's widths). */
    m->in_dim = 0;
    for (int t = 0; t < h->T; t++) m->in_dim += h->feat[t].data ? h->feat[t].shape[1] : 0;
    m->hidden_dim = h->cfg.hidden_dim;
    /* Heads are R-GAT's; a kind without attention has one, as the homogeneous trainer writes. */
    m->heads = h->kind == GD__MODEL_RGAT && h->cfg.heads > 0 ? h->cfg.heads : 1;
    m->num_classes = gd_dataset_num_classes(h->ds);
    for (int l = 0; l < h->L; l++) m->fanouts[l] = h->cfg.fanouts[l];
    m->seed = h->cfg.seed;
    m->adam_step = gd__model_params(h->model)->step;
    char widths[256] = "";
    size_t used = 0;
    for (int t = 0; t < h->T && used < sizeof widths; t++) {
        gd_node_type_info ti = GD_NODE_TYPE_INFO_INIT;
        if (gd_dataset_node_type(h->ds, t, &ti) != GD_OK) break;
        used += (size_t)snprintf(widths + used, sizeof widths - used, "%s%s:%lld", t ? "," : "",
                                 ti.name, (long long)ti.feature_dim);
    }
    snprintf(m->dataset, sizeof m->dataset,
             "%s nodes=%lld edges=%lld types=%d relations=%d classes=%lld",
             gd_dataset_name(h->ds), (long long)gd_dataset_num_nodes(h->ds),
             (long long)gd_dataset_num_edges(h->ds), h->T, h->R,
             (long long)gd_dataset_num_classes(h->ds));
    char attn[48] = "";
    if (h->kind == GD__MODEL_RGAT && h->cfg.attn_dropout > 0)
        snprintf(attn, sizeof attn, " attn_dropout=%g", h->cfg.attn_dropout);
    snprintf(m->config, sizeof m->config,
             "batch=%lld dropout=%g lr=%g weight_decay=%g max_batches=%lld widths=%s%s",
             (long long)h->cfg.batch_size, h->cfg.dropout, h->cfg.lr, h->cfg.weight_decay,
             (long long)h->cfg.max_batches, widths, attn);
}

void gd__htrain_set_max_batches(gd__htrain *h, int64_t max_batches) {
    if (max_batches >= 0) h->cfg.max_batches = max_batches;
}
