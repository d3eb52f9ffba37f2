/*
 * R-GAT (rgat.c) as a kind of the model interface (model.h), so that the trainer keeps its
 * parameters, Adam state, best model and checkpoints through the interface as for every kind.
 * The kind's config is the gd__rsage_config in gd__model_config.typed, which every typed kind
 * shares, with the interface config's heads and attn_dropout; only the trainer's heterogeneous
 * path (train/hetero.c) makes one, from the typed sampler's capacities. The homogeneous
 * forward and backward have no typed minibatch to run on: they refuse with a message naming
 * the model and the fix.
 */
#include "nn/rgat.h"

static gd_status homogeneous(void) {
    return gd__error(GD_ERR_INVALID_ARG,
                     "model rgat (relational GAT) trains on heterogeneous datasets (node and edge "
                     "types; docs/hetero.md): this dataset or minibatch is homogeneous, use "
                     "--model gat");
}

static void rgat_capacity_i(const gd__model_shape *s, gd__model_config *cfg) {
    /* The typed sampler's capacities are the config's own (gd__rsage_config). */
    gd__model_node_capacity(s, cfg);
}

static int64_t rgat_bytes_i(const gd__model_config *cfg) {
    return cfg->typed ? gd__rgat_bytes(cfg->typed, cfg->heads, cfg->attn_dropout) : 0;
}

static gd_status rgat_create_i(const gd__nn_ctx *ctx, const gd__model_config *cfg,
                               uint64_t init_seed, void **context) {
    if (!cfg->typed) return homogeneous();
    gd__rgat *m = NULL;
    gd_status st = gd__rgat_create(ctx, cfg->typed, cfg->heads, cfg->attn_dropout, init_seed, &m);
    *context = m;
    return st;
}

static void rgat_destroy_i(void *context) {
    gd__rgat_destroy(context);
}

static gd_status rgat_typed_forward_i(void *context, const gd_block *blocks,
                                      const int64_t *num_nodes, const gd__nn_tensor *const *x,
                                      const int64_t *const *node_ids, int train,
                                      uint64_t dropout_seed, gd__nn_tensor *logits) {
    return gd__rgat_forward(context, blocks, num_nodes, x, node_ids, train, dropout_seed, logits);
}

static gd_status rgat_typed_backward_i(void *context, const gd__nn_tensor *dlogits,
                                       gd__nn_tensor *const *dx) {
    return gd__rgat_backward(context, dlogits, dx);
}

static gd__nn_params *rgat_params_i(void *context) {
    return gd__rgat_params(context);
}

static void rgat_set_backend_i(void *context, const gd__nn_backend *be) {
    ((gd__rgat *)context)->ctx.be = be;
}

const gd__model_i gd__rgat_model_i = {
    .name = "rgat",
    .label = "rgat",
    .title = "R-GAT",
    .description = "R-GAT (PyG's HeteroConv of GATConv per relation, summed; MLPerf's IGBH model)",
    .capacity = rgat_capacity_i,
    .bytes = rgat_bytes_i,
    .create = rgat_create_i,
    .destroy = rgat_destroy_i,
    .forward = NULL, /* typed minibatches only: typed_forward */
    .backward = NULL,
    .params = rgat_params_i,
    .set_backend = rgat_set_backend_i,
    .layer_combine = NULL,
    .typed_forward = rgat_typed_forward_i,
    .typed_backward = rgat_typed_backward_i,
};
