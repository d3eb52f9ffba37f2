/*
 * Relational GAT (rgat.h): PyG's HeteroConv of one bipartite GATConv per relation, summed per
 * destination type, over the typed blocks of a heterogeneous minibatch. The projections are
 * gd__nn_linear calls and the attention the bipartite ops of gat.h, on the context's backend.
 * PyG's GATConv given a pair of input widths ((-1, -1)) has a source projection lin_src and a
 * destination projection lin_dst, both without bias, and scores each side with its own
 * attention vector (torch_geometric/nn/conv/gat_conv.py of PyG 2.8: `self.lin_src = Linear(
 * in_channels[0], heads * out_channels, False, ...)`, `self.lin_dst = Linear(in_channels[1],
 * ...)`, `alpha_src = (x_src * self.att_src).sum(dim=-1)`, `alpha_dst = (x_dst *
 * self.att_dst).sum(-1)`); messages carry the projected sources only. Every buffer is allocated
 * at create from the configured capacities; forward and backward allocate nothing.
 *
 * The relations into one type share one sum: each relation's attention-weighted sums are added
 * into it by the aggregation itself, and the biases after them (the heads' mean of the last
 * layer is linear, so it is taken once, of the sum).
 *
 * A layer's projections of every relation (h_s W_src, h_t W_dst) are one grouped GEMM
 * (gd__nn_linear_grouped) before its attention, and in the backward pass their gradients (the
 * weights', and the inputs', summed per type over its relations) one grouped GEMM after it,
 * with the relations' bias gradients one grouped call: one cublasGemmGroupedBatchedEx on the
 * GPU where each was a GEMM launch (docs/nn.md, "Grouped GEMM"). Each relation keeps its
 * projection gradients (dps[r], dpd[r]) for that.
 */
#include "nn/rgat.h"

#include <string.h>

static int64_t dim_of(const gd__rsage_config *cfg, int H, int l, int t) {
    return l == 0                 ? cfg->in_dim[t]
           : l == cfg->num_layers ? cfg->num_classes
                                  : (int64_t)H * cfg->hidden_dim;
}

int64_t gd__rgat_dim(const gd__rgat *m, int l, int t) {
    return dim_of(&m->cfg, m->heads, l, t);
}

/* F_l: the features of a head in layer l. */
static int64_t head_dim(const gd__rsage_config *cfg, int l) {
    return l < cfg->num_layers - 1 ? cfg->hidden_dim : cfg->num_classes;
}

/* Layer l computes type t: it receives a relation, and in the last layer it is the target. */
static int computes(const gd__rgat *m, int l, int t) {
    return m->has_in[t] && (l < m->cfg.num_layers - 1 || t == m->cfg.schema.target_type);
}

void gd__rgat_destroy(gd__rgat *m) {
    if (!m) return;
    const gd__nn_ctx *ctx = &m->ctx;
    for (int l = 0; l < GD__RSAGE_MAX_LAYERS; l++) {
        for (int t = 0; t < GD__RSAGE_MAX_TYPES; t++) gd__nn_tensor_free(ctx, &m->out[l][t]);
        for (int r = 0; r < GD__RSAGE_MAX_RELATIONS; r++) {
            gd__nn_tensor *const per[] = {&m->ps[l][r], &m->pd[l][r],    &m->ss[l][r],
                                          &m->sd[l][r], &m->alpha[l][r], &m->alphad[l][r]};
            for (size_t i = 0; i < sizeof per / sizeof per[0]; i++) gd__nn_tensor_free(ctx, per[i]);
        }
    }
    for (int t = 0; t < GD__RSAGE_MAX_TYPES; t++) {
        gd__nn_tensor_free(ctx, &m->dh[0][t]);
        gd__nn_tensor_free(ctx, &m->dh[1][t]);
    }
    gd__nn_tensor *const s[] = {&m->sum, &m->dss, &m->dsd, &m->dalpha, &m->dsum};
    for (size_t i = 0; i < sizeof s / sizeof s[0]; i++) gd__nn_tensor_free(ctx, s[i]);
    for (int r = 0; r < GD__RSAGE_MAX_RELATIONS; r++) {
        gd__nn_tensor_free(ctx, &m->dps[r]);
        gd__nn_tensor_free(ctx, &m->dpd[r]);
    }
    gd__nn_grouped_destroy(ctx, &m->gemm);
    if (m->keys) ctx->be->release(ctx, m->keys);
    gd__nn_params_free(ctx, &m->params);
    gd_free(m);
}

/* ------------------------------------------------------------ parameters */

/*
 * The parameter layout. A model may have up to 8 x 32 relation layers of five tensors each,
 * more than the flat buffer's table holds (GD__NN_MAX_PARAMS), so, as in R-SAGE, the relations
 * share tensors: each layer has one tensor per distinct (width, fan-in), and each relation's
 * parts are row ranges of them in relation order. The initialisation draws each tensor with
 * bound 1/sqrt(fan_in), so every part gets the distribution of its own fan-in.
 */
typedef struct {
    int count;
    int64_t cols[5 * GD__RSAGE_MAX_RELATIONS], fan[5 * GD__RSAGE_MAX_RELATIONS];
    int64_t rows[5 * GD__RSAGE_MAX_RELATIONS];
} groups;

/* Rows for a part of `rows` x cols with fan-in fan, in the group of its (cols, fan). */
static gd_status place(groups *g, int64_t rows, int64_t cols, int64_t fan, gd__rgat_at *at) {
    at->tensor = -1;
    at->row = 0;
    if (rows == 0) return GD_OK;
    int k = 0;
    while (k < g->count && (g->cols[k] != cols || g->fan[k] != fan)) k++;
    if (k == g->count) {
        g->cols[k] = cols;
        g->fan[k] = fan;
        g->rows[k] = 0;
        g->count++;
    }
    at->tensor = k;
    at->row = g->rows[k];
    if (gd__add_overflow_i64(g->rows[k], rows, &g->rows[k]))
        return gd__error(GD_ERR_OVERFLOW, "R-GAT: the parameters of a layer overflow");
    return GD_OK;
}

static gd_status layout_params(gd__rgat *m) {
    gd_status st = GD_OK;
    const gd__rsage_config *cfg = &m->cfg;
    const int R = cfg->schema.num_relations, L = cfg->num_layers, H = m->heads;
    for (int l = 0; l < L; l++) {
        groups g;
        memset(&g, 0, sizeof g);
        const int64_t F = head_dim(cfg, l), out = l < L - 1 ? H * F : F;
        for (int r = 0; r < R; r++) {
            gd__rgat_slot *s = &m->slot[l][r];
            s->used = l < L - 1 || cfg->schema.rel_dst[r] == cfg->schema.target_type;
            gd__rgat_at *const parts[] = {&s->w_src, &s->w_dst, &s->att_src, &s->att_dst, &s->bias};
            for (int i = 0; i < 5; i++) parts[i]->tensor = -1;
            if (!s->used) continue;
            const int64_t ws = dim_of(cfg, H, l, cfg->schema.rel_src[r]);
            const int64_t wd = dim_of(cfg, H, l, cfg->schema.rel_dst[r]);
            GD_CHECK(place(&g, ws, H * F, ws, &s->w_src));
            GD_CHECK(place(&g, wd, H * F, wd, &s->w_dst));
            GD_CHECK(place(&g, H, F, F, &s->att_src));
            GD_CHECK(place(&g, H, F, F, &s->att_dst));
            GD_CHECK(place(&g, 1, out, ws > 0 ? ws : 1, &s->bias));
        }
        int first = -1;
        for (int k = 0; k < g.count; k++) {
            int index;
            GD_CHECK(gd__nn_params_add(&m->params, g.rows[k], g.cols[k], g.fan[k], &index));
            if (k == 0) first = index;
        }
        for (int r = 0; r < R; r++) {
            gd__rgat_slot *s = &m->slot[l][r];
            gd__rgat_at *const parts[] = {&s->w_src, &s->w_dst, &s->att_src, &s->att_dst, &s->bias};
            for (int i = 0; i < 5; i++)
                if (parts[i]->tensor >= 0) parts[i]->tensor += first;
        }
    }
fail:
    return st;
}

/* A part's view: rows of its tensor, or 0 rows of cols for an absent one. */
static gd__nn_tensor part(const gd__rgat *m, gd__rgat_at at, int64_t rows, int64_t cols,
                          int grads) {
    if (at.tensor < 0) return gd__nn_view(NULL, m->cfg.dtype, m->ctx.device, 0, cols);
    gd__nn_tensor t =
        grads ? gd__nn_grad(&m->params, at.tensor) : gd__nn_param(&m->params, at.tensor);
    return gd__nn_row_range(&t, at.row, at.row + rows);
}

gd_status gd__rgat_weights(const gd__rgat *m, int l, int r, int grads, gd__rgat_rel *w) {
    gd_status st = GD_OK;
    GD_REQUIRE(m && w, GD_ERR_INVALID_ARG, "R-GAT weights: model and output must be given");
    GD_REQUIRE(l >= 0 && l < m->cfg.num_layers && r >= 0 && r < m->cfg.schema.num_relations &&
                   m->slot[l][r].used,
               GD_ERR_INVALID_ARG, "R-GAT weights: layer %d, relation %d has no parameters", l, r);
    const gd__rgat_slot *s = &m->slot[l][r];
    const int H = m->heads, L = m->cfg.num_layers;
    const int64_t F = head_dim(&m->cfg, l), out = l < L - 1 ? H * F : F;
    const int64_t ws = gd__rgat_dim(m, l, m->cfg.schema.rel_src[r]);
    const int64_t wd = gd__rgat_dim(m, l, m->cfg.schema.rel_dst[r]);
    w->w_src = part(m, s->w_src, ws, H * F, grads);
    w->w_dst = part(m, s->w_dst, wd, H * F, grads);
    w->att_src = part(m, s->att_src, H, F, grads);
    w->att_dst = part(m, s->att_dst, H, F, grads);
    w->bias = part(m, s->bias, 1, out, grads);
fail:
    return st;
}

/* ------------------------------------------------------------ create */

/* The attention's own arguments, beside the shared config's checks. */
static gd_status check_attention(int heads, double attn_dropout) {
    gd_status st = GD_OK;
    GD_REQUIRE(heads >= 1 && heads <= GD__RGAT_MAX_HEADS, GD_ERR_INVALID_ARG,
               "R-GAT: %d attention heads (1 to %d)", heads, GD__RGAT_MAX_HEADS);
    GD_REQUIRE(attn_dropout >= 0.0 && attn_dropout < 1.0, GD_ERR_INVALID_ARG,
               "R-GAT: attention dropout %g is not in [0, 1)", attn_dropout);
fail:
    return st;
}

gd_status gd__rgat_create(const gd__nn_ctx *ctx, const gd__rsage_config *cfg, int heads,
                          double attn_dropout, uint64_t init_seed, gd__rgat **out) {
    gd_status st = GD_OK;
    gd__rgat *m = NULL;
    GD_REQUIRE(ctx && ctx->be && cfg && out, GD_ERR_INVALID_ARG,
               "R-GAT: ctx, config and out must be given");
    *out = NULL;
    if (heads == 0) heads = 1;
    GD_CHECK(gd__rsage_check_config(cfg, "R-GAT"));
    GD_CHECK(check_attention(heads, attn_dropout));
    GD_REQUIRE(ctx->be->supports(cfg->dtype), GD_ERR_UNSUPPORTED,
               "R-GAT: the %s backend has no %s ops", ctx->be->name, gd_dtype_name(cfg->dtype));
    const gd__rsage_schema *s = &cfg->schema;
    const int T = s->num_types, R = s->num_relations, L = cfg->num_layers, H = heads;

    m = gd_calloc(1, sizeof *m);
    GD_REQUIRE(m, GD_ERR_NO_MEMORY, "out of memory allocating an R-GAT model");
    m->cfg = *cfg;
    m->heads = H;
    m->attn_dropout = attn_dropout;
    m->ctx = *ctx;
    m->params.dtype = cfg->dtype;
    for (int r = 0; r < R; r++) m->has_in[s->rel_dst[r]] = 1;
    GD_CHECK(layout_params(m));
    GD_CHECK(gd__nn_params_alloc(ctx, &m->params));
    GD_CHECK(gd__nn_params_init(ctx, &m->params, init_seed));

    /*
     * Activations: every type's output of every layer (the target's alone in the last), the
     * last layer's sum of heads, and each relation's projections, scores and weights. Scratch:
     * a hidden input's gradient of each type that a relation enters (the others are constant),
     * each relation's projection gradients, and one relation's score and weight gradients at a
     * time.
     */
    const gd_dtype dt = cfg->dtype;
    int64_t dh_cap[GD__RSAGE_MAX_TYPES] = {0}, dss = 0, dsd = 0, dal = 0;
    int64_t dps[GD__RSAGE_MAX_RELATIONS] = {0}, dpd[GD__RSAGE_MAX_RELATIONS] = {0};
    int64_t keys = 0, scratch = 0;
    for (int l = 0; l < L; l++) {
        const int64_t F = head_dim(cfg, l), HF = H * F;
        /* The backward GEMM's scratch: input gradients summed into a type (generously). */
        int64_t need = 0;
        for (int t = 0; t < T; t++) {
            const int64_t nd = cfg->max_nodes[(l + 1) * T + t];
            if (l < L - 1 || t == s->target_type)
                GD_CHECK(
                    gd__typed_alloc_nonempty(ctx, dt, nd, dim_of(cfg, H, l + 1, t), &m->out[l][t]));
            if (l > 0 && m->has_in[t])
                GD_CHECK(gd__typed_grow(&dh_cap[t], cfg->max_nodes[l * T + t], dim_of(cfg, H, l, t),
                                        "R-GAT"));
        }
        for (int r = 0; r < R; r++) {
            if (!m->slot[l][r].used) continue;
            const int src = s->rel_src[r], dst = s->rel_dst[r];
            const int64_t ns = cfg->max_nodes[l * T + src], nd = cfg->max_nodes[(l + 1) * T + dst];
            const int64_t ne = cfg->max_edges[l * R + r];
            /* A relation without edges, or from a featureless type, adds its bias alone. */
            if (ne == 0 || dim_of(cfg, H, l, src) == 0) continue;
            GD_CHECK(gd__typed_alloc_nonempty(ctx, dt, ns, HF, &m->ps[l][r]));
            if (dim_of(cfg, H, l, dst) > 0) {
                GD_CHECK(gd__typed_alloc_nonempty(ctx, dt, nd, HF, &m->pd[l][r]));
                GD_CHECK(gd__typed_grow(&dpd[r], nd, HF, "R-GAT"));
                need += gd__nn_scratch_elems(nd, dim_of(cfg, H, l, dst));
            }
            GD_CHECK(gd__typed_alloc_nonempty(ctx, dt, ns, H, &m->ss[l][r]));
            GD_CHECK(gd__typed_alloc_nonempty(ctx, dt, nd, H, &m->sd[l][r]));
            GD_CHECK(gd__typed_alloc_nonempty(ctx, dt, ne, H, &m->alpha[l][r]));
            if (attn_dropout > 0)
                GD_CHECK(gd__typed_alloc_nonempty(ctx, dt, ne, H, &m->alphad[l][r]));
            GD_CHECK(gd__typed_grow(&dps[r], ns, HF, "R-GAT"));
            need += gd__nn_scratch_elems(ns, dim_of(cfg, H, l, src));
            GD_CHECK(gd__typed_grow(&dss, ns, H, "R-GAT"));
            GD_CHECK(gd__typed_grow(&dsd, nd, H, "R-GAT"));
            GD_CHECK(gd__typed_grow(&dal, ne, H, "R-GAT"));
            if (ne > keys) keys = ne;
        }
        if (need > scratch) scratch = need;
    }
    const int64_t nt = cfg->max_nodes[L * T + s->target_type];
    GD_CHECK(gd__typed_alloc_nonempty(ctx, dt, nt, (int64_t)H * cfg->num_classes, &m->sum));
    GD_CHECK(gd__typed_alloc_nonempty(ctx, dt, nt, (int64_t)H * cfg->num_classes, &m->dsum));
    for (int t = 0; t < T; t++) {
        GD_CHECK(gd__typed_alloc_nonempty(ctx, dt, 1, dh_cap[t], &m->dh[0][t]));
        GD_CHECK(gd__typed_alloc_nonempty(ctx, dt, 1, dh_cap[t], &m->dh[1][t]));
    }
    for (int r = 0; r < R; r++) {
        GD_CHECK(gd__typed_alloc_nonempty(ctx, dt, 1, dps[r], &m->dps[r]));
        GD_CHECK(gd__typed_alloc_nonempty(ctx, dt, 1, dpd[r], &m->dpd[r]));
    }
    GD_CHECK(gd__nn_grouped_create(ctx, dt, scratch, &m->gemm));
    GD_CHECK(gd__typed_alloc_nonempty(ctx, dt, 1, dss, &m->dss));
    GD_CHECK(gd__typed_alloc_nonempty(ctx, dt, 1, dsd, &m->dsd));
    GD_CHECK(gd__typed_alloc_nonempty(ctx, dt, 1, dal, &m->dalpha));
    if (attn_dropout > 0 && keys > 0)
        GD_CHECK(ctx->be->alloc(ctx, (size_t)keys * sizeof(int64_t), (void **)&m->keys));
    *out = m;
    return GD_OK;
fail:
    gd__rgat_destroy(m);
    return st;
}

/* ------------------------------------------------------------ forward */

/* Layer l's input of type t: the x rows for l = 0 (empty for a featureless type), else h^l. */
static gd__nn_tensor layer_input(const gd__rgat *m, int l, int t) {
    const int64_t n = m->num_nodes[l * m->cfg.schema.num_types + t];
    return l == 0 ? gd__nn_rows(&m->input[t], n) : gd__nn_rows(&m->out[l - 1][t], n);
}

/*
 * Relation r of layer l has attention to compute: edges, from a type with features at this
 * layer. Without either its messages are all zero (no edges, or zero projections, whose uniform
 * weights no score can change), so it adds its bias alone and its W and att get no gradient.
 */
static int active(const gd__rgat *m, int l, int r) {
    return m->blocks[l * m->cfg.schema.num_relations + r].num_edges > 0 &&
           gd__rgat_dim(m, l, m->cfg.schema.rel_src[r]) > 0;
}

static uint32_t dropout_stream(int l, int t) {
    return (uint32_t)(l * GD__RSAGE_MAX_TYPES + t);
}

static uint32_t attn_stream(int l, int r) {
    return GD__RGAT_ATTN_STREAM + (uint32_t)(l * GD__RSAGE_MAX_RELATIONS + r);
}

/*
 * The attention dropout's keys of relation r's edges from the two types' global ids (NULL, by
 * position, without them): the masks follow the edges, not where the sampler put them.
 */
static gd_status attn_keys(gd__rgat *m, const gd_block *b, int src, int dst, const int64_t **keys) {
    gd_status st = GD_OK;
    *keys = NULL;
    if (!m->node_ids[src] || !m->node_ids[dst]) return GD_OK;
    GD_CHECK(GAT_OP(bip_edge_keys, &m->ctx, b, m->node_ids[src], m->node_ids[dst], m->keys));
    *keys = m->keys;
fail:
    return st;
}

/*
 * Layer l's projections of the relations that attend, p_s = h_s W_src and p_d = h_t W_dst
 * (a featureless destination has none), as one grouped call.
 */
static gd_status project(gd__rgat *m, int l) {
    gd_status st = GD_OK;
    const gd__rsage_config *cfg = &m->cfg;
    const int T = cfg->schema.num_types, R = cfg->schema.num_relations;
    gd__nn_linear_group g[2 * GD__RSAGE_MAX_RELATIONS];
    int ng = 0;
    for (int r = 0; r < R; r++) {
        const int src = cfg->schema.rel_src[r], dst = cfg->schema.rel_dst[r];
        const int64_t nd = m->num_nodes[(l + 1) * T + dst];
        if (!computes(m, l, dst) || nd == 0 || !active(m, l, r)) continue;
        gd__rgat_rel w;
        GD_CHECK(gd__rgat_weights(m, l, r, 0, &w));
        const gd__nn_tensor hs = layer_input(m, l, src), hd = layer_input(m, l, dst);
        gd__nn_linear_group ps = {hs, w.w_src, w.w_src, gd__nn_rows(&m->ps[l][r], hs.rows), 0, 0};
        g[ng++] = ps;
        if (w.w_dst.rows > 0) {
            gd__nn_linear_group pd = {gd__nn_rows(&hd, nd),          w.w_dst, w.w_dst,
                                      gd__nn_rows(&m->pd[l][r], nd), 0,       0};
            g[ng++] = pd;
        }
    }
    GD_CHECK(gd__nn_linear_grouped(&m->ctx, &m->gemm, ng, g));
fail:
    return st;
}

/*
 * Relation r of layer l, its projections made: its attention-weighted sums, written or added
 * (accumulate) into sum.
 */
static gd_status attend(gd__rgat *m, int l, int r, int accumulate, gd__nn_tensor *sum) {
    gd_status st = GD_OK;
    const gd__nn_ctx *ctx = &m->ctx;
    const int src = m->cfg.schema.rel_src[r], dst = m->cfg.schema.rel_dst[r];
    const gd_block *b = &m->blocks[l * m->cfg.schema.num_relations + r];
    const int64_t ns = b->num_src, nd = b->num_dst, ne = b->num_edges;
    gd__rgat_rel w;
    GD_CHECK(gd__rgat_weights(m, l, r, 0, &w));
    gd__nn_tensor ps = gd__nn_rows(&m->ps[l][r], ns), ss = gd__nn_rows(&m->ss[l][r], ns);
    gd__nn_tensor sd = gd__nn_rows(&m->sd[l][r], nd), al = gd__nn_rows(&m->alpha[l][r], ne);
    /* The scores of each side: node_scores over one side's rows, no destinations among them. */
    gd__nn_tensor no_ss = gd__nn_rows(&ss, 0), no_sd = gd__nn_rows(&sd, 0);
    GD_CHECK(GAT_OP(node_scores, ctx, &ps, &w.att_src, &w.att_dst, 0, &ss, &no_sd));
    if (w.w_dst.rows > 0) {
        gd__nn_tensor pd = gd__nn_rows(&m->pd[l][r], nd);
        GD_CHECK(GAT_OP(node_scores, ctx, &pd, &w.att_dst, &w.att_src, 0, &sd, &no_ss));
    } else {
        GD_CHECK(gd__nn_zero(ctx, &sd)); /* a featureless destination projects to 0 */
    }
    GD_CHECK(GAT_OP(bip_softmax, ctx, b, &ss, &sd, GD__RGAT_SLOPE, &al));
    gd__nn_tensor use = al;
    if (m->train && m->attn_dropout > 0) {
        const int64_t *keys;
        use = gd__nn_rows(&m->alphad[l][r], ne);
        GD_CHECK(attn_keys(m, b, src, dst, &keys));
        GD_CHECK(gd__nn_dropout(ctx, m->attn_dropout, m->dropout_seed, attn_stream(l, r), keys, &al,
                                &use));
    }
    GD_CHECK(GAT_OP(bip_aggregate, ctx, b, &use, &ps, accumulate, sum));
fail:
    return st;
}

gd_status gd__rgat_forward(gd__rgat *m, const gd_block *blocks, const int64_t *num_nodes,
                           const gd__nn_tensor *const *x, const int64_t *const *node_ids, int train,
                           uint64_t dropout_seed, gd__nn_tensor *logits) {
    gd_status st = GD_OK;
    GD_REQUIRE(m && logits, GD_ERR_INVALID_ARG, "R-GAT forward: model and logits must be given");
    m->have_forward = 0;
    GD_CHECK(gd__rsage_check_batch(&m->cfg, blocks, num_nodes, "R-GAT"));
    const gd__rsage_config *cfg = &m->cfg;
    const gd__nn_ctx *ctx = &m->ctx;
    const int T = cfg->schema.num_types, R = cfg->schema.num_relations, L = cfg->num_layers;
    const int H = m->heads;
    GD_CHECK(gd__typed_bind_inputs(cfg, ctx, num_nodes, x, node_ids, m->input, m->node_ids,
                                   "R-GAT forward"));
    memcpy(m->blocks, blocks, sizeof *blocks * (size_t)(L * R));
    memcpy(m->num_nodes, num_nodes, sizeof *num_nodes * (size_t)((L + 1) * T));
    m->train = train;
    m->dropout_seed = dropout_seed;

    for (int l = 0; l < L; l++) {
        GD_CHECK(project(m, l));
        for (int t = 0; t < T; t++) {
            const int64_t nd = m->num_nodes[(l + 1) * T + t];
            if (!computes(m, l, t)) {
                /* A type that no relation enters: zeros, which the next layer reads. */
                if (l < L - 1) {
                    gd__nn_tensor z = gd__nn_rows(&m->out[l][t], nd);
                    GD_CHECK(gd__nn_zero(ctx, &z));
                }
                continue;
            }
            if (nd == 0) continue; /* no destinations: nothing to compute */
            gd__nn_tensor sum =
                l < L - 1 ? gd__nn_rows(&m->out[l][t], nd) : gd__nn_rows(&m->sum, nd);
            int written = 0;
            for (int r = 0; r < R; r++) {
                if (cfg->schema.rel_dst[r] != t || !active(m, l, r)) continue;
                GD_CHECK(attend(m, l, r, written, &sum));
                written = 1;
            }
            if (!written) GD_CHECK(gd__nn_zero(ctx, &sum));
            /* The heads' mean in the last layer, then every relation's bias. */
            gd__nn_tensor z = sum;
            if (l == L - 1) {
                z = gd__nn_rows(&m->out[l][t], nd);
                GD_CHECK(GAT_OP(head_mean, ctx, &sum, H, &z));
            }
            for (int r = 0; r < R; r++) {
                if (cfg->schema.rel_dst[r] != t) continue;
                gd__rgat_rel w;
                GD_CHECK(gd__rgat_weights(m, l, r, 0, &w));
                GD_CHECK(ctx->be->add_bias(ctx, &z, &w.bias));
            }
            if (l < L - 1) {
                GD_CHECK(gd__nn_relu(ctx, &z, &z));
                if (train && cfg->dropout > 0)
                    GD_CHECK(gd__nn_dropout(ctx, cfg->dropout, dropout_seed, dropout_stream(l, t),
                                            m->node_ids[t], &z, &z));
            }
        }
    }
    m->have_forward = 1;
    *logits = gd__nn_rows(&m->out[L - 1][cfg->schema.target_type],
                          m->num_nodes[L * T + cfg->schema.target_type]);
fail:
    return st;
}

/* ------------------------------------------------------------ backward */

/*
 * Relation r of layer l given dsum, the gradient of the sum its messages went into: the
 * gradients of its att_src and att_dst, and of its projections (dps[r], dpd[r]), whose
 * products (the gradients of W_src, W_dst, and of the inputs in dh where want says) it appends
 * to g[*ng...] for the layer's grouped call.
 */
static gd_status attend_backward(gd__rgat *m, int l, int r, const gd__nn_tensor *dsum,
                                 const int *want, gd__nn_tensor *dh, gd__nn_linear_grad_group *g,
                                 int *ng) {
    gd_status st = GD_OK;
    const gd__nn_ctx *ctx = &m->ctx;
    const int src = m->cfg.schema.rel_src[r], dst = m->cfg.schema.rel_dst[r], H = m->heads;
    const gd_block *b = &m->blocks[l * m->cfg.schema.num_relations + r];
    const int64_t ns = b->num_src, nd = b->num_dst, ne = b->num_edges;
    const int64_t HF = H * head_dim(&m->cfg, l);
    gd__rgat_rel w, gr;
    GD_CHECK(gd__rgat_weights(m, l, r, 0, &w));
    GD_CHECK(gd__rgat_weights(m, l, r, 1, &gr));
    gd__nn_tensor hs = layer_input(m, l, src), hd = layer_input(m, l, dst);
    gd__nn_tensor ht = gd__nn_rows(&hd, nd);
    gd__nn_tensor ps = gd__nn_rows(&m->ps[l][r], ns), ss = gd__nn_rows(&m->ss[l][r], ns);
    gd__nn_tensor sd = gd__nn_rows(&m->sd[l][r], nd), al = gd__nn_rows(&m->alpha[l][r], ne);
    gd__nn_tensor dps = gd__nn_shaped(&m->dps[r], ns, HF), dal = gd__nn_shaped(&m->dalpha, ne, H);
    gd__nn_tensor dss = gd__nn_shaped(&m->dss, ns, H), dsd = gd__nn_shaped(&m->dsd, nd, H);
    gd__nn_tensor no_dss = gd__nn_rows(&dss, 0), no_dsd = gd__nn_rows(&dsd, 0);
    const int attn = m->train && m->attn_dropout > 0;
    gd__nn_tensor used = attn ? gd__nn_rows(&m->alphad[l][r], ne) : al;
    /* sum (+)= alpha' p: d(p) += alpha'^T dsum, d(alpha') = dsum . p, then the dropout's. */
    GD_CHECK(gd__nn_zero(ctx, &dps));
    GD_CHECK(GAT_OP(bip_aggregate_backward, ctx, b, &used, &ps, dsum, &dal, &dps));
    if (attn) {
        const int64_t *keys;
        GD_CHECK(attn_keys(m, b, src, dst, &keys));
        GD_CHECK(gd__nn_dropout_backward(ctx, m->attn_dropout, m->dropout_seed, attn_stream(l, r),
                                         keys, &dal, &dal));
    }
    GD_CHECK(gd__nn_zero(ctx, &dss));
    GD_CHECK(gd__nn_zero(ctx, &dsd));
    GD_CHECK(GAT_OP(bip_softmax_backward, ctx, b, &ss, &sd, GD__RGAT_SLOPE, &al, &dal, &dss,
                    &dsd));
    /*
     * The scores: into dp and att_src. p = h_s W_src: dW_src += h_s^T dp and dh_s += dp W_src^T
     * join the layer's grouped backward GEMM (g), as do those of p_d = h_t W_dst.
     */
    GD_CHECK(GAT_OP(node_scores_backward, ctx, &ps, &w.att_src, &w.att_dst, 0, &dss, &no_dsd, &dps,
                    &gr.att_src, &gr.att_dst));
    gd__nn_linear_grad_group gs = {
        hs, w.w_src, dps, want[src] ? dh[src] : dps, gr.w_src, gr.w_src, want[src], 1, 0, 1};
    g[(*ng)++] = gs;
    if (w.w_dst.rows > 0) {
        gd__nn_tensor pd = gd__nn_rows(&m->pd[l][r], nd), dpd = gd__nn_shaped(&m->dpd[r], nd, HF);
        GD_CHECK(gd__nn_zero(ctx, &dpd));
        GD_CHECK(GAT_OP(node_scores_backward, ctx, &pd, &w.att_dst, &w.att_src, 0, &dsd, &no_dss,
                        &dpd, &gr.att_dst, &gr.att_src));
        gd__nn_linear_grad_group gd = {
            ht,       w.w_dst,  dpd,       want[dst] ? gd__nn_rows(&dh[dst], nd) : dpd,
            gr.w_dst, gr.w_dst, want[dst], 1,
            0,        1};
        g[(*ng)++] = gd;
    }
fail:
    return st;
}

gd_status gd__rgat_backward(gd__rgat *m, const gd__nn_tensor *dlogits, gd__nn_tensor *const *dx) {
    gd_status st = GD_OK;
    GD_REQUIRE(m && dlogits, GD_ERR_INVALID_ARG, "R-GAT backward: model and dlogits must be given");
    GD_REQUIRE(m->have_forward, GD_ERR_INVALID_ARG,
               "R-GAT backward: no forward pass to go back through");
    const gd__rsage_config *cfg = &m->cfg;
    const gd__nn_ctx *ctx = &m->ctx;
    const int T = cfg->schema.num_types, R = cfg->schema.num_relations, L = cfg->num_layers;
    const int target = cfg->schema.target_type, H = m->heads;
    GD_CHECK(gd__typed_check_backward(cfg, m->num_nodes, dlogits, dx, "R-GAT backward"));

    /* dz[t]: the gradient of layer l's output of type t (only the target in the last layer). */
    gd__nn_tensor dz[GD__RSAGE_MAX_TYPES];
    dz[target] = *dlogits;
    for (int l = L - 1; l >= 0; l--) {
        /* dh[t]: the gradient of layer l's input of type t, where one is wanted. */
        gd__nn_tensor dh[GD__RSAGE_MAX_TYPES];
        int want[GD__RSAGE_MAX_TYPES];
        for (int t = 0; t < T; t++) {
            if (l > 0) {
                want[t] = m->has_in[t];
                if (want[t])
                    dh[t] =
                        gd__nn_shaped(&m->dh[l & 1][t], m->num_nodes[l * T + t], gd__rgat_dim(m, l, t));
            } else {
                want[t] = dx && dx[t] && cfg->in_dim[t] > 0;
                if (want[t]) dh[t] = *dx[t];
            }
            if (want[t]) GD_CHECK(gd__nn_zero(ctx, &dh[t]));
        }
        gd__nn_linear_grad_group g[2 * GD__RSAGE_MAX_RELATIONS];
        gd__nn_bias_grad_group bg[GD__RSAGE_MAX_RELATIONS];
        int ng = 0, nb = 0;
        for (int t = 0; t < T; t++) {
            const int64_t nd = m->num_nodes[(l + 1) * T + t];
            if (!computes(m, l, t) || nd == 0) continue;
            /* The sum's gradient: dz itself in a hidden layer, through the heads' mean last. */
            gd__nn_tensor dsum = dz[t];
            if (l == L - 1) {
                dsum = gd__nn_shaped(&m->dsum, nd, (int64_t)H * cfg->num_classes);
                GD_CHECK(gd__nn_zero(ctx, &dsum));
                GD_CHECK(GAT_OP(head_mean_backward, ctx, &dz[t], H, &dsum));
            }
            for (int r = 0; r < R; r++) {
                if (cfg->schema.rel_dst[r] != t) continue;
                gd__rgat_rel gr;
                GD_CHECK(gd__rgat_weights(m, l, r, 1, &gr));
                gd__nn_bias_grad_group bias = {dz[t], gr.bias, 1};
                bg[nb++] = bias;
                if (active(m, l, r)) GD_CHECK(attend_backward(m, l, r, &dsum, want, dh, g, &ng));
            }
        }
        /* The relations' bias gradients, then the projections' gradients, each one call. */
        GD_CHECK(gd__nn_bias_grad_grouped(ctx, nb, bg));
        GD_CHECK(gd__nn_linear_backward_grouped(ctx, &m->gemm, ng, g));
        if (l == 0) break;
        /*
         * h^l_t = dropout(relu(z^{l-1}_t)) was computed in place, so out[l-1][t] holds h^l_t. Its
         * positive elements are exactly those that ReLU kept and dropout did not drop (the
         * dropout scale is positive), which is what the ReLU backward needs.
         */
        for (int t = 0; t < T; t++) {
            if (!want[t]) continue;
            if (m->train && cfg->dropout > 0)
                GD_CHECK(gd__nn_dropout_backward(ctx, cfg->dropout, m->dropout_seed,
                                                 dropout_stream(l - 1, t), m->node_ids[t], &dh[t],
                                                 &dh[t]));
            gd__nn_tensor h = layer_input(m, l, t);
            GD_CHECK(gd__nn_relu_backward(ctx, &h, &dh[t], &dh[t]));
            dz[t] = dh[t];
        }
    }
fail:
    return st;
}

gd__nn_params *gd__rgat_params(gd__rgat *m) {
    return m ? &m->params : NULL;
}

int64_t gd__rgat_bytes(const gd__rsage_config *cfg, int heads, double attn_dropout) {
    if (heads == 0) heads = 1;
    if (!cfg || gd__rsage_check_config(cfg, "R-GAT") != GD_OK ||
        check_attention(heads, attn_dropout) != GD_OK)
        return 0;
    const gd__rsage_schema *s = &cfg->schema;
    const int T = s->num_types, R = s->num_relations, L = cfg->num_layers, H = heads;
    /*
     * In doubles: an estimate for planning, which must not overflow on a huge config. p counts
     * parameters, a activations, d the largest hidden gradient of a type, g one relation's
     * largest scratch (scores' and weights' gradients) and every relation's projection
     * gradients, sc the grouped GEMM's scratch.
     */
    double p = 0, a = 0, d = 0, g = 0, k = 0, sc = 0, pr[GD__RSAGE_MAX_RELATIONS] = {0};
    for (int l = 0; l < L; l++) {
        const double F = (double)head_dim(cfg, l), HF = H * F;
        double need = 0;                   /* the grouped GEMM's scratch, as create counts it */
        p += 5.0 * R * GD__NN_PARAM_ALIGN; /* the groups' padding, at most */
        for (int r = 0; r < R; r++) {
            if (l == L - 1 && s->rel_dst[r] != s->target_type) continue;
            const double ws = (double)dim_of(cfg, H, l, s->rel_src[r]);
            const double wd = (double)dim_of(cfg, H, l, s->rel_dst[r]);
            const double ns = (double)cfg->max_nodes[l * T + s->rel_src[r]];
            const double nd = (double)cfg->max_nodes[(l + 1) * T + s->rel_dst[r]];
            const double ne = (double)cfg->max_edges[l * R + r];
            p += (ws + wd) * HF + 2 * HF + (l < L - 1 ? HF : F);
            a += (ns + nd) * (HF + H) + ne * H * (attn_dropout > 0 ? 2 : 1);
            const double sg = (ns + nd) * H + ne * H;
            if (sg > g) g = sg;
            if ((ns + nd) * HF > pr[r]) pr[r] = (ns + nd) * HF;
            need += ns * ws + nd * wd + 2.0 * GD__NN_SCRATCH_ALIGN;
            if (ne > k) k = ne;
        }
        if (need > sc) sc = need;
        for (int t = 0; t < T; t++) {
            const double nd = (double)cfg->max_nodes[(l + 1) * T + t];
            if (l < L - 1 || t == s->target_type) a += nd * (double)dim_of(cfg, H, l + 1, t);
            if (l > 0) {
                const double n = (double)cfg->max_nodes[l * T + t] * (double)dim_of(cfg, H, l, t);
                if (n > d) d = n;
            }
        }
    }
    a += 2.0 * (double)cfg->max_nodes[L * T + s->target_type] * H * (double)cfg->num_classes;
    for (int r = 0; r < R; r++) g += pr[r];
    /*
     * Parameters, gradients and Adam's two moments; activations; scratch (each relation's
     * projection gradients, the grouped GEMM's); the edge keys.
     */
    if (!gd__nn_grouped_wanted()) sc = 0; /* one product at a time needs no scratch */
    const double total = (4 * p + a + 2.0 * T * d + g + sc) * (double)gd_dtype_size(cfg->dtype) +
                         (attn_dropout > 0 ? 8.0 * k : 0);
    return total < 9.0e18 ? (int64_t)total : INT64_MAX;
}
