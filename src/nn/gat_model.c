/*
 * GAT on the ops of gat.h (gat_model.h): create, forward, backward. The layer ops run on the
 * context's backend: the CPU reference, or (a CUDA context) the GPU kernels.
 */
#include "nn/gat_model.h"

#include <string.h>

#define SLOPE 0.2
#define ATTN_STREAM 64u

void gd__gat_model_destroy(gd__gat_model *m) {
    if (!m) return;
    const gd__nn_ctx *ctx = &m->ctx;
    for (int l = 0; l < m->cfg.num_layers; l++) {
        gd__nn_tensor *const t[] = {&m->p[l],      &m->ssrc[l], &m->sdst[l], &m->alpha[l],
                                    &m->alphad[l], &m->agg[l],  &m->z[l]};
        for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) gd__nn_tensor_free(ctx, t[i]);
    }
    gd__nn_tensor *const s[] = {&m->dp,  &m->dagg,  &m->dalpha, &m->dss,
                                &m->dsd, &m->dh[0], &m->dh[1]};
    for (size_t i = 0; i < sizeof s / sizeof s[0]; i++) gd__nn_tensor_free(ctx, s[i]);
    if (m->keys) ctx->be->release(ctx, m->keys);
    gd__nn_params_free(ctx, &m->params);
    gd_free(m);
}

gd_status gd__gat_model_create(const gd__nn_ctx *ctx, const gd__gat_config *cfg, uint64_t init_seed,
                               gd__gat_model **out) {
    gd_status st = GD_OK;
    gd__gat_model *m = NULL;
    GD_REQUIRE(ctx && ctx->be && cfg && out, GD_ERR_INVALID_ARG,
               "GAT: ctx, config and out must be given");
    *out = NULL;
    const gd__model_config *c = cfg;
    const int L = c->num_layers, H = cfg->heads > 0 ? cfg->heads : 1;
    GD_REQUIRE(L >= 1 && L <= GD__MODEL_MAX_LAYERS, GD_ERR_INVALID_ARG, "GAT: %d layers (1 to %d)",
               L, GD__MODEL_MAX_LAYERS);
    GD_REQUIRE(H >= 1 && H <= 64, GD_ERR_INVALID_ARG, "GAT: %d heads (1 to 64)", H);
    GD_REQUIRE(c->in_dim > 0 && c->num_classes > 0 && (L == 1 || c->hidden_dim > 0),
               GD_ERR_INVALID_ARG, "GAT: input %lld, hidden %lld, classes %lld (must be positive)",
               (long long)c->in_dim, (long long)c->hidden_dim, (long long)c->num_classes);
    GD_REQUIRE(c->dropout >= 0 && c->dropout < 1 && cfg->attn_dropout >= 0 && cfg->attn_dropout < 1,
               GD_ERR_INVALID_ARG, "GAT: dropout %g and attention dropout %g must be in [0, 1)",
               c->dropout, cfg->attn_dropout);
    GD_REQUIRE(ctx->be->supports(c->dtype), GD_ERR_UNSUPPORTED, "GAT: the %s backend has no %s ops",
               ctx->be->name, gd_dtype_name(c->dtype));
    for (int l = 0; l <= L; l++)
        GD_REQUIRE(c->max_nodes[l] > 0 && (l == L || cfg->max_edges[l] >= 0), GD_ERR_INVALID_ARG,
                   "GAT: max_nodes[%d] = %lld must be positive (and max_edges >= 0)", l,
                   (long long)c->max_nodes[l]);
    m = gd_calloc(1, sizeof *m);
    GD_REQUIRE(m, GD_ERR_NO_MEMORY, "out of memory allocating a GAT model");
    m->cfg = *cfg;
    m->cfg.heads = H;
    m->ctx = *ctx;
    m->params.dtype = c->dtype;
    int64_t cap_p = 1, cap_agg = 1, cap_alpha = 1, cap_s = 1, cap_d = 1, cap_h = 1, cap_k = 1;
    for (int l = 0; l < L; l++) {
        m->f[l] = l < L - 1 ? c->hidden_dim : c->num_classes;
        m->in[l] = l == 0 ? c->in_dim : H * c->hidden_dim;
        m->out[l] = l < L - 1 ? H * m->f[l] : m->f[l];
        GD_CHECK(gd__nn_params_add(&m->params, m->in[l], H * m->f[l], m->in[l], &m->w[l]));
        GD_CHECK(gd__nn_params_add(&m->params, H, m->f[l], m->f[l], &m->asrc[l]));
        GD_CHECK(gd__nn_params_add(&m->params, H, m->f[l], m->f[l], &m->adst[l]));
        GD_CHECK(gd__nn_params_add(&m->params, 1, m->out[l], m->in[l], &m->b[l]));
        const int64_t ns = c->max_nodes[l], nd = c->max_nodes[l + 1];
        const int64_t ne = cfg->max_edges[l] + nd;
        GD_CHECK(gd__nn_tensor_alloc(ctx, c->dtype, ns, H * m->f[l], &m->p[l]));
        GD_CHECK(gd__nn_tensor_alloc(ctx, c->dtype, ns, H, &m->ssrc[l]));
        GD_CHECK(gd__nn_tensor_alloc(ctx, c->dtype, nd, H, &m->sdst[l]));
        GD_CHECK(gd__nn_tensor_alloc(ctx, c->dtype, ne, H, &m->alpha[l]));
        GD_CHECK(gd__nn_tensor_alloc(ctx, c->dtype, ne, H, &m->alphad[l]));
        GD_CHECK(gd__nn_tensor_alloc(ctx, c->dtype, nd, H * m->f[l], &m->agg[l]));
        if (l == L - 1) GD_CHECK(gd__nn_tensor_alloc(ctx, c->dtype, nd, m->out[l], &m->z[l]));
        cap_p = gd__max64(cap_p, ns * H * m->f[l]);
        cap_agg = gd__max64(cap_agg, nd * H * m->f[l]);
        cap_alpha = gd__max64(cap_alpha, ne * H);
        cap_k = gd__max64(cap_k, ne);
        cap_s = gd__max64(cap_s, ns * H);
        cap_d = gd__max64(cap_d, nd * H);
        if (l > 0) cap_h = gd__max64(cap_h, ns * m->in[l]);
    }
    GD_CHECK(gd__nn_params_alloc(ctx, &m->params));
    GD_CHECK(gd__nn_params_init(ctx, &m->params, init_seed));
    GD_CHECK(gd__nn_tensor_alloc(ctx, c->dtype, 1, cap_p, &m->dp));
    GD_CHECK(gd__nn_tensor_alloc(ctx, c->dtype, 1, cap_agg, &m->dagg));
    GD_CHECK(gd__nn_tensor_alloc(ctx, c->dtype, 1, cap_alpha, &m->dalpha));
    GD_CHECK(gd__nn_tensor_alloc(ctx, c->dtype, 1, cap_s, &m->dss));
    GD_CHECK(gd__nn_tensor_alloc(ctx, c->dtype, 1, cap_d, &m->dsd));
    GD_CHECK(gd__nn_tensor_alloc(ctx, c->dtype, 1, cap_h, &m->dh[0]));
    GD_CHECK(gd__nn_tensor_alloc(ctx, c->dtype, 1, cap_h, &m->dh[1]));
    if (cfg->attn_dropout > 0)
        GD_CHECK(ctx->be->alloc(ctx, (size_t)cap_k * sizeof(int64_t), (void **)&m->keys));
    *out = m;
    return GD_OK;
fail:
    gd__gat_model_destroy(m);
    return st;
}

static gd_status check_blocks(const gd__gat_model *m, const gd_block *blocks) {
    gd_status st = GD_OK;
    GD_REQUIRE(blocks, GD_ERR_INVALID_ARG, "GAT: blocks is NULL");
    for (int l = 0; l < m->cfg.num_layers; l++) {
        const gd_block *b = &blocks[l];
        GD_REQUIRE(b->num_src <= m->cfg.max_nodes[l] && b->num_dst <= m->cfg.max_nodes[l + 1] &&
                       b->num_edges <= m->cfg.max_edges[l],
                   GD_ERR_RANGE,
                   "GAT: block %d has %lld sources, %lld destinations and %lld edges, more than "
                   "the model was sized for (%lld, %lld, %lld)",
                   l, (long long)b->num_src, (long long)b->num_dst, (long long)b->num_edges,
                   (long long)m->cfg.max_nodes[l], (long long)m->cfg.max_nodes[l + 1],
                   (long long)m->cfg.max_edges[l]);
        GD_REQUIRE(l == 0 || b->num_src == blocks[l - 1].num_dst, GD_ERR_INVALID_ARG,
                   "GAT: block %d has %lld sources but block %d has %lld destinations", l,
                   (long long)b->num_src, l - 1, (long long)blocks[l - 1].num_dst);
    }
fail:
    return st;
}

/*
 * The end of layer l from its attention-weighted sums agg: an inner layer's output is agg + b
 * then ReLU, in place (out must be agg); the last layer's is the heads' mean plus b, in out.
 */
static gd_status layer_end(gd__gat_model *m, int l, gd__nn_tensor *agg, gd__nn_tensor *out) {
    gd_status st = GD_OK;
    const gd__nn_ctx *ctx = &m->ctx;
    gd__nn_tensor bias = gd__nn_param(&m->params, m->b[l]);
    if (l < m->cfg.num_layers - 1) {
        GD_REQUIRE(out->data == agg->data, GD_ERR_INTERNAL, "GAT: an inner layer ends in place");
        GD_CHECK(ctx->be->add_bias(ctx, agg, &bias));
        GD_CHECK(gd__nn_relu(ctx, agg, agg));
    } else {
        GD_CHECK(GAT_OP(head_mean, ctx, agg, m->cfg.heads, out));
        GD_CHECK(ctx->be->add_bias(ctx, out, &bias));
    }
fail:
    return st;
}

/*
 * The attention dropout's keys of block b's rows from the sources' global ids (node_ids: the
 * input nodes', whose first rows are every layer's sources): the masks follow the edges, not
 * their positions, so data-parallel ranks drop what one GPU drops. Without ids, positions.
 */
static gd_status attn_keys(gd__gat_model *m, const gd_block *b, const int64_t *node_ids) {
    if (!node_ids) return GD_OK;
    return GAT_OP(edge_keys, &m->ctx, b, node_ids, m->keys);
}

gd_status gd__gat_model_forward(gd__gat_model *m, const gd_block *blocks, const gd__nn_tensor *x,
                                const int64_t *node_ids, int train, uint64_t dropout_seed,
                                gd__nn_tensor *logits) {
    gd_status st = GD_OK;
    GD_REQUIRE(m && x && logits, GD_ERR_INVALID_ARG, "GAT forward: model, x and logits needed");
    GD_CHECK(check_blocks(m, blocks));
    GD_REQUIRE(x->cols == m->in[0] && x->rows >= blocks[0].num_src, GD_ERR_INVALID_ARG,
               "GAT forward: x is %lld x %lld, expected at least %lld rows of %lld",
               (long long)x->rows, (long long)x->cols, (long long)blocks[0].num_src,
               (long long)m->in[0]);
    const gd__nn_ctx *ctx = &m->ctx;
    const int L = m->cfg.num_layers;
    const double p = m->cfg.dropout, pa = m->cfg.attn_dropout;
    m->input = NULL;
    gd__nn_tensor h = gd__nn_rows(x, blocks[0].num_src);
    for (int l = 0; l < L; l++) {
        const gd_block *b = &blocks[l];
        const int64_t ns = b->num_src, nd = b->num_dst, ne = b->num_edges + nd;
        gd__nn_tensor w = gd__nn_param(&m->params, m->w[l]);
        gd__nn_tensor as = gd__nn_param(&m->params, m->asrc[l]);
        gd__nn_tensor ad = gd__nn_param(&m->params, m->adst[l]);
        gd__nn_tensor pp = gd__nn_rows(&m->p[l], ns), ss = gd__nn_rows(&m->ssrc[l], ns);
        gd__nn_tensor sd = gd__nn_rows(&m->sdst[l], nd), al = gd__nn_rows(&m->alpha[l], ne);
        gd__nn_tensor ald = gd__nn_rows(&m->alphad[l], ne), ag = gd__nn_rows(&m->agg[l], nd);
        gd__nn_tensor z = l == L - 1 ? gd__nn_rows(&m->z[l], nd) : ag;
        GD_CHECK(gd__nn_linear(ctx, &h, &w, NULL, &pp, 0));
        GD_CHECK(GAT_OP(node_scores, ctx, &pp, &as, &ad, nd, &ss, &sd));
        GD_CHECK(GAT_OP(edge_softmax, ctx, b, &ss, &sd, SLOPE, &al));
        const gd__nn_tensor *use = &al;
        if (train && pa > 0) {
            GD_CHECK(attn_keys(m, b, node_ids));
            GD_CHECK(gd__nn_dropout(ctx, pa, dropout_seed, ATTN_STREAM + (uint32_t)l,
                                    node_ids ? m->keys : NULL, &al, &ald));
            use = &ald;
        }
        GD_CHECK(GAT_OP(aggregate, ctx, b, use, &pp, &ag));
        GD_CHECK(layer_end(m, l, &ag, &z));
        if (l < L - 1 && train && p > 0)
            GD_CHECK(gd__nn_dropout(ctx, p, dropout_seed, (uint32_t)l, node_ids, &ag, &ag));
        h = z;
        m->rows[l] = ns;
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

gd_status gd__gat_model_backward(gd__gat_model *m, const gd_block *blocks,
                                 const gd__nn_tensor *dlogits, gd__nn_tensor *dx) {
    gd_status st = GD_OK;
    GD_REQUIRE(m && dlogits, GD_ERR_INVALID_ARG, "GAT backward: model and dlogits needed");
    GD_REQUIRE(m->input, GD_ERR_INVALID_ARG, "GAT backward: no forward pass to go back through");
    GD_CHECK(check_blocks(m, blocks));
    const int L = m->cfg.num_layers, H = m->cfg.heads;
    for (int l = 0; l <= L; l++)
        GD_REQUIRE(m->rows[l] == (l < L ? blocks[l].num_src : blocks[L - 1].num_dst),
                   GD_ERR_INVALID_ARG,
                   "GAT backward: the blocks are not those of the last forward pass");
    GD_REQUIRE(dlogits->rows == m->rows[L] && dlogits->cols == m->out[L - 1], GD_ERR_INVALID_ARG,
               "GAT backward: dlogits is %lld x %lld, the logits were %lld x %lld",
               (long long)dlogits->rows, (long long)dlogits->cols, (long long)m->rows[L],
               (long long)m->out[L - 1]);
    const gd__nn_ctx *ctx = &m->ctx;
    const double p = m->cfg.dropout, pa = m->cfg.attn_dropout;
    const int attn = m->train && pa > 0;
    gd__nn_tensor dz = *dlogits; /* the gradient of z_l (the logits for the last layer) */
    for (int l = L - 1; l >= 0; l--) {
        const gd_block *b = &blocks[l];
        const int64_t ns = b->num_src, nd = b->num_dst, ne = b->num_edges + nd, hf = H * m->f[l];
        gd__nn_tensor hin = l == 0 ? gd__nn_rows(m->input, ns) : gd__nn_rows(&m->agg[l - 1], ns);
        gd__nn_tensor w = gd__nn_param(&m->params, m->w[l]);
        gd__nn_tensor as = gd__nn_param(&m->params, m->asrc[l]);
        gd__nn_tensor ad = gd__nn_param(&m->params, m->adst[l]);
        gd__nn_tensor dw = gd__nn_grad(&m->params, m->w[l]);
        gd__nn_tensor das = gd__nn_grad(&m->params, m->asrc[l]);
        gd__nn_tensor dad = gd__nn_grad(&m->params, m->adst[l]);
        gd__nn_tensor db = gd__nn_grad(&m->params, m->b[l]);
        gd__nn_tensor pp = gd__nn_rows(&m->p[l], ns), ss = gd__nn_rows(&m->ssrc[l], ns);
        gd__nn_tensor sd = gd__nn_rows(&m->sdst[l], nd), al = gd__nn_rows(&m->alpha[l], ne);
        gd__nn_tensor ald = gd__nn_rows(&m->alphad[l], ne);
        gd__nn_tensor dagg = gd__nn_shaped(&m->dagg, nd, hf), dal = gd__nn_shaped(&m->dalpha, ne, H);
        gd__nn_tensor dp = gd__nn_shaped(&m->dp, ns, hf), dss = gd__nn_shaped(&m->dss, ns, H),
                      dsd = gd__nn_shaped(&m->dsd, nd, H);
        GD_CHECK(ctx->be->bias_grad(ctx, &dz, &db, 1));
        if (l == L - 1) {
            GD_CHECK(gd__nn_zero(ctx, &dagg));
            GD_CHECK(GAT_OP(head_mean_backward, ctx, &dz, H, &dagg));
        } else {
            dagg = dz; /* z = agg + b */
        }
        GD_CHECK(gd__nn_zero(ctx, &dp));
        GD_CHECK(GAT_OP(aggregate_backward, ctx, b, attn ? &ald : &al, &pp, &dagg, &dal, &dp));
        if (attn) {
            GD_CHECK(attn_keys(m, b, m->node_ids));
            GD_CHECK(gd__nn_dropout_backward(ctx, pa, m->dropout_seed, ATTN_STREAM + (uint32_t)l,
                                             m->node_ids ? m->keys : NULL, &dal, &dal));
        }
        GD_CHECK(gd__nn_zero(ctx, &dss));
        GD_CHECK(gd__nn_zero(ctx, &dsd));
        GD_CHECK(GAT_OP(edge_softmax_backward, ctx, b, &ss, &sd, SLOPE, &al, &dal, &dss, &dsd));
        GD_CHECK(GAT_OP(node_scores_backward, ctx, &pp, &as, &ad, nd, &dss, &dsd, &dp, &das, &dad));
        /* p = h W: dW += h^T dp, dh = dp W^T. */
        gd__nn_tensor *dh = NULL, dhb;
        if (l == 0) {
            if (dx) {
                GD_REQUIRE(dx->rows == ns && dx->cols == m->in[0], GD_ERR_INVALID_ARG,
                           "GAT backward: dx is %lld x %lld, expected %lld x %lld",
                           (long long)dx->rows, (long long)dx->cols, (long long)ns,
                           (long long)m->in[0]);
                dh = dx;
            }
        } else {
            dhb = gd__nn_shaped(&m->dh[l & 1], ns, m->in[l]);
            dh = &dhb;
        }
        GD_CHECK(gd__nn_linear_backward(ctx, &hin, &w, &dp, dh, 0, &dw, NULL, 1));
        if (l == 0) break;
        /*
         * h_l = dropout(relu(z_{l-1})) was computed in place in agg[l - 1]: its positive elements
         * are those relu kept and dropout did not drop, which is what the ReLU backward needs.
         */
        if (m->train && p > 0)
            GD_CHECK(gd__nn_dropout_backward(ctx, p, m->dropout_seed, (uint32_t)(l - 1),
                                             m->node_ids, dh, dh));
        GD_CHECK(gd__nn_relu_backward(ctx, &hin, dh, dh));
        dz = *dh;
    }
fail:
    return st;
}

/* ------------------------------------------------- exact inference (attention) */

static void gat_attn_dims_i(void *context, int l, int64_t *in_cols, int64_t *out_cols,
                            int64_t *proj_cols, int64_t *heads) {
    const gd__gat_model *m = context;
    *in_cols = m->in[l];
    *out_cols = m->out[l];
    *proj_cols = (int64_t)m->cfg.heads * m->f[l];
    *heads = m->cfg.heads;
}

static gd_status gat_attn_project_i(void *context, int l, const gd__nn_tensor *h, gd__nn_tensor *p,
                                    gd__nn_tensor *ssrc, gd__nn_tensor *sdst) {
    gd_status st = GD_OK;
    gd__gat_model *m = context;
    const gd__nn_ctx *ctx = &m->ctx;
    GD_REQUIRE(l >= 0 && l < m->cfg.num_layers, GD_ERR_INVALID_ARG, "GAT: layer %d of %d", l,
               m->cfg.num_layers);
    gd__nn_tensor w = gd__nn_param(&m->params, m->w[l]);
    gd__nn_tensor as = gd__nn_param(&m->params, m->asrc[l]);
    gd__nn_tensor ad = gd__nn_param(&m->params, m->adst[l]);
    GD_CHECK(gd__nn_linear(ctx, h, &w, NULL, p, 0));
    GD_CHECK(GAT_OP(node_scores, ctx, p, &as, &ad, h->rows, ssrc, sdst));
fail:
    return st;
}

static gd_status gat_attn_combine_i(void *context, int l, const gd_block *blk, int64_t self_offset,
                                    const gd__nn_tensor *p, const gd__nn_tensor *ssrc,
                                    const gd__nn_tensor *sdst, gd__nn_tensor *alpha,
                                    gd__nn_tensor *agg, gd__nn_tensor *out) {
    gd_status st = GD_OK;
    gd__gat_model *m = context;
    const int L = m->cfg.num_layers;
    GD_REQUIRE(l >= 0 && l < L, GD_ERR_INVALID_ARG, "GAT: layer %d of %d", l, L);
    /* As the training forward without dropout: the same ops, the self row at d + offset. */
    gd__nn_tensor *sums = l < L - 1 ? out : agg; /* an inner layer ends in place */
    GD_CHECK(GAT_OP(edge_softmax_at, &m->ctx, blk, self_offset, ssrc, sdst, SLOPE, alpha));
    GD_CHECK(GAT_OP(aggregate_at, &m->ctx, blk, self_offset, alpha, p, sums));
    GD_CHECK(layer_end(m, l, sums, out));
fail:
    return st;
}

/* ------------------------------------------------------- the model interface */

/* The nodes as every kind, and the edges: a hop's destinations times its capped fanout. */
static void gat_capacity(const gd__model_shape *s, gd__model_config *cfg) {
    gd__model_node_capacity(s, cfg);
    const int L = s->num_layers;
    for (int h = 0; h < L; h++) {
        const int64_t f = s->fanouts[h];
        const int64_t k = f < 0 ? s->max_degree : f < s->max_degree ? f : s->max_degree;
        int64_t e;
        if (gd__mul_overflow_i64(cfg->max_nodes[L - h], k, &e)) e = INT64_MAX / 2;
        cfg->max_edges[L - 1 - h] = e;
    }
}

/* Device bytes of a model of cfg: the flat buffers and the saved activations (an estimate). */
static int64_t gat_bytes(const gd__model_config *cfg) {
    const int L = cfg->num_layers, H = cfg->heads > 0 ? cfg->heads : 1;
    int64_t params = 0, act = 0, scratch = 0;
    for (int l = 0; l < L; l++) {
        const int64_t f = l < L - 1 ? cfg->hidden_dim : cfg->num_classes;
        const int64_t in = l == 0 ? cfg->in_dim : H * cfg->hidden_dim;
        const int64_t ns = cfg->max_nodes[l], nd = cfg->max_nodes[l + 1];
        const int64_t ne = cfg->max_edges[l] + nd;
        params += in * H * f + 2 * H * f + H * f + 4 * GD__NN_PARAM_ALIGN;
        act += ns * H * f + ns * H + nd * H + 2 * ne * H + nd * H * f + nd * f;
        scratch =
            gd__max64(scratch, ns * H * f + nd * H * f + ne * H + ns * H + nd * H + 2 * ns * in);
        if (cfg->attn_dropout > 0) act += 2 * ne; /* the edge keys (int64) */
    }
    return 4 * (4 * params + act + scratch);
}

static gd_status gat_create_i(const gd__nn_ctx *ctx, const gd__model_config *cfg,
                              uint64_t init_seed, void **context) {
    gd__gat_model *m = NULL;
    gd_status st = gd__gat_model_create(ctx, cfg, init_seed, &m);
    *context = m;
    return st;
}

static void gat_destroy_i(void *context) {
    gd__gat_model_destroy(context);
}

static gd_status gat_forward_i(void *context, const gd_block *blocks, const gd__nn_tensor *x,
                               const int64_t *node_ids, int train, uint64_t dropout_seed,
                               gd__nn_tensor *logits) {
    return gd__gat_model_forward(context, blocks, x, node_ids, train, dropout_seed, logits);
}

static gd_status gat_backward_i(void *context, const gd_block *blocks, const gd__nn_tensor *dlogits,
                                gd__nn_tensor *dx) {
    return gd__gat_model_backward(context, blocks, dlogits, dx);
}

static gd__nn_params *gat_params_i(void *context) {
    return &((gd__gat_model *)context)->params;
}

static void gat_set_backend_i(void *context, const gd__nn_backend *be) {
    ((gd__gat_model *)context)->ctx.be = be;
}

const gd__model_i gd__gat_model_i = {
    .name = "gat",
    .label = "gat",
    .title = "GAT",
    .description = "GAT (PyG's GATConv: multi-head attention)",
    .capacity = gat_capacity,
    .bytes = gat_bytes,
    .create = gat_create_i,
    .destroy = gat_destroy_i,
    .forward = gat_forward_i,
    .backward = gat_backward_i,
    .params = gat_params_i,
    .set_backend = gat_set_backend_i,
    .layer_combine = NULL,
    .attn_dims = gat_attn_dims_i,
    .attn_project = gat_attn_project_i,
    .attn_combine = gat_attn_combine_i,
};
