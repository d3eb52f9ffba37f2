/*
 * R-SAGE (rsage.c) as a kind of the model interface (model.h), so that the trainer keeps its
 * parameters, Adam state, best model and checkpoints through the interface as for GraphSAGE and
 * GAT. The kind's config is the gd__rsage_config in gd__model_config.typed; only the trainer's
 * heterogeneous path (train/hetero.c) makes one, from the typed sampler's capacities. The
 * homogeneous forward and backward of the interface have no typed minibatch to run on: they
 * refuse with a message naming the model and the fix.
 *
 * R-GCN ("rgcn") is the same code with the config's root_per_type set (rsage.h): its table
 * differs only in create and bytes, which set the flag on a copy of the trainer's config, so
 * that the trainer, the typed step and exact inference make the same config for both kinds.
 */
#include "nn/rsage.h"

static gd_status homogeneous(const char *kind) {
    return gd__error(GD_ERR_INVALID_ARG,
                     "model %s trains on heterogeneous datasets (node and edge types; "
                     "docs/hetero.md): this dataset or minibatch is homogeneous, use --model "
                     "sage or gat",
                     kind);
}

static void rsage_capacity_i(const gd__model_shape *s, gd__model_config *cfg) {
    /* The typed sampler's capacities are the config's own (gd__rsage_config). */
    gd__model_node_capacity(s, cfg);
}

static int64_t rsage_bytes_i(const gd__model_config *cfg) {
    return cfg->typed ? gd__rsage_bytes(cfg->typed) : 0;
}

static gd_status rsage_create_i(const gd__nn_ctx *ctx, const gd__model_config *cfg,
                                uint64_t init_seed, void **context) {
    if (!cfg->typed) return homogeneous("rsage (relational GraphSAGE)");
    gd__rsage *m = NULL;
    gd_status st = gd__rsage_create(ctx, cfg->typed, init_seed, &m);
    *context = m;
    return st;
}

static void rsage_destroy_i(void *context) {
    gd__rsage_destroy(context);
}

static gd_status rsage_typed_forward_i(void *context, const gd_block *blocks,
                                       const int64_t *num_nodes, const gd__nn_tensor *const *x,
                                       const int64_t *const *node_ids, int train,
                                       uint64_t dropout_seed, gd__nn_tensor *logits) {
    return gd__rsage_forward(context, blocks, num_nodes, x, node_ids, train, dropout_seed, logits);
}

static gd_status rsage_typed_backward_i(void *context, const gd__nn_tensor *dlogits,
                                        gd__nn_tensor *const *dx) {
    return gd__rsage_backward(context, dlogits, dx);
}

static gd__nn_params *rsage_params_i(void *context) {
    return gd__rsage_params(context);
}

static void rsage_set_backend_i(void *context, const gd__nn_backend *be) {
    ((gd__rsage *)context)->ctx.be = be;
}

const gd__model_i gd__rsage_model_i = {
    .name = "rsage",
    .label = "rsage",
    .title = "R-SAGE",
    .description = "R-SAGE (PyG's to_hetero(SAGEConv), summed over relations)",
    .capacity = rsage_capacity_i,
    .bytes = rsage_bytes_i,
    .create = rsage_create_i,
    .destroy = rsage_destroy_i,
    .forward = NULL, /* typed minibatches only: typed_forward */
    .backward = NULL,
    .params = rsage_params_i,
    .set_backend = rsage_set_backend_i,
    .layer_combine = NULL,
    .typed_forward = rsage_typed_forward_i,
    .typed_backward = rsage_typed_backward_i,
};

/* R-GCN: the typed config with one root and bias per node type. */
static gd__rsage_config rgcn_config(const gd__model_config *cfg) {
    gd__rsage_config rc = *(const gd__rsage_config *)cfg->typed;
    rc.root_per_type = 1;
    return rc;
}

static int64_t rgcn_bytes_i(const gd__model_config *cfg) {
    if (!cfg->typed) return 0;
    const gd__rsage_config rc = rgcn_config(cfg);
    return gd__rsage_bytes(&rc);
}

static gd_status rgcn_create_i(const gd__nn_ctx *ctx, const gd__model_config *cfg,
                               uint64_t init_seed, void **context) {
    if (!cfg->typed) return homogeneous("rgcn (relational GCN)");
    const gd__rsage_config rc = rgcn_config(cfg);
    gd__rsage *m = NULL;
    gd_status st = gd__rsage_create(ctx, &rc, init_seed, &m);
    *context = m;
    return st;
}

const gd__model_i gd__rgcn_model_i = {
    .name = "rgcn",
    .label = "rgcn",
    .title = "R-GCN",
    .description = "R-GCN (PyG's RGCNConv, mean; a root weight and bias per node type)",
    .capacity = rsage_capacity_i,
    .bytes = rgcn_bytes_i,
    .create = rgcn_create_i,
    .destroy = rsage_destroy_i,
    .forward = NULL, /* typed minibatches only: typed_forward */
    .backward = NULL,
    .params = rsage_params_i,
    .set_backend = rsage_set_backend_i,
    .layer_combine = NULL,
    .typed_forward = rsage_typed_forward_i,
    .typed_backward = rsage_typed_backward_i,
};
