/*
 * Relational GraphSAGE (rsage.h): PyG's to_hetero(SAGEConv) with aggr="sum" over the typed
 * blocks of a heterogeneous minibatch, written with the backend-agnostic ops of nn/internal.h
 * only (mean aggregation, linear layers, ReLU, dropout), like GraphSAGE (sage.c), so that the
 * CPU and CUDA backends run the same code. Each relation of a layer is one block and three
 * tensors of parameters; a destination type's output is the sum of its relations' SAGEConv
 * outputs, accumulated in place by the linear layers. Every buffer is allocated at create from
 * the configured capacities; forward and backward allocate nothing.
 *
 * A layer's matrix products of every relation and type, forward (mean W_l + b, self W_root)
 * and backward (the means' and the roots' input gradients, every weight gradient), go to the
 * backend as one grouped GEMM (gd__nn_linear_grouped, gd__nn_linear_backward_grouped): one
 * cublasGemmGroupedBatchedEx on the GPU instead of a small GEMM a product, the relations into
 * a type summed by the op in their order (docs/nn.md, "Grouped GEMM"). Each relation keeps the
 * gradient of its mean for that (dagg[r]).
 *
 * R-GCN (root_per_type, rsage.h) is the same code: its relations have W_l alone, and each type
 * one [W_root; b] block whose product (the bias alone for a featureless type) comes first in
 * the type's sum, so that every type, entered by a relation or not, has an output.
 */
#include "nn/rsage.h"

#include <string.h>

int64_t gd__rsage_dim(const gd__rsage_config *cfg, int l, int t) {
    return l == 0 ? cfg->in_dim[t] : l == cfg->num_layers ? cfg->num_classes : cfg->hidden_dim;
}

/* The model's name in messages. */
static const char *kind_name(const gd__rsage_config *cfg) {
    return cfg->root_per_type ? "R-GCN" : "R-SAGE";
}

/* Layer l computes type t: it receives a relation, and in the last layer it is the target. */
static int computes(const gd__rsage *m, int l, int t) {
    return m->has_in[t] && (l < m->cfg.num_layers - 1 || t == m->cfg.schema.target_type);
}

/* The fan-in of W_l[r] and b[r]: the source width, 1 for a featureless source (bias only). */
static int64_t fan_in_a(const gd__rsage_config *cfg, int l, int r) {
    const int64_t w = gd__rsage_dim(cfg, l, cfg->schema.rel_src[r]);
    return w > 0 ? w : 1;
}

void gd__rsage_destroy(gd__rsage *m) {
    if (!m) return;
    const gd__nn_ctx *ctx = &m->ctx;
    for (int l = 0; l < GD__RSAGE_MAX_LAYERS; l++) {
        for (int t = 0; t < GD__RSAGE_MAX_TYPES; t++) gd__nn_tensor_free(ctx, &m->out[l][t]);
        for (int r = 0; r < GD__RSAGE_MAX_RELATIONS; r++) gd__nn_tensor_free(ctx, &m->agg[l][r]);
    }
    for (int t = 0; t < GD__RSAGE_MAX_TYPES; t++) {
        gd__nn_tensor_free(ctx, &m->dh[0][t]);
        gd__nn_tensor_free(ctx, &m->dh[1][t]);
    }
    for (int r = 0; r < GD__RSAGE_MAX_RELATIONS; r++) gd__nn_tensor_free(ctx, &m->dagg[r]);
    gd__nn_grouped_destroy(ctx, &m->gemm);
    gd__nn_params_free(ctx, &m->params);
    gd_free(m);
}

gd_status gd__rsage_check_config(const gd__rsage_config *cfg, const char *kind) {
    gd_status st = GD_OK;
    const gd__rsage_schema *s = &cfg->schema;
    const int T = s->num_types, R = s->num_relations, L = cfg->num_layers;
    GD_REQUIRE(T >= 1 && T <= GD__RSAGE_MAX_TYPES, GD_ERR_INVALID_ARG,
               "%s: %d node types (1 to %d)", kind, T, GD__RSAGE_MAX_TYPES);
    GD_REQUIRE(R >= 1 && R <= GD__RSAGE_MAX_RELATIONS, GD_ERR_INVALID_ARG,
               "%s: %d relations (1 to %d)", kind, R, GD__RSAGE_MAX_RELATIONS);
    GD_REQUIRE(L >= 1 && L <= GD__RSAGE_MAX_LAYERS, GD_ERR_INVALID_ARG, "%s: %d layers (1 to %d)",
               kind, L, GD__RSAGE_MAX_LAYERS);
    for (int r = 0; r < R; r++)
        GD_REQUIRE(s->rel_src[r] >= 0 && s->rel_src[r] < T && s->rel_dst[r] >= 0 &&
                       s->rel_dst[r] < T,
                   GD_ERR_INVALID_ARG,
                   "%s: relation %d goes from node type %d to node type %d, but the schema "
                   "has types 0 to %d",
                   kind, r, s->rel_src[r], s->rel_dst[r], T - 1);
    GD_REQUIRE(s->target_type >= 0 && s->target_type < T, GD_ERR_INVALID_ARG,
               "%s: target type %d, but the schema has types 0 to %d", kind, s->target_type, T - 1);
    int target_in = 0;
    for (int r = 0; r < R; r++) target_in |= s->rel_dst[r] == s->target_type;
    GD_REQUIRE(target_in, GD_ERR_INVALID_ARG,
               "%s: no relation enters the target type %d, so its logits would be constant", kind,
               s->target_type);
    for (int t = 0; t < T; t++)
        GD_REQUIRE(cfg->in_dim[t] >= 0, GD_ERR_INVALID_ARG,
                   "%s: node type %d has input width %lld (0 for no features, or positive)", kind,
                   t, (long long)cfg->in_dim[t]);
    GD_REQUIRE(cfg->num_classes > 0 && (L == 1 || cfg->hidden_dim > 0), GD_ERR_INVALID_ARG,
               "%s: hidden width %lld and %lld classes (must be positive)", kind,
               (long long)cfg->hidden_dim, (long long)cfg->num_classes);
    GD_REQUIRE(cfg->dropout >= 0.0 && cfg->dropout < 1.0, GD_ERR_INVALID_ARG,
               "%s: dropout %g is not in [0, 1)", kind, cfg->dropout);
    for (int l = 0; l <= L; l++)
        for (int t = 0; t < T; t++)
            GD_REQUIRE(cfg->max_nodes[l * T + t] >= 0, GD_ERR_INVALID_ARG,
                       "%s: max_nodes of layer %d, type %d is %lld (must be >= 0)", kind, l, t,
                       (long long)cfg->max_nodes[l * T + t]);
    for (int l = 0; l < L; l++)
        for (int r = 0; r < R; r++)
            GD_REQUIRE(cfg->max_edges[l * R + r] >= 0 && cfg->max_edges[l * R + r] <= INT32_MAX,
                       GD_ERR_INVALID_ARG,
                       "%s: max_edges of layer %d, relation %d is %lld (0 to %d)", kind, l, r,
                       (long long)cfg->max_edges[l * R + r], INT32_MAX);
fail:
    return st;
}

/*
 * The parameter layout. A model may have up to 8 x 32 relation layers of three tensors each,
 * more than the flat buffer's table holds (GD__NN_MAX_PARAMS), so the blocks share tensors:
 * each layer has one tensor per distinct fan-in, and each block ([W_l; b] and W_root of a
 * relation in R-SAGE; W_l of a relation and [W_root; b] of a type in R-GCN) is a row range of
 * the tensor of its fan-in, in relation order (then type order). The initialisation draws each
 * tensor's elements with bound 1/sqrt(fan_in), so every block gets GraphSAGE's distribution.
 * A layer has at most 2R + T distinct fan-ins in layer 0 (at most T + 1 in fact) and one above.
 */
typedef struct {
    int64_t fan[2 * GD__RSAGE_MAX_RELATIONS + GD__RSAGE_MAX_TYPES];
    int64_t rows[2 * GD__RSAGE_MAX_RELATIONS + GD__RSAGE_MAX_TYPES];
    int groups;
} param_groups;

/* A block of n rows with fan-in fan: its group and first row (tensor -1 when n is 0). */
static gd_status place(param_groups *pg, int64_t fan, int64_t n, int l, int *tensor, int64_t *row) {
    gd_status st = GD_OK;
    *tensor = -1;
    if (n == 0) return GD_OK;
    int g = 0;
    while (g < pg->groups && pg->fan[g] != fan) g++;
    if (g == pg->groups) {
        pg->fan[g] = fan;
        pg->rows[g] = 0;
        pg->groups++;
    }
    *tensor = g;
    *row = pg->rows[g];
    GD_REQUIRE(!gd__add_overflow_i64(pg->rows[g], n, &pg->rows[g]), GD_ERR_OVERFLOW,
               "R-SAGE: layer %d parameters overflow", l);
fail:
    return st;
}

static gd_status layout_params(gd__rsage *m) {
    gd_status st = GD_OK;
    const gd__rsage_config *cfg = &m->cfg;
    const int T = cfg->schema.num_types, R = cfg->schema.num_relations, L = cfg->num_layers;
    const int per_type = cfg->root_per_type;
    for (int l = 0; l < L; l++) {
        param_groups pg = {.groups = 0};
        const int64_t out = gd__rsage_dim(cfg, l + 1, 0);
        /* The groups and their rows, assigning each block its row offset as it comes. */
        for (int r = 0; r < R; r++) {
            gd__rsage_slot *s = &m->slot[l][r];
            s->used = l < L - 1 || cfg->schema.rel_dst[r] == cfg->schema.target_type;
            s->a_tensor = s->r_tensor = -1;
            if (!s->used) continue;
            const int64_t ws = gd__rsage_dim(cfg, l, cfg->schema.rel_src[r]);
            const int64_t w_root = gd__rsage_dim(cfg, l, cfg->schema.rel_dst[r]);
            /* R-GCN: W_l alone (none for a featureless source), the roots are per type. */
            GD_CHECK(place(&pg, fan_in_a(cfg, l, r), per_type ? ws : ws + 1, l, &s->a_tensor,
                           &s->a_row));
            if (!per_type) GD_CHECK(place(&pg, w_root, w_root, l, &s->r_tensor, &s->r_row));
        }
        for (int t = 0; per_type && t < T; t++) {
            gd__rsage_slot *s = &m->root[l][t];
            s->used = l < L - 1 || t == cfg->schema.target_type;
            s->a_tensor = s->r_tensor = -1;
            if (!s->used) continue;
            const int64_t w = gd__rsage_dim(cfg, l, t);
            GD_CHECK(place(&pg, w > 0 ? w : 1, w + 1, l, &s->a_tensor, &s->a_row));
        }
        /* The groups become tensors; the slots' group numbers become tensor numbers. */
        int first = -1;
        for (int g = 0; g < pg.groups; g++) {
            int index;
            GD_CHECK(gd__nn_params_add(&m->params, pg.rows[g], out, pg.fan[g], &index));
            if (g == 0) first = index;
        }
        for (int r = 0; r < R; r++) {
            gd__rsage_slot *s = &m->slot[l][r];
            if (s->a_tensor >= 0) s->a_tensor += first;
            if (s->r_tensor >= 0) s->r_tensor += first;
        }
        for (int t = 0; per_type && t < T; t++)
            if (m->root[l][t].a_tensor >= 0) m->root[l][t].a_tensor += first;
    }
fail:
    return st;
}

gd_status gd__typed_bind_inputs(const gd__rsage_config *cfg, const gd__nn_ctx *ctx,
                                const int64_t *num_nodes, const gd__nn_tensor *const *x,
                                const int64_t *const *node_ids, gd__nn_tensor *input,
                                const int64_t **ids, const char *what) {
    gd_status st = GD_OK;
    for (int t = 0; t < cfg->schema.num_types; t++) {
        const int64_t w = cfg->in_dim[t];
        const gd__nn_tensor *xt = x ? x[t] : NULL;
        if (w == 0) {
            GD_REQUIRE(!xt || xt->cols == 0, GD_ERR_INVALID_ARG,
                       "%s: node type %d has no features, but x[%d] has %lld columns", what, t,
                       t, (long long)xt->cols);
            input[t] = gd__nn_view(NULL, cfg->dtype, ctx->device, num_nodes[t], 0);
        } else {
            GD_REQUIRE(xt && xt->cols == w && xt->rows >= num_nodes[t], GD_ERR_INVALID_ARG,
                       "%s: x[%d] is %lld x %lld, expected at least %lld rows of %lld", what, t,
                       xt ? (long long)xt->rows : 0LL, xt ? (long long)xt->cols : 0LL,
                       (long long)num_nodes[t], (long long)w);
            GD_REQUIRE(xt->dtype == cfg->dtype, GD_ERR_INVALID_ARG,
                       "%s: x[%d] is %s, the model %s", what, t, gd_dtype_name(xt->dtype),
                       gd_dtype_name(cfg->dtype));
            input[t] = gd__nn_rows(xt, num_nodes[t]);
        }
        ids[t] = node_ids ? node_ids[t] : NULL;
    }
fail:
    return st;
}

gd_status gd__typed_check_backward(const gd__rsage_config *cfg, const int64_t *num_nodes,
                                   const gd__nn_tensor *dlogits, gd__nn_tensor *const *dx,
                                   const char *what) {
    gd_status st = GD_OK;
    const int T = cfg->schema.num_types, L = cfg->num_layers;
    const int64_t nt = num_nodes[L * T + cfg->schema.target_type];
    GD_REQUIRE(dlogits->rows == nt && dlogits->cols == cfg->num_classes, GD_ERR_INVALID_ARG,
               "%s: dlogits is %lld x %lld, the logits were %lld x %lld", what,
               (long long)dlogits->rows, (long long)dlogits->cols, (long long)nt,
               (long long)cfg->num_classes);
    /* The input gradients' shapes, before any work, so that a bad one leaves nothing written. */
    for (int t = 0; dx && t < T; t++)
        GD_REQUIRE(!dx[t] || cfg->in_dim[t] == 0 ||
                       (dx[t]->rows == num_nodes[t] && dx[t]->cols == cfg->in_dim[t]),
                   GD_ERR_INVALID_ARG, "%s: dx[%d] is %lld x %lld, expected %lld x %lld", what, t,
                   (long long)dx[t]->rows, (long long)dx[t]->cols, (long long)num_nodes[t],
                   (long long)cfg->in_dim[t]);
fail:
    return st;
}

gd_status gd__typed_alloc_nonempty(const gd__nn_ctx *ctx, gd_dtype dtype, int64_t rows,
                                   int64_t cols, gd__nn_tensor *out) {
    if (rows > 0 && cols > 0) return gd__nn_tensor_alloc(ctx, dtype, rows, cols, out);
    *out = gd__nn_view(NULL, dtype, ctx->device, 0, cols);
    return GD_OK;
}

gd_status gd__typed_grow(int64_t *a, int64_t rows, int64_t cols, const char *what) {
    int64_t n;
    if (gd__mul_overflow_i64(rows, cols, &n))
        return gd__error(GD_ERR_OVERFLOW, "%s: a buffer of %lld x %lld overflows", what,
                         (long long)rows, (long long)cols);
    if (n > *a) *a = n;
    return GD_OK;
}

/*
 * The grouped GEMMs' scratch for layer l (*need = the most of any layer): the products that sum
 * into a type's output after its first (forward: a mean's and a root's per relation) or into
 * its input gradient (backward: a root's per relation), at the capacities, counted generously
 * (the first writer too). Called once the layer's outputs are allocated, so no size overflows.
 */
static void grow_scratch(const gd__rsage *m, int l, int64_t *need) {
    const gd__rsage_config *cfg = &m->cfg;
    const int T = cfg->schema.num_types;
    int64_t fwd = 0, bwd = 0;
    for (int r = 0; r < cfg->schema.num_relations; r++) {
        if (!m->slot[l][r].used) continue;
        const int dst = cfg->schema.rel_dst[r];
        const int64_t nd = cfg->max_nodes[(l + 1) * T + dst];
        fwd += 2 * gd__nn_scratch_elems(nd, gd__rsage_dim(cfg, l + 1, dst));
        bwd += gd__nn_scratch_elems(nd, gd__rsage_dim(cfg, l, dst));
    }
    /* R-GCN: each type's root product, forward and backward (the relations' counted above). */
    for (int t = 0; cfg->root_per_type && t < T; t++) {
        if (!m->root[l][t].used) continue;
        const int64_t nd = cfg->max_nodes[(l + 1) * T + t];
        fwd += gd__nn_scratch_elems(nd, gd__rsage_dim(cfg, l + 1, t));
        bwd += gd__nn_scratch_elems(nd, gd__rsage_dim(cfg, l, t));
    }
    *need = gd__max64(*need, gd__max64(fwd, bwd));
}

gd_status gd__rsage_create(const gd__nn_ctx *ctx, const gd__rsage_config *cfg, uint64_t init_seed,
                           gd__rsage **out) {
    gd_status st = GD_OK;
    gd__rsage *m = NULL;
    GD_REQUIRE(ctx && ctx->be && cfg && out, GD_ERR_INVALID_ARG,
               "R-SAGE: ctx, config and out must be given");
    *out = NULL;
    const char *kind = kind_name(cfg);
    GD_CHECK(gd__rsage_check_config(cfg, kind));
    GD_REQUIRE(ctx->be->supports(cfg->dtype), GD_ERR_UNSUPPORTED,
               "%s: the %s backend has no %s ops", kind, ctx->be->name, gd_dtype_name(cfg->dtype));
    const gd__rsage_schema *s = &cfg->schema;
    const int T = s->num_types, R = s->num_relations, L = cfg->num_layers;

    m = gd_calloc(1, sizeof *m);
    GD_REQUIRE(m, GD_ERR_NO_MEMORY, "out of memory allocating an R-SAGE model");
    m->cfg = *cfg;
    m->ctx = *ctx;
    m->params.dtype = cfg->dtype;
    for (int r = 0; r < R; r++) m->has_in[s->rel_dst[r]] = 1;
    for (int t = 0; cfg->root_per_type && t < T; t++) m->has_in[t] = 1;
    GD_CHECK(layout_params(m));
    GD_CHECK(gd__nn_params_alloc(ctx, &m->params));
    GD_CHECK(gd__nn_params_init(ctx, &m->params, init_seed));

    /*
     * Activations: every type's output of every layer (a type that no relation enters still has
     * its zeros, which the next layer reads), the target's alone in the last; each relation's
     * means. Gradients: a hidden input of each type that a relation enters (the others are
     * constant), and one relation's mean at a time.
     */
    int64_t dh_cap[GD__RSAGE_MAX_TYPES] = {0}, dagg_cap[GD__RSAGE_MAX_RELATIONS] = {0};
    int64_t scratch = 0;
    for (int l = 0; l < L; l++) {
        for (int t = 0; t < T; t++) {
            const int64_t nd = cfg->max_nodes[(l + 1) * T + t];
            if (l < L - 1 || t == s->target_type)
                GD_CHECK(gd__typed_alloc_nonempty(ctx, cfg->dtype, nd, gd__rsage_dim(cfg, l + 1, t),
                                                  &m->out[l][t]));
            if (l > 0 && m->has_in[t])
                GD_CHECK(
                    gd__typed_grow(&dh_cap[t], cfg->max_nodes[l * T + t], cfg->hidden_dim, kind));
        }
        for (int r = 0; r < R; r++) {
            if (!m->slot[l][r].used) continue;
            const int64_t nd = cfg->max_nodes[(l + 1) * T + s->rel_dst[r]];
            const int64_t w = gd__rsage_dim(cfg, l, s->rel_src[r]);
            GD_CHECK(gd__typed_alloc_nonempty(ctx, cfg->dtype, nd, w, &m->agg[l][r]));
            GD_CHECK(gd__typed_grow(&dagg_cap[r], nd, w, kind));
        }
        grow_scratch(m, l, &scratch);
    }
    for (int t = 0; t < T; t++) {
        GD_CHECK(gd__typed_alloc_nonempty(ctx, cfg->dtype, 1, dh_cap[t], &m->dh[0][t]));
        GD_CHECK(gd__typed_alloc_nonempty(ctx, cfg->dtype, 1, dh_cap[t], &m->dh[1][t]));
    }
    for (int r = 0; r < R; r++)
        GD_CHECK(gd__typed_alloc_nonempty(ctx, cfg->dtype, 1, dagg_cap[r], &m->dagg[r]));
    GD_CHECK(gd__nn_grouped_create(ctx, cfg->dtype, scratch, &m->gemm));
    *out = m;
    return GD_OK;
fail:
    gd__rsage_destroy(m);
    return st;
}

/*
 * The minibatch against the schema and the capacities: node counts that fit and shrink layer by
 * layer, and blocks whose sizes are those of their relation's two types.
 */
gd_status gd__rsage_check_batch(const gd__rsage_config *cfg, const gd_block *blocks,
                                const int64_t *num_nodes, const char *kind) {
    gd_status st = GD_OK;
    const int T = cfg->schema.num_types, R = cfg->schema.num_relations, L = cfg->num_layers;
    GD_REQUIRE(blocks && num_nodes, GD_ERR_INVALID_ARG, "%s: blocks and num_nodes must be given",
               kind);
    for (int l = 0; l <= L; l++)
        for (int t = 0; t < T; t++) {
            const int64_t n = num_nodes[l * T + t], cap = cfg->max_nodes[l * T + t];
            GD_REQUIRE(n >= 0, GD_ERR_INVALID_ARG, "%s: layer %d has %lld nodes of type %d", kind,
                       l, (long long)n, t);
            GD_REQUIRE(n <= cap, GD_ERR_RANGE,
                       "%s: layer %d has %lld nodes of type %d, more than the model was "
                       "sized for (%lld)",
                       kind, l, (long long)n, t, (long long)cap);
            GD_REQUIRE(l == 0 || n <= num_nodes[(l - 1) * T + t], GD_ERR_INVALID_ARG,
                       "%s: layer %d has %lld nodes of type %d but layer %d only %lld (a "
                       "layer's nodes are a prefix of the layer below's)",
                       kind, l, (long long)n, t, l - 1, (long long)num_nodes[(l - 1) * T + t]);
        }
    for (int l = 0; l < L; l++)
        for (int r = 0; r < R; r++) {
            const gd_block *b = &blocks[l * R + r];
            const int src = cfg->schema.rel_src[r], dst = cfg->schema.rel_dst[r];
            const int64_t ns = num_nodes[l * T + src], nd = num_nodes[(l + 1) * T + dst];
            GD_REQUIRE(b->num_src == ns && b->num_dst == nd, GD_ERR_INVALID_ARG,
                       "%s: layer %d, relation %d (type %d -> %d): the block has %lld "
                       "sources and %lld destinations, but there are %lld nodes of type %d at "
                       "layer %d and %lld of type %d at layer %d",
                       kind, l, r, src, dst, (long long)b->num_src, (long long)b->num_dst,
                       (long long)ns, src, l, (long long)nd, dst, l + 1);
            GD_REQUIRE(b->num_edges >= 0 && b->num_edges <= cfg->max_edges[l * R + r],
                       b->num_edges < 0 ? GD_ERR_INVALID_ARG : GD_ERR_RANGE,
                       "%s: layer %d, relation %d has %lld edges, more than the model was "
                       "sized for (%lld)",
                       kind, l, r, (long long)b->num_edges, (long long)cfg->max_edges[l * R + r]);
            GD_REQUIRE((b->indptr || nd == 0) && (b->indices || b->num_edges == 0),
                       GD_ERR_INVALID_ARG, "%s: layer %d, relation %d: the block has no %s", kind,
                       l, r, b->indptr || nd == 0 ? "indices" : "indptr");
            GD_REQUIRE(ns > 0 || b->num_edges == 0, GD_ERR_INVALID_ARG,
                       "%s: layer %d, relation %d has %lld edges but no source nodes", kind, l, r,
                       (long long)b->num_edges);
        }
fail:
    return st;
}

/* The mean ops' view of a relation's block (rsage.h). */
void gd__rsage_bipartite(const gd_block *b, const gd__nn_tensor *rows_src, gd_block *ob,
                         gd__nn_tensor *orows) {
    *ob = *b;
    *orows = *rows_src;
    if (b->num_dst > b->num_src) {
        ob->num_src = b->num_dst;
        orows->rows = b->num_dst;
    }
}

/* Layer l's input of type t: the x rows for l = 0 (empty for a featureless type), else h^l. */
static gd__nn_tensor layer_input(const gd__rsage *m, int l, int t) {
    const int64_t n = m->num_nodes[l * m->cfg.schema.num_types + t];
    return l == 0 ? gd__nn_rows(&m->input[t], n) : gd__nn_rows(&m->out[l - 1][t], n);
}

gd_status gd__rsage_weights(const gd__rsage *m, int l, int r, int grads, gd__nn_tensor *w_l,
                            gd__nn_tensor *b, gd__nn_tensor *w_root) {
    gd_status st = GD_OK;
    GD_REQUIRE(m && w_l && b && w_root, GD_ERR_INVALID_ARG,
               "R-SAGE weights: model and outputs must be given");
    GD_REQUIRE(l >= 0 && l < m->cfg.num_layers && r >= 0 && r < m->cfg.schema.num_relations &&
                   m->slot[l][r].used,
               GD_ERR_INVALID_ARG, "R-SAGE weights: layer %d, relation %d has no parameters", l, r);
    const gd__rsage_slot *s = &m->slot[l][r];
    const int src = m->cfg.schema.rel_src[r], dst = m->cfg.schema.rel_dst[r];
    const int64_t ws = gd__rsage_dim(&m->cfg, l, src), wd = gd__rsage_dim(&m->cfg, l, dst);
    if (s->a_tensor < 0) { /* R-GCN, a featureless source: no W_l */
        const int64_t out = gd__rsage_dim(&m->cfg, l + 1, 0);
        *w_l = gd__nn_view(NULL, m->params.dtype, m->ctx.device, 0, out);
        *b = *w_root = *w_l;
        return GD_OK;
    }
    gd__nn_tensor a =
        grads ? gd__nn_grad(&m->params, s->a_tensor) : gd__nn_param(&m->params, s->a_tensor);
    *w_l = gd__nn_row_range(&a, s->a_row, s->a_row + ws);
    if (m->cfg.root_per_type) { /* R-GCN: the bias and root are the type's */
        *b = *w_root = gd__nn_row_range(&a, s->a_row + ws, s->a_row + ws);
        return GD_OK;
    }
    *b = gd__nn_row_range(&a, s->a_row + ws, s->a_row + ws + 1);
    if (s->r_tensor >= 0) {
        gd__nn_tensor rt =
            grads ? gd__nn_grad(&m->params, s->r_tensor) : gd__nn_param(&m->params, s->r_tensor);
        *w_root = gd__nn_row_range(&rt, s->r_row, s->r_row + wd);
    } else {
        *w_root = gd__nn_view(NULL, a.dtype, a.device, 0, a.cols);
    }
fail:
    return st;
}

gd_status gd__rsage_root_weights(const gd__rsage *m, int l, int t, int grads, gd__nn_tensor *w_root,
                                 gd__nn_tensor *b) {
    gd_status st = GD_OK;
    GD_REQUIRE(m && w_root && b, GD_ERR_INVALID_ARG,
               "R-GCN root weights: model and outputs must be given");
    GD_REQUIRE(m->cfg.root_per_type, GD_ERR_INVALID_ARG,
               "R-GCN root weights: an R-SAGE model has its roots per relation "
               "(gd__rsage_weights)");
    GD_REQUIRE(l >= 0 && l < m->cfg.num_layers && t >= 0 && t < m->cfg.schema.num_types &&
                   m->root[l][t].used,
               GD_ERR_INVALID_ARG, "R-GCN root weights: layer %d, type %d has no parameters", l, t);
    const gd__rsage_slot *s = &m->root[l][t];
    const int64_t w = gd__rsage_dim(&m->cfg, l, t);
    gd__nn_tensor a =
        grads ? gd__nn_grad(&m->params, s->a_tensor) : gd__nn_param(&m->params, s->a_tensor);
    *w_root = gd__nn_row_range(&a, s->a_row, s->a_row + w);
    *b = gd__nn_row_range(&a, s->a_row + w, s->a_row + w + 1);
fail:
    return st;
}

/* The dropout stream of type t's output of layer l: one per (layer, type), ids overlap across
 * types (each type numbers its nodes from 0 in GraphBolt's layout as in ours). */
static uint32_t dropout_stream(int l, int t) {
    return (uint32_t)(l * GD__RSAGE_MAX_TYPES + t);
}

gd_status gd__rsage_forward(gd__rsage *m, const gd_block *blocks, const int64_t *num_nodes,
                            const gd__nn_tensor *const *x, const int64_t *const *node_ids,
                            int train, uint64_t dropout_seed, gd__nn_tensor *logits) {
    gd_status st = GD_OK;
    GD_REQUIRE(m && logits, GD_ERR_INVALID_ARG, "R-SAGE forward: model and logits must be given");
    m->have_forward = 0;
    GD_CHECK(gd__rsage_check_batch(&m->cfg, blocks, num_nodes, kind_name(&m->cfg)));
    const gd__rsage_config *cfg = &m->cfg;
    const gd__nn_ctx *ctx = &m->ctx;
    const int T = cfg->schema.num_types, R = cfg->schema.num_relations, L = cfg->num_layers;
    const double p = cfg->dropout;
    GD_CHECK(gd__typed_bind_inputs(cfg, ctx, num_nodes, x, node_ids, m->input, m->node_ids,
                                   cfg->root_per_type ? "R-GCN forward" : "R-SAGE forward"));
    memcpy(m->blocks, blocks, sizeof *blocks * (size_t)(L * R));
    memcpy(m->num_nodes, num_nodes, sizeof *num_nodes * (size_t)((L + 1) * T));

    for (int l = 0; l < L; l++) {
        /*
         * The means of every relation, then z (+)= mean W_l + b + h_t[:nd] W_root over the
         * relations into each type, every product of the layer in one grouped call (the first
         * relation into a type writes its z, the others add to it), then ReLU and dropout.
         */
        gd__nn_linear_group g[2 * GD__RSAGE_MAX_RELATIONS + GD__RSAGE_MAX_TYPES];
        int ng = 0;
        for (int t = 0; t < T; t++) {
            if (!computes(m, l, t)) {
                /* A type that no relation enters: zeros, which the next layer reads. */
                if (l < L - 1) {
                    gd__nn_tensor z = gd__nn_rows(&m->out[l][t], m->num_nodes[(l + 1) * T + t]);
                    GD_CHECK(gd__nn_zero(ctx, &z));
                }
                continue;
            }
            /* No destinations: nothing to compute (and no rows for the GEMMs to write). */
            const int64_t nd = m->num_nodes[(l + 1) * T + t];
            if (nd == 0) continue;
            gd__nn_tensor z = gd__nn_rows(&m->out[l][t], nd);
            int accumulate = 0;
            if (cfg->root_per_type) {
                /* R-GCN: z = h_t[:nd] W_root[t] + b[t] first (bias alone without features). */
                gd__nn_tensor wr, bias, ht = layer_input(m, l, t);
                GD_CHECK(gd__rsage_root_weights(m, l, t, 0, &wr, &bias));
                gd__nn_linear_group root = {gd__nn_rows(&ht, nd), wr, bias, z, 1, 0};
                g[ng++] = root;
                accumulate = 1;
            }
            for (int r = 0; r < R; r++) {
                if (cfg->schema.rel_dst[r] != t) continue;
                const gd_block *b = &m->blocks[l * R + r];
                gd__nn_tensor hs = layer_input(m, l, cfg->schema.rel_src[r]);
                gd__nn_tensor agg = gd__nn_rows(&m->agg[l][r], nd);
                gd__nn_tensor wl, bias, wr;
                GD_CHECK(gd__rsage_weights(m, l, r, 0, &wl, &bias, &wr));
                /*
                 * The mean, then z (+)= mean W_l + b. A featureless source has an empty mean and
                 * W_l: the GEMM's inner dimension is 0, which both backends take as C = beta C,
                 * so the relation adds its bias alone.
                 */
                if (agg.cols > 0) {
                    if (b->num_edges == 0) {
                        GD_CHECK(gd__nn_zero(ctx, &agg));
                    } else {
                        gd_block ob;
                        gd__nn_tensor ohs;
                        gd__rsage_bipartite(b, &hs, &ob, &ohs);
                        GD_CHECK(gd__nn_mean_agg(ctx, &ob, &ohs, &agg));
                    }
                }
                if (bias.rows == 0 && wl.rows == 0) continue; /* R-GCN: nothing to add */
                gd__nn_linear_group lin = {agg, wl, bias, z, bias.rows > 0, accumulate};
                g[ng++] = lin;
                accumulate = 1;
                /* z += h_t[:nd] W_root, the destinations' own rows (none without features). */
                if (wr.rows > 0) {
                    gd__nn_tensor ht = layer_input(m, l, t);
                    gd__nn_linear_group root = {gd__nn_rows(&ht, nd), wr, wr, z, 0, 1};
                    g[ng++] = root;
                }
            }
        }
        GD_CHECK(gd__nn_linear_grouped(ctx, &m->gemm, ng, g));
        for (int t = 0; t < T && l < L - 1; t++) {
            const int64_t nd = m->num_nodes[(l + 1) * T + t];
            if (!computes(m, l, t) || nd == 0) continue;
            gd__nn_tensor z = gd__nn_rows(&m->out[l][t], nd);
            GD_CHECK(gd__nn_relu(ctx, &z, &z));
            if (train && p > 0)
                GD_CHECK(gd__nn_dropout(ctx, p, dropout_seed, dropout_stream(l, t), m->node_ids[t],
                                        &z, &z));
        }
    }
    m->train = train;
    m->dropout_seed = dropout_seed;
    m->have_forward = 1;
    *logits = gd__nn_rows(&m->out[L - 1][cfg->schema.target_type],
                          m->num_nodes[L * T + cfg->schema.target_type]);
fail:
    return st;
}

gd_status gd__rsage_backward(gd__rsage *m, const gd__nn_tensor *dlogits, gd__nn_tensor *const *dx) {
    gd_status st = GD_OK;
    GD_REQUIRE(m && dlogits, GD_ERR_INVALID_ARG,
               "R-SAGE backward: model and dlogits must be given");
    GD_REQUIRE(m->have_forward, GD_ERR_INVALID_ARG,
               "%s backward: no forward pass to go back through", kind_name(&m->cfg));
    const gd__rsage_config *cfg = &m->cfg;
    const gd__nn_ctx *ctx = &m->ctx;
    const int T = cfg->schema.num_types, R = cfg->schema.num_relations, L = cfg->num_layers;
    const int target = cfg->schema.target_type;
    const double p = cfg->dropout;
    GD_CHECK(gd__typed_check_backward(cfg, m->num_nodes, dlogits, dx,
                                      cfg->root_per_type ? "R-GCN backward" : "R-SAGE backward"));

    /* dz[t]: the gradient of layer l's output of type t (only the target in the last layer). */
    gd__nn_tensor dz[GD__RSAGE_MAX_TYPES];
    dz[target] = *dlogits;
    for (int l = L - 1; l >= 0; l--) {
        /* dh[t]: the gradient of layer l's input of type t, where one is wanted. */
        gd__nn_tensor dh[GD__RSAGE_MAX_TYPES];
        int want[GD__RSAGE_MAX_TYPES];
        for (int t = 0; t < T; t++) {
            const int64_t ns = m->num_nodes[l * T + t];
            if (l > 0) {
                want[t] = m->has_in[t];
                if (want[t]) dh[t] = gd__nn_shaped(&m->dh[l & 1][t], ns, cfg->hidden_dim);
            } else {
                want[t] = dx && dx[t] && cfg->in_dim[t] > 0;
                if (want[t]) dh[t] = *dx[t];
            }
            if (want[t]) GD_CHECK(gd__nn_zero(ctx, &dh[t]));
        }
        /*
         * Every product of the layer in one grouped call: for each relation into a computing
         * type, dW_l += mean^T dz, db += colsum(dz), d(mean) = dz W_l^T into the relation's own
         * dagg where wanted; dW_root += self^T dz, and dh_t[:nd] += dz W_root^T where wanted
         * (the relations into t sum there). Then each mean's gradient goes to its sources.
         */
        gd__nn_linear_grad_group g[2 * GD__RSAGE_MAX_RELATIONS + GD__RSAGE_MAX_TYPES];
        int ng = 0, to_src[GD__RSAGE_MAX_RELATIONS] = {0};
        for (int t = 0; t < T; t++) {
            const int64_t nd = m->num_nodes[(l + 1) * T + t];
            if (!computes(m, l, t) || nd == 0) continue;
            if (cfg->root_per_type) {
                /* R-GCN: dW_root[t] += self^T dz, db[t] += colsum(dz), dh_t[:nd] += dz W^T. */
                gd__nn_tensor wr, bias, dwr, db, ht = layer_input(m, l, t);
                GD_CHECK(gd__rsage_root_weights(m, l, t, 0, &wr, &bias));
                GD_CHECK(gd__rsage_root_weights(m, l, t, 1, &dwr, &db));
                const int wdx = want[t] && wr.rows > 0;
                gd__nn_tensor dself = wdx ? gd__nn_rows(&dh[t], nd) : dz[t];
                gd__nn_linear_grad_group gr = {
                    gd__nn_rows(&ht, nd), wr, dz[t], dself, dwr, db, wdx, 1, 1, 1};
                g[ng++] = gr;
            }
            for (int r = 0; r < R; r++) {
                if (cfg->schema.rel_dst[r] != t) continue;
                const int src = cfg->schema.rel_src[r];
                const gd_block *b = &m->blocks[l * R + r];
                gd__nn_tensor agg = gd__nn_rows(&m->agg[l][r], nd);
                gd__nn_tensor wl, bias, wr, dwl, db, dwr;
                GD_CHECK(gd__rsage_weights(m, l, r, 0, &wl, &bias, &wr));
                GD_CHECK(gd__rsage_weights(m, l, r, 1, &dwl, &db, &dwr));
                if (bias.rows == 0 && wl.rows == 0) continue; /* R-GCN: no parameters */
                to_src[r] = want[src] && agg.cols > 0 && b->num_edges > 0;
                gd__nn_linear_grad_group ga = {.x = agg,
                                               .w = wl,
                                               .dy = dz[t],
                                               .dx = gd__nn_shaped(&m->dagg[r], nd, agg.cols),
                                               .dw = dwl,
                                               .db = db,
                                               .want_dx = to_src[r],
                                               .has_db = bias.rows > 0, /* R-SAGE's */
                                               .accumulate_dw = 1};
                g[ng++] = ga;
                if (wr.rows > 0) {
                    gd__nn_tensor ht = layer_input(m, l, t);
                    gd__nn_tensor dself = want[t] ? gd__nn_rows(&dh[t], nd) : dz[t];
                    gd__nn_linear_grad_group gr = {
                        gd__nn_rows(&ht, nd), wr, dz[t], dself, dwr, dwr, want[t], 1, 0, 1};
                    g[ng++] = gr;
                }
            }
        }
        GD_CHECK(gd__nn_linear_backward_grouped(ctx, &m->gemm, ng, g));
        for (int r = 0; r < R; r++) {
            if (!to_src[r]) continue;
            const int src = cfg->schema.rel_src[r];
            const int64_t nd = m->num_nodes[(l + 1) * T + cfg->schema.rel_dst[r]];
            gd__nn_tensor dagg = gd__nn_shaped(&m->dagg[r], nd, m->agg[l][r].cols);
            gd_block ob;
            gd__nn_tensor odh;
            gd__rsage_bipartite(&m->blocks[l * R + r], &dh[src], &ob, &odh);
            GD_CHECK(gd__nn_mean_agg_backward(ctx, &ob, &dagg, &odh));
        }
        if (l == 0) break;
        /*
         * h^l_t = dropout(relu(z^{l-1}_t)) was computed in place, so out[l-1][t] holds h^l_t. Its
         * positive elements are exactly those that ReLU kept and dropout did not drop (the
         * dropout scale is positive), which is what the ReLU backward needs.
         */
        for (int t = 0; t < T; t++) {
            if (!want[t]) continue;
            if (m->train && p > 0)
                GD_CHECK(gd__nn_dropout_backward(ctx, p, m->dropout_seed, dropout_stream(l - 1, t),
                                                 m->node_ids[t], &dh[t], &dh[t]));
            gd__nn_tensor h = layer_input(m, l, t);
            GD_CHECK(gd__nn_relu_backward(ctx, &h, &dh[t], &dh[t]));
            dz[t] = dh[t];
        }
    }
fail:
    return st;
}

gd__nn_params *gd__rsage_params(gd__rsage *m) {
    return m ? &m->params : NULL;
}

int64_t gd__rsage_bytes(const gd__rsage_config *cfg) {
    if (!cfg || gd__rsage_check_config(cfg, kind_name(cfg)) != GD_OK) return 0;
    const gd__rsage_schema *s = &cfg->schema;
    const int T = s->num_types, R = s->num_relations, L = cfg->num_layers;
    int has_in[GD__RSAGE_MAX_TYPES] = {0};
    for (int r = 0; r < R; r++) has_in[s->rel_dst[r]] = 1;
    for (int t = 0; cfg->root_per_type && t < T; t++) has_in[t] = 1;
    /*
     * In doubles: an estimate for planning, which must not overflow on a huge config. p counts
     * parameters, a activations, d the largest hidden gradient of a type, g the means'
     * gradients (the largest of each relation), sc the grouped GEMM's scratch.
     */
    double p = 0, a = 0, d = 0, g = 0, sc = 0, gr[GD__RSAGE_MAX_RELATIONS] = {0};
    for (int l = 0; l < L; l++) {
        const double out = (double)gd__rsage_dim(cfg, l + 1, 0);
        double fwd = 0, bwd = 0; /* the grouped GEMM's scratch, as grow_scratch counts it */
        p += (2.0 * R + 1) * GD__NN_PARAM_ALIGN; /* the groups' padding, at most */
        for (int r = 0; r < R; r++) {
            if (l == L - 1 && s->rel_dst[r] != s->target_type) continue;
            const double ws = (double)gd__rsage_dim(cfg, l, s->rel_src[r]);
            const double wd = (double)gd__rsage_dim(cfg, l, s->rel_dst[r]);
            const double nd = (double)cfg->max_nodes[(l + 1) * T + s->rel_dst[r]];
            p += (cfg->root_per_type ? ws : ws + 1 + wd) * out;
            a += nd * ws;
            if (nd * ws > gr[r]) gr[r] = nd * ws;
            fwd += 2 * (nd * out + GD__NN_SCRATCH_ALIGN);
            bwd += nd * wd + GD__NN_SCRATCH_ALIGN;
        }
        for (int t = 0; t < T; t++) {
            if (cfg->root_per_type && (l < L - 1 || t == s->target_type)) {
                /* R-GCN: the type's root and bias, and its root products' scratch. */
                const double wd = (double)gd__rsage_dim(cfg, l, t);
                const double nd = (double)cfg->max_nodes[(l + 1) * T + t];
                p += (wd + 1) * out + GD__NN_PARAM_ALIGN;
                fwd += nd * out + GD__NN_SCRATCH_ALIGN;
                bwd += nd * wd + GD__NN_SCRATCH_ALIGN;
            }
            if (l < L - 1 || t == s->target_type)
                a += (double)cfg->max_nodes[(l + 1) * T + t] * out;
            if (l > 0 && has_in[t]) {
                const double n = (double)cfg->max_nodes[l * T + t] * (double)cfg->hidden_dim;
                if (n > d) d = n;
            }
        }
        if (fwd > sc) sc = fwd;
        if (bwd > sc) sc = bwd;
    }
    for (int r = 0; r < R; r++) g += gr[r];
    /*
     * Parameters, gradients and Adam's two moments; activations; two gradient buffers a type;
     * each relation's mean gradient; the grouped GEMM's scratch.
     */
    if (!gd__nn_grouped_wanted()) sc = 0; /* one product at a time needs no scratch */
    const double total = (4 * p + a + 2.0 * T * d + g + sc) * (double)gd_dtype_size(cfg->dtype);
    return total < 9.0e18 ? (int64_t)total : INT64_MAX;
}
