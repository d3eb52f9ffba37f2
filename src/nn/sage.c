/*
 * GraphSAGE with the mean aggregator over the blocks of a minibatch: the same function as PyG's
 * SAGEConv(aggr="mean", root_weight=True, bias=True) stacked in a BasicGNN (ReLU then dropout
 * between layers, none after the last). Layer l reads the rows h_l of its block's source nodes;
 * its destination nodes are the first num_dst of them, so the "self" term is a view of h_l's
 * first rows and nothing is copied. Every buffer is allocated at create from the configured
 * capacities; forward and backward allocate nothing. The parameters live in one flat buffer
 * (nn/params.c) in the order W_l, W_r, b for each layer.
 */
#include "nn/sage.h"

#include <string.h>

void gd__sage_destroy(gd__sage *m) {
    if (!m) return;
    const gd__nn_ctx *ctx = &m->ctx;
    for (int l = 0; l < m->cfg.num_layers; l++) {
        gd__nn_tensor_free(ctx, &m->agg[l]);
        gd__nn_tensor_free(ctx, &m->out[l]);
    }
    gd__nn_tensor_free(ctx, &m->dh[0]);
    gd__nn_tensor_free(ctx, &m->dh[1]);
    gd__nn_tensor_free(ctx, &m->dagg);
    gd__nn_params_free(ctx, &m->params);
    gd_free(m);
}

gd_status gd__sage_create(const gd__nn_ctx *ctx, const gd__sage_config *cfg, uint64_t init_seed,
                          gd__sage **out) {
    gd_status st = GD_OK;
    gd__sage *m = NULL;
    GD_REQUIRE(ctx && ctx->be && cfg && out, GD_ERR_INVALID_ARG,
               "GraphSAGE: ctx, config and out must be given");
    *out = NULL;
    const int L = cfg->num_layers;
    GD_REQUIRE(L >= 1 && L <= GD__SAGE_MAX_LAYERS, GD_ERR_INVALID_ARG,
               "GraphSAGE: %d layers (1 to %d)", L, GD__SAGE_MAX_LAYERS);
    GD_REQUIRE(cfg->in_dim > 0 && cfg->num_classes > 0 && (L == 1 || cfg->hidden_dim > 0),
               GD_ERR_INVALID_ARG,
               "GraphSAGE: input %lld, hidden %lld, classes %lld (must be "
               "positive)",
               (long long)cfg->in_dim, (long long)cfg->hidden_dim, (long long)cfg->num_classes);
    GD_REQUIRE(cfg->dropout >= 0.0 && cfg->dropout < 1.0, GD_ERR_INVALID_ARG,
               "GraphSAGE: dropout %g is not in [0, 1)", cfg->dropout);
    GD_REQUIRE(ctx->be->supports(cfg->dtype), GD_ERR_UNSUPPORTED,
               "GraphSAGE: the %s backend has no %s ops", ctx->be->name, gd_dtype_name(cfg->dtype));
    for (int l = 0; l <= L; l++)
        GD_REQUIRE(cfg->max_nodes[l] > 0, GD_ERR_INVALID_ARG,
                   "GraphSAGE: max_nodes[%d] = %lld (must be positive)", l,
                   (long long)cfg->max_nodes[l]);

    m = gd_calloc(1, sizeof *m);
    GD_REQUIRE(m, GD_ERR_NO_MEMORY, "out of memory allocating a GraphSAGE model");
    m->cfg = *cfg;
    m->ctx = *ctx;
    m->params.dtype = cfg->dtype;
    for (int l = 0; l <= L; l++)
        m->dims[l] = l == 0 ? cfg->in_dim : l == L ? cfg->num_classes : cfg->hidden_dim;
    for (int l = 0; l < L; l++) {
        GD_CHECK(gd__nn_params_add(&m->params, m->dims[l], m->dims[l + 1], m->dims[l], &m->w_l[l]));
        GD_CHECK(gd__nn_params_add(&m->params, m->dims[l], m->dims[l + 1], m->dims[l], &m->w_r[l]));
        GD_CHECK(gd__nn_params_add(&m->params, 1, m->dims[l + 1], m->dims[l], &m->b[l]));
    }
    GD_CHECK(gd__nn_params_alloc(ctx, &m->params));
    GD_CHECK(gd__nn_params_init(ctx, &m->params, init_seed));

    int64_t dh_cap = 1, dagg_cap = 1, n;
    for (int l = 0; l < L; l++) {
        const int64_t nd = cfg->max_nodes[l + 1];
        GD_CHECK(gd__nn_tensor_alloc(ctx, cfg->dtype, nd, m->dims[l], &m->agg[l]));
        GD_CHECK(gd__nn_tensor_alloc(ctx, cfg->dtype, nd, m->dims[l + 1], &m->out[l]));
        GD_REQUIRE(!gd__mul_overflow_i64(nd, m->dims[l], &n), GD_ERR_OVERFLOW,
                   "GraphSAGE: layer %d buffers overflow", l);
        if (n > dagg_cap) dagg_cap = n;
        if (l > 0) {
            GD_REQUIRE(!gd__mul_overflow_i64(cfg->max_nodes[l], m->dims[l], &n), GD_ERR_OVERFLOW,
                       "GraphSAGE: layer %d buffers overflow", l);
            if (n > dh_cap) dh_cap = n;
        }
    }
    GD_CHECK(gd__nn_tensor_alloc(ctx, cfg->dtype, 1, dh_cap, &m->dh[0]));
    GD_CHECK(gd__nn_tensor_alloc(ctx, cfg->dtype, 1, dh_cap, &m->dh[1]));
    GD_CHECK(gd__nn_tensor_alloc(ctx, cfg->dtype, 1, dagg_cap, &m->dagg));
    *out = m;
    return GD_OK;
fail:
    gd__sage_destroy(m);
    return st;
}

/* The blocks must chain (each layer's sources are the previous layer's destinations) and fit. */
static gd_status check_blocks(const gd__sage *m, const gd_block *blocks) {
    gd_status st = GD_OK;
    GD_REQUIRE(blocks, GD_ERR_INVALID_ARG, "GraphSAGE: blocks is NULL");
    for (int l = 0; l < m->cfg.num_layers; l++) {
        const gd_block *b = &blocks[l];
        GD_REQUIRE(b->num_src <= m->cfg.max_nodes[l] && b->num_dst <= m->cfg.max_nodes[l + 1],
                   GD_ERR_RANGE,
                   "GraphSAGE: block %d has %lld source and %lld destination nodes, more than the "
                   "model was sized for (%lld and %lld)",
                   l, (long long)b->num_src, (long long)b->num_dst, (long long)m->cfg.max_nodes[l],
                   (long long)m->cfg.max_nodes[l + 1]);
        GD_REQUIRE(l == 0 || b->num_src == blocks[l - 1].num_dst, GD_ERR_INVALID_ARG,
                   "GraphSAGE: block %d has %lld source nodes but block %d has %lld destination "
                   "nodes (they must be the same nodes)",
                   l, (long long)b->num_src, l - 1, (long long)blocks[l - 1].num_dst);
    }
fail:
    return st;
}

gd_status gd__sage_forward(gd__sage *m, const gd_block *blocks, const gd__nn_tensor *x,
                           const int64_t *node_ids, int train, uint64_t dropout_seed,
                           gd__nn_tensor *logits) {
    gd_status st = GD_OK;
    GD_REQUIRE(m && x && logits, GD_ERR_INVALID_ARG,
               "GraphSAGE forward: model, x and logits "
               "must be given");
    GD_CHECK(check_blocks(m, blocks));
    GD_REQUIRE(x->cols == m->dims[0] && x->rows >= blocks[0].num_src, GD_ERR_INVALID_ARG,
               "GraphSAGE forward: x is %lld x %lld, expected at least %lld rows of %lld",
               (long long)x->rows, (long long)x->cols, (long long)blocks[0].num_src,
               (long long)m->dims[0]);
    const gd__nn_ctx *ctx = &m->ctx;
    const int L = m->cfg.num_layers;
    const double p = m->cfg.dropout;
    m->input = NULL;
    gd__nn_tensor h = gd__nn_rows(x, blocks[0].num_src);
    for (int l = 0; l < L; l++) {
        const gd_block *b = &blocks[l];
        gd__nn_tensor agg = gd__nn_rows(&m->agg[l], b->num_dst);
        gd__nn_tensor z = gd__nn_rows(&m->out[l], b->num_dst);
        gd__nn_tensor wl = gd__nn_param(&m->params, m->w_l[l]);
        gd__nn_tensor wr = gd__nn_param(&m->params, m->w_r[l]);
        gd__nn_tensor bias = gd__nn_param(&m->params, m->b[l]);
        gd__nn_tensor self = gd__nn_rows(&h, b->num_dst);
        GD_CHECK(gd__nn_mean_agg(ctx, b, &h, &agg));
        GD_CHECK(gd__nn_linear(ctx, &agg, &wl, &bias, &z, 0));
        GD_CHECK(gd__nn_linear(ctx, &self, &wr, NULL, &z, 1));
        if (l < L - 1) {
            GD_CHECK(gd__nn_relu(ctx, &z, &z));
            if (train && p > 0)
                GD_CHECK(gd__nn_dropout(ctx, p, dropout_seed, (uint32_t)l, node_ids, &z, &z));
        }
        h = z;
        m->rows[l] = b->num_src;
    }
    m->rows[L] = blocks[L - 1].num_dst;
    m->train = train;
    m->dropout_seed = dropout_seed;
    m->node_ids = node_ids;
    m->input = x;
    *logits = h;
fail:
    return st;
}

gd_status gd__sage_backward(gd__sage *m, const gd_block *blocks, const gd__nn_tensor *dlogits,
                            gd__nn_tensor *dx) {
    gd_status st = GD_OK;
    GD_REQUIRE(m && dlogits, GD_ERR_INVALID_ARG,
               "GraphSAGE backward: model and dlogits must be "
               "given");
    GD_REQUIRE(m->input, GD_ERR_INVALID_ARG,
               "GraphSAGE backward: no forward pass to go back "
               "through");
    GD_CHECK(check_blocks(m, blocks));
    const int L = m->cfg.num_layers;
    for (int l = 0; l <= L; l++)
        GD_REQUIRE(m->rows[l] == (l < L ? blocks[l].num_src : blocks[L - 1].num_dst),
                   GD_ERR_INVALID_ARG,
                   "GraphSAGE backward: the blocks are not those of the last forward pass");
    GD_REQUIRE(dlogits->rows == m->rows[L] && dlogits->cols == m->dims[L], GD_ERR_INVALID_ARG,
               "GraphSAGE backward: dlogits is %lld x %lld, the logits were %lld x %lld",
               (long long)dlogits->rows, (long long)dlogits->cols, (long long)m->rows[L],
               (long long)m->dims[L]);
    const gd__nn_ctx *ctx = &m->ctx;
    const double p = m->cfg.dropout;
    gd__nn_tensor dz = *dlogits;
    for (int l = L - 1; l >= 0; l--) {
        const gd_block *b = &blocks[l];
        const int64_t nd = b->num_dst, ns = b->num_src;
        gd__nn_tensor hin = l == 0 ? gd__nn_rows(m->input, ns) : gd__nn_rows(&m->out[l - 1], ns);
        gd__nn_tensor self = gd__nn_rows(&hin, nd);
        gd__nn_tensor agg = gd__nn_rows(&m->agg[l], nd);
        gd__nn_tensor wl = gd__nn_param(&m->params, m->w_l[l]);
        gd__nn_tensor wr = gd__nn_param(&m->params, m->w_r[l]);
        gd__nn_tensor dwl = gd__nn_grad(&m->params, m->w_l[l]);
        gd__nn_tensor dwr = gd__nn_grad(&m->params, m->w_r[l]);
        gd__nn_tensor db = gd__nn_grad(&m->params, m->b[l]);
        GD_CHECK(gd__nn_linear_backward(ctx, &agg, &wl, &dz, NULL, 0, &dwl, &db, 1));
        GD_CHECK(gd__nn_linear_backward(ctx, &self, &wr, &dz, NULL, 0, &dwr, NULL, 1));
        if (l == 0 && !dx) break;

        /* dh = [dz R^T ; 0] + mean-backward(dz W^T), the rows past num_dst only from the mean. */
        gd__nn_tensor dh;
        if (l == 0) {
            GD_REQUIRE(dx->rows == ns && dx->cols == m->dims[0], GD_ERR_INVALID_ARG,
                       "GraphSAGE backward: dx is %lld x %lld, expected %lld x %lld",
                       (long long)dx->rows, (long long)dx->cols, (long long)ns,
                       (long long)m->dims[0]);
            dh = *dx;
        } else {
            dh = gd__nn_shaped(&m->dh[l & 1], ns, m->dims[l]);
        }
        gd__nn_tensor dh_self = gd__nn_rows(&dh, nd), dh_rest = gd__nn_row_range(&dh, nd, ns);
        gd__nn_tensor dagg = gd__nn_shaped(&m->dagg, nd, m->dims[l]);
        GD_CHECK(gd__nn_gemm(ctx, GD__NN_N, GD__NN_T, 1.0, &dz, &wr, 0.0, &dh_self));
        GD_CHECK(gd__nn_zero(ctx, &dh_rest));
        GD_CHECK(gd__nn_gemm(ctx, GD__NN_N, GD__NN_T, 1.0, &dz, &wl, 0.0, &dagg));
        GD_CHECK(gd__nn_mean_agg_backward(ctx, b, &dagg, &dh));
        if (l == 0) break;
        /*
         * h_l = dropout(relu(z_{l-1})) was computed in place, so m->out[l-1] holds h_l. Its
         * positive elements are exactly those that relu kept and dropout did not drop (the
         * dropout scale is positive), which is what the ReLU backward needs.
         */
        if (m->train && p > 0)
            GD_CHECK(gd__nn_dropout_backward(ctx, p, m->dropout_seed, (uint32_t)(l - 1),
                                             m->node_ids, &dh, &dh));
        GD_CHECK(gd__nn_relu_backward(ctx, &hin, &dh, &dh));
        dz = dh;
    }
fail:
    return st;
}

/*
 * One layer in evaluation mode with caller-provided buffers, for layer-wise inference
 * (train/infer.c): the dense half of a layer, given its aggregate. The ops and their order are
 * those of gd__sage_forward (out = agg W_l + b_l, then out += self R_l, then ReLU in place), so
 * the same inputs give the same bits.
 */
gd_status gd__sage_layer_combine(gd__sage *m, int l, const gd__nn_tensor *agg,
                                 const gd__nn_tensor *self, gd__nn_tensor *out, int relu) {
    gd_status st = GD_OK;
    GD_REQUIRE(m && agg && self && out, GD_ERR_INVALID_ARG,
               "GraphSAGE layer: model, aggregate, self rows and output must be given");
    GD_REQUIRE(l >= 0 && l < m->cfg.num_layers, GD_ERR_INVALID_ARG,
               "GraphSAGE layer: layer %d of a %d-layer model", l, m->cfg.num_layers);
    GD_REQUIRE(agg->rows == out->rows && self->rows == out->rows && agg->cols == m->dims[l] &&
                   self->cols == m->dims[l] && out->cols == m->dims[l + 1],
               GD_ERR_INVALID_ARG,
               "GraphSAGE layer %d: aggregate %lld x %lld, self rows %lld x %lld and output "
               "%lld x %lld; expected n x %lld, n x %lld and n x %lld",
               l, (long long)agg->rows, (long long)agg->cols, (long long)self->rows,
               (long long)self->cols, (long long)out->rows, (long long)out->cols,
               (long long)m->dims[l], (long long)m->dims[l], (long long)m->dims[l + 1]);
    GD_REQUIRE(out->rows == 0 || (out->data != agg->data && out->data != self->data),
               GD_ERR_INVALID_ARG, "GraphSAGE layer %d: the output aliases an input", l);
    const gd__nn_ctx *ctx = &m->ctx;
    gd__nn_tensor wl = gd__nn_param(&m->params, m->w_l[l]);
    gd__nn_tensor wr = gd__nn_param(&m->params, m->w_r[l]);
    gd__nn_tensor bias = gd__nn_param(&m->params, m->b[l]);
    GD_CHECK(gd__nn_linear(ctx, agg, &wl, &bias, out, 0));
    GD_CHECK(gd__nn_linear(ctx, self, &wr, NULL, out, 1));
    if (relu) GD_CHECK(gd__nn_relu(ctx, out, out));
fail:
    return st;
}

gd_status gd__sage_layer_forward(gd__sage *m, int l, const gd_block *blk, const gd__nn_tensor *x,
                                 gd__nn_tensor *agg, gd__nn_tensor *out, int relu) {
    gd_status st = GD_OK;
    GD_REQUIRE(m && blk && x && agg && out, GD_ERR_INVALID_ARG,
               "GraphSAGE layer: model, block, x, aggregate and output must be given");
    GD_REQUIRE(l >= 0 && l < m->cfg.num_layers, GD_ERR_INVALID_ARG,
               "GraphSAGE layer: layer %d of a %d-layer model", l, m->cfg.num_layers);
    GD_REQUIRE(x->cols == m->dims[l] && x->rows >= blk->num_src, GD_ERR_INVALID_ARG,
               "GraphSAGE layer %d: x is %lld x %lld, expected at least %lld rows of %lld", l,
               (long long)x->rows, (long long)x->cols, (long long)blk->num_src,
               (long long)m->dims[l]);
    GD_CHECK(gd__nn_mean_agg(&m->ctx, blk, x, agg));
    gd__nn_tensor self = gd__nn_rows(x, blk->num_dst);
    GD_CHECK(gd__sage_layer_combine(m, l, agg, &self, out, relu));
fail:
    return st;
}

/* ------------------------------------------------------- the model interface */

static void sage_capacity(const gd__model_shape *s, gd__model_config *cfg) {
    gd__model_node_capacity(s, cfg);
}

/* Device bytes of a model of cfg: four flat buffers and the activations (an estimate). */
static int64_t sage_bytes(const gd__model_config *cfg) {
    int64_t dims[GD__SAGE_MAX_LAYERS + 1], params = 0, act = 0, dh = 0;
    for (int l = 0; l <= cfg->num_layers; l++)
        dims[l] = l == 0 ? cfg->in_dim : l == cfg->num_layers ? cfg->num_classes : cfg->hidden_dim;
    for (int l = 0; l < cfg->num_layers; l++) {
        params += 2 * dims[l] * dims[l + 1] + dims[l + 1] + 3 * GD__NN_PARAM_ALIGN;
        act += cfg->max_nodes[l + 1] * (2 * dims[l] + dims[l + 1]);
        if (l > 0 && cfg->max_nodes[l] * dims[l] > dh) dh = cfg->max_nodes[l] * dims[l];
    }
    return 4 * (4 * params + act + 2 * dh);
}

static gd_status sage_create_i(const gd__nn_ctx *ctx, const gd__model_config *cfg,
                               uint64_t init_seed, void **context) {
    gd__sage *m = NULL;
    gd_status st = gd__sage_create(ctx, cfg, init_seed, &m);
    *context = m;
    return st;
}

static void sage_destroy_i(void *context) {
    gd__sage_destroy(context);
}

static gd_status sage_forward_i(void *context, const gd_block *blocks, const gd__nn_tensor *x,
                                const int64_t *node_ids, int train, uint64_t dropout_seed,
                                gd__nn_tensor *logits) {
    return gd__sage_forward(context, blocks, x, node_ids, train, dropout_seed, logits);
}

static gd_status sage_backward_i(void *context, const gd_block *blocks,
                                 const gd__nn_tensor *dlogits, gd__nn_tensor *dx) {
    return gd__sage_backward(context, blocks, dlogits, dx);
}

static gd__nn_params *sage_params_i(void *context) {
    return &((gd__sage *)context)->params;
}

static void sage_set_backend_i(void *context, const gd__nn_backend *be) {
    ((gd__sage *)context)->ctx.be = be;
}

static gd_status sage_combine_i(void *context, int l, const gd__nn_tensor *agg,
                                const gd__nn_tensor *self, gd__nn_tensor *out, int relu) {
    return gd__sage_layer_combine(context, l, agg, self, out, relu);
}

const gd__model_i gd__sage_model = {
    .name = "sage",
    .label = "graphsage",
    .title = "GraphSAGE",
    .description = "GraphSAGE (mean)",
    .capacity = sage_capacity,
    .bytes = sage_bytes,
    .create = sage_create_i,
    .destroy = sage_destroy_i,
    .forward = sage_forward_i,
    .backward = sage_backward_i,
    .params = sage_params_i,
    .set_backend = sage_set_backend_i,
    .layer_combine = sage_combine_i,
};
