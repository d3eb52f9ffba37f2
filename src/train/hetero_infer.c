/*
 * Exact (layer-wise) inference of the relational models over a whole heterogeneous graph
 * (docs/hetero.md): the sampled evaluation draws fanout neighbours per relation, this one uses
 * every neighbour. As the homogeneous layer-wise inference (infer.c) does, it computes each
 * layer for every node of every type before the next layer, so that no neighbourhood is expanded
 * twice: L passes over the graph instead of fanout^L rows per node. Layer 0 reads the dataset's
 * feature tables (float16 and bfloat16 widened as the gather does); later layers read the
 * float32 tables of the layer before, n_t x width per type. It runs on the CPU, where the
 * trainer's heterogeneous path keeps the model (a GPU-trained one is cloned to it first).
 *
 * R-SAGE, layer l of destination type d, for a chunk of d's nodes: for every relation r into d,
 * the mean of the chunk's in-neighbours of type r (a run of each node's CSC list) over the
 * source type's layer-l rows, then z += mean W_l[r] + b[r] + h_d W_root[r] with the model's own
 * parameter views and linear op; ReLU between layers.
 *
 * R-GAT, layer l of type d: for every relation r into d, the source type's whole table is
 * projected and scored once (p_r = h_s W_src, its att_src scores), then each chunk of d's nodes
 * becomes a bipartite block in local ids (the chunk's rows as destinations, the source type's
 * rows as sources: the CSC run of each node less the type's offset) that the model's own
 * attention ops (gd__gat_bip_softmax, gd__gat_bip_aggregate) run on, with the chunk's own
 * projection and att_dst scores: exactly what the model's forward computes on a minibatch whose
 * blocks hold every neighbour, dropout off. The relations' sums, the heads' mean of the last
 * layer, the biases and ReLU follow in the forward's order (rgat.h).
 */
#include "io/dataset.h"
#include "nn/rgat.h"
#include "train/internal.h"

#include <stdio.h>
#include <string.h>

#define HI_CHUNK 4096 /* destination nodes per step */

/* Layer-l rows of one node type: a dataset table (layer 0) or a float32 buffer. */
typedef struct {
    const gd_array_view *table; /* layer 0: the type's features (NULL: none) */
    float *rows;                /* layer > 0: n x dim */
    int64_t dim;
} hi_rows;

static float hi_at(const hi_rows *h, int64_t row, int64_t j) {
    return h->table ? gd__feature_at(h->table->data, h->table->dtype, row * h->dim + j)
                    : h->rows[row * h->dim + j];
}

/*
 * Rows [lo, lo + k) of h as a float32 view: the buffer's own rows, or a table's widened into
 * scratch (k x dim), as the gather widens them for the sampled evaluation.
 */
static gd__nn_tensor hi_chunk(const hi_rows *h, int64_t lo, int64_t k, float *scratch) {
    if (!h->table)
        return gd__nn_view(h->rows + lo * h->dim, GD_DTYPE_FLOAT32, GD__NN_HOST, k, h->dim);
    for (int64_t i = 0; i < k; i++)
        for (int64_t j = 0; j < h->dim; j++) scratch[i * h->dim + j] = hi_at(h, lo + i, j);
    return gd__nn_view(scratch, GD_DTYPE_FLOAT32, GD__NN_HOST, k, h->dim);
}

typedef struct {
    const gd_dataset_t *ds;
    const int64_t *indptr, *off;
    const void *indices;
    int is32;
    gd_array_view et;
} hi_graph;

/* The dataset's CSC, its node types' offsets and its edges' types (sorted within each list). */
static gd_status hi_open(const gd_dataset_t *ds, hi_graph *g) {
    gd__typed_csc c;
    const gd_status st = gd__dataset_typed_csc(ds, &c);
    if (st != GD_OK) return st;
    g->ds = ds;
    g->indptr = c.indptr;
    g->off = c.offsets;
    g->indices = c.indices;
    g->is32 = c.is32;
    g->et = c.etype;
    return GD_OK;
}

static int64_t hi_num(const hi_graph *g, int t) {
    return g->off[t + 1] - g->off[t];
}

static int64_t hi_src(const hi_graph *g, int64_t e) {
    return g->is32 ? (int64_t)((const int32_t *)g->indices)[e] : ((const int64_t *)g->indices)[e];
}

/* Node v's run of edge type r: [*a, *b) of its list. */
static void hi_run(const hi_graph *g, int64_t v, int r, int64_t *a, int64_t *b) {
    *a = gd__edge_type_lower(g->et.data, g->et.dtype, g->indptr[v], g->indptr[v + 1], r);
    *b = gd__edge_type_lower(g->et.data, g->et.dtype, *a, g->indptr[v + 1], r + 1);
}

/* Layer 0's rows of every type (the dataset's tables); the widest of them (at least 1). */
static gd_status hi_inputs(const gd_dataset_t *ds, const gd__rsage_config *cfg,
                           gd_array_view *tables, hi_rows *in, int64_t *widest) {
    gd_status st = GD_OK;
    *widest = 1;
    for (int t = 0; t < cfg->schema.num_types; t++) {
        in[t].dim = cfg->in_dim[t];
        if (cfg->in_dim[t] > 0) {
            GD_CHECK(gd_dataset_type_features(ds, t, &tables[t]));
            in[t].table = &tables[t];
        }
        *widest = cfg->in_dim[t] > *widest ? cfg->in_dim[t] : *widest;
    }
fail:
    return st;
}

/* A layer's float32 rows of n nodes, zeroed (the rows of a type that no relation enters). */
static gd_status hi_alloc_rows(hi_rows *h, int64_t n, int64_t dim) {
    gd_status st = GD_OK;
    h->table = NULL;
    h->dim = dim;
    GD_ALLOC(h->rows, (size_t)((n > 0 ? n : 1) * dim) * sizeof(float),
             "exact inference: a layer's rows");
    memset(h->rows, 0, (size_t)(n * dim) * sizeof(float));
fail:
    return st;
}

/* Layer l + 1's rows become the input of the next layer. */
static void hi_advance(hi_rows *in, hi_rows *out, int T) {
    for (int t = 0; t < T; t++) {
        gd_free(in[t].rows);
        in[t] = out[t];
        memset(&out[t], 0, sizeof out[t]);
    }
}

/* The target type's logits (n x C): each node's class. */
static void hi_argmax(const float *z, int64_t n, int64_t C, int32_t *pred) {
    for (int64_t i = 0; i < n; i++) {
        int64_t best = 0;
        for (int64_t c = 1; c < C; c++)
            if (z[i * C + c] > z[i * C + best]) best = c;
        pred[i] = (int32_t)best;
    }
}

static void hi_free_rows(hi_rows *in, hi_rows *out) {
    for (int t = 0; t < GD_MAX_NODE_TYPES; t++) {
        gd_free(in[t].rows);
        gd_free(out[t].rows);
    }
}

/* ------------------------------------------------------------ R-SAGE */

/*
 * The mean over relation r's in-neighbours of destination nodes [v0, v0 + n) (global ids) of
 * the source type's rows, into agg (n x src->dim).
 */
static void hi_mean(const hi_graph *g, int r, int64_t v0, int64_t n, int64_t src_off,
                    const hi_rows *src, float *agg) {
    const int64_t dim = src->dim;
#pragma omp parallel for num_threads(gd__num_threads()) schedule(dynamic, 64) if (n * dim > 65536)
    for (int64_t i = 0; i < n; i++) {
        float *out = agg + i * dim;
        memset(out, 0, (size_t)dim * sizeof *out);
        int64_t a, b;
        hi_run(g, v0 + i, r, &a, &b);
        if (b == a || dim == 0) continue;
        for (int64_t e = a; e < b; e++) {
            const int64_t u = hi_src(g, e) - src_off;
            for (int64_t j = 0; j < dim; j++) out[j] += hi_at(src, u, j);
        }
        const float inv = 1.0f / (float)(b - a);
        for (int64_t j = 0; j < dim; j++) out[j] *= inv;
    }
}

gd_status gd__htrain_exact_rsage(const gd_dataset_t *ds, gd__model *model, int32_t *pred) {
    gd_status st = GD_OK;
    gd__rsage *m = gd__model_context(model);
    const gd__rsage_config *cfg = &m->cfg;
    const gd__nn_ctx *ctx = gd__model_ctx(model);
    const int T = cfg->schema.num_types, R = cfg->schema.num_relations, L = cfg->num_layers;
    const int target = cfg->schema.target_type;
    gd_array_view tables[GD_MAX_NODE_TYPES];
    hi_rows in[GD_MAX_NODE_TYPES], out[GD_MAX_NODE_TYPES];
    float *agg = NULL, *self = NULL;
    hi_graph g;
    int64_t widest;
    memset(in, 0, sizeof in);
    memset(out, 0, sizeof out);
    GD_REQUIRE(ctx->be == &gd__nn_cpu_backend, GD_ERR_UNSUPPORTED,
               "exact inference of R-SAGE runs with the model on the CPU");
    GD_CHECK(hi_open(ds, &g));
    GD_CHECK(hi_inputs(ds, cfg, tables, in, &widest));
    widest = cfg->hidden_dim > widest ? cfg->hidden_dim : widest;
    GD_ALLOC(agg, (size_t)(HI_CHUNK * widest) * sizeof *agg, "exact inference: the means");
    GD_ALLOC(self, (size_t)(HI_CHUNK * widest) * sizeof *self, "exact inference: own rows");
    for (int l = 0; l < L; l++) {
        const int last = l == L - 1;
        for (int d = 0; d < T; d++) {
            const int64_t n = hi_num(&g, d), od = gd__rsage_dim(cfg, l + 1, d);
            out[d].dim = od;
            if (last && d != target) continue;
            GD_CHECK(hi_alloc_rows(&out[d], n, od));
            for (int64_t lo = 0; lo < n; lo += HI_CHUNK) {
                const int64_t k = n - lo < HI_CHUNK ? n - lo : HI_CHUNK;
                gd__nn_tensor z =
                    gd__nn_view(out[d].rows + lo * od, GD_DTYPE_FLOAT32, GD__NN_HOST, k, od);
                gd__nn_tensor own = hi_chunk(&in[d], lo, k, self);
                for (int r = 0; r < R; r++) {
                    if (cfg->schema.rel_dst[r] != d || !m->slot[l][r].used) continue;
                    const int s = cfg->schema.rel_src[r];
                    gd__nn_tensor wl, b, wr;
                    GD_CHECK(gd__rsage_weights(m, l, r, 0, &wl, &b, &wr));
                    hi_mean(&g, r, g.off[d] + lo, k, g.off[s], &in[s], agg);
                    gd__nn_tensor mean =
                        gd__nn_view(agg, GD_DTYPE_FLOAT32, GD__NN_HOST, k, in[s].dim);
                    GD_CHECK(gd__nn_linear(ctx, &mean, &wl, &b, &z, 1));
                    if (in[d].dim > 0) GD_CHECK(gd__nn_linear(ctx, &own, &wr, NULL, &z, 1));
                }
                if (!last) GD_CHECK(gd__nn_relu(ctx, &z, &z));
            }
        }
        /* Layer l + 1's rows (zeros for a type no relation enters, as the model gives it). */
        hi_advance(in, out, T);
    }
    hi_argmax(in[target].rows, hi_num(&g, target), cfg->num_classes, pred);
fail:
    hi_free_rows(in, out);
    gd_free(agg);
    gd_free(self);
    return st;
}

/* ------------------------------------------------------------ R-GAT */

/*
 * R-GAT's scratch: one relation's projected sources (ps: n_s x HF, ss: n_s x H), and one
 * chunk's widened layer-0 rows, destination projection and scores, block and attention
 * weights, the edge arrays grown to the largest chunk seen.
 */
typedef struct {
    const gd__nn_ctx *ctx;
    float *ps, *ss, *wide, *pd, *sd, *alpha;
    int32_t *indptr, *indices;
    int64_t cap_edges;
} hi_att;

static void hi_att_free(hi_att *a) {
    gd_free(a->ps);
    gd_free(a->ss);
    gd_free(a->wide);
    gd_free(a->pd);
    gd_free(a->sd);
    gd_free(a->alpha);
    gd_free(a->indptr);
    gd_free(a->indices);
}

/* Room for a chunk's E edges of H heads in the edge arrays. */
static gd_status hi_att_reserve(hi_att *a, int64_t E, int H) {
    gd_status st = GD_OK;
    if (E <= a->cap_edges) return GD_OK;
    gd_free(a->indices);
    gd_free(a->alpha);
    a->indices = NULL;
    a->alpha = NULL;
    a->cap_edges = 0;
    GD_ALLOC(a->indices, (size_t)E * sizeof *a->indices, "exact inference: a chunk's edges");
    GD_ALLOC(a->alpha, (size_t)(E * H) * sizeof *a->alpha,
             "exact inference: a chunk's attention weights");
    a->cap_edges = E;
fail:
    return st;
}

/*
 * Relation r's block of destination nodes [v0, v0 + k) (global ids), in local ids: destination
 * i is the chunk's row i, a source is its row in the source type's table (global id less
 * src_off), so the block's sources are the type's whole projected table.
 */
static gd_status hi_block(const hi_graph *g, int r, int64_t v0, int64_t k, int64_t src_off,
                          int64_t num_src, int H, hi_att *a, gd_block *b) {
    gd_status st = GD_OK;
    int64_t E = 0;
    a->indptr[0] = 0;
    for (int64_t i = 0; i < k; i++) {
        int64_t lo, hi;
        hi_run(g, v0 + i, r, &lo, &hi);
        E += hi - lo;
        GD_REQUIRE(E <= INT32_MAX, GD_ERR_UNSUPPORTED,
                   "exact inference of R-GAT: %lld destination nodes from node %lld have more "
                   "than %d in-edges of relation %d, more than an int32 block holds; evaluate "
                   "with sampled neighbours (exact = 0)",
                   (long long)k, (long long)v0, INT32_MAX, r);
        a->indptr[i + 1] = (int32_t)E;
    }
    GD_CHECK(hi_att_reserve(a, E, H));
    for (int64_t i = 0; i < k; i++) {
        int64_t lo, hi;
        hi_run(g, v0 + i, r, &lo, &hi);
        for (int64_t e = lo; e < hi; e++)
            a->indices[a->indptr[i] + (e - lo)] = (int32_t)(hi_src(g, e) - src_off);
    }
    b->num_dst = k;
    b->num_src = num_src;
    b->num_edges = E;
    b->indptr = a->indptr;
    b->indices = a->indices;
fail:
    return st;
}

/* h's n rows projected by w into out (n x w->cols), a chunk at a time (layer 0 is widened). */
static gd_status hi_project(const gd__nn_ctx *ctx, const hi_rows *h, int64_t n,
                            const gd__nn_tensor *w, float *wide, float *out) {
    gd_status st = GD_OK;
    for (int64_t lo = 0; lo < n; lo += HI_CHUNK) {
        const int64_t k = n - lo < HI_CHUNK ? n - lo : HI_CHUNK;
        gd__nn_tensor x = hi_chunk(h, lo, k, wide);
        gd__nn_tensor y =
            gd__nn_view(out + lo * w->cols, GD_DTYPE_FLOAT32, GD__NN_HOST, k, w->cols);
        GD_CHECK(gd__nn_linear(ctx, &x, w, NULL, &y, 0));
    }
fail:
    return st;
}

/* One side's attention scores: s = p . att per head (n x H), as the forward's node_scores. */
static gd_status hi_scores(const float *p, int64_t n, const gd__nn_tensor *att,
                           const gd__nn_tensor *other, float *s) {
    gd__nn_tensor pv =
        gd__nn_view((void *)p, GD_DTYPE_FLOAT32, GD__NN_HOST, n, att->rows * att->cols);
    gd__nn_tensor sv = gd__nn_view(s, GD_DTYPE_FLOAT32, GD__NN_HOST, n, att->rows);
    gd__nn_tensor none = gd__nn_rows(&sv, 0);
    return gd__gat_node_scores_cpu(&pv, att, other, 0, &sv, &none);
}

/*
 * Relation r of layer l into destinations [lo, lo + k) of type d: the chunk's attention over
 * every in-neighbour of r, its weighted sums of the projected sources added into sum (k x HF).
 */
static gd_status hi_attend(const hi_graph *g, const gd__rgat_rel *w, int r, int s, int d,
                           int64_t lo, int64_t k, const hi_rows *hd, hi_att *a, int H,
                           gd__nn_tensor *sum) {
    gd_status st = GD_OK;
    const int64_t ns = hi_num(g, s), HF = w->w_src.cols;
    gd_block b;
    GD_CHECK(hi_block(g, r, g->off[d] + lo, k, g->off[s], ns, H, a, &b));
    if (b.num_edges == 0) return GD_OK; /* no messages: the bias alone, as the forward */
    gd__nn_tensor sd = gd__nn_view(a->sd, GD_DTYPE_FLOAT32, GD__NN_HOST, k, H);
    if (w->w_dst.rows > 0) {
        gd__nn_tensor x = hi_chunk(hd, lo, k, a->wide);
        gd__nn_tensor pd = gd__nn_view(a->pd, GD_DTYPE_FLOAT32, GD__NN_HOST, k, HF);
        GD_CHECK(gd__nn_linear(a->ctx, &x, &w->w_dst, NULL, &pd, 0));
        GD_CHECK(hi_scores(a->pd, k, &w->att_dst, &w->att_src, a->sd));
    } else {
        memset(a->sd, 0, (size_t)(k * H) * sizeof *a->sd); /* a featureless side projects to 0 */
    }
    gd__nn_tensor ps = gd__nn_view(a->ps, GD_DTYPE_FLOAT32, GD__NN_HOST, ns, HF);
    gd__nn_tensor ss = gd__nn_view(a->ss, GD_DTYPE_FLOAT32, GD__NN_HOST, ns, H);
    gd__nn_tensor al = gd__nn_view(a->alpha, GD_DTYPE_FLOAT32, GD__NN_HOST, b.num_edges, H);
    GD_CHECK(gd__gat_bip_softmax_cpu(&b, &ss, &sd, GD__RGAT_SLOPE, &al));
    GD_CHECK(gd__gat_bip_aggregate_cpu(&b, &al, &ps, 1, sum));
fail:
    return st;
}

/*
 * Relation r of layer l into type d over every node of d: the source table projected and
 * scored once, then each chunk's attention, added into sum (n_d x HF).
 */
static gd_status hi_relation(gd__rgat *m, const hi_graph *g, int l, int r, const hi_rows *in,
                             hi_att *a, float *sum) {
    gd_status st = GD_OK;
    const int s = m->cfg.schema.rel_src[r], d = m->cfg.schema.rel_dst[r], H = m->heads;
    const int64_t ns = hi_num(g, s), nd = hi_num(g, d);
    gd__rgat_rel w;
    /* A featureless source projects to 0: zero messages (rgat.c's active()). */
    if (in[s].dim == 0) return GD_OK;
    GD_CHECK(gd__rgat_weights(m, l, r, 0, &w));
    const int64_t HF = w.w_src.cols;
    GD_ALLOC(a->ps, (size_t)((ns > 0 ? ns : 1) * HF) * sizeof *a->ps,
             "exact inference: a relation's projected sources");
    GD_ALLOC(a->ss, (size_t)((ns > 0 ? ns : 1) * H) * sizeof *a->ss,
             "exact inference: a relation's source scores");
    GD_CHECK(hi_project(a->ctx, &in[s], ns, &w.w_src, a->wide, a->ps));
    GD_CHECK(hi_scores(a->ps, ns, &w.att_src, &w.att_dst, a->ss));
    for (int64_t lo = 0; lo < nd; lo += HI_CHUNK) {
        const int64_t k = nd - lo < HI_CHUNK ? nd - lo : HI_CHUNK;
        gd__nn_tensor z = gd__nn_view(sum + lo * HF, GD_DTYPE_FLOAT32, GD__NN_HOST, k, HF);
        GD_CHECK(hi_attend(g, &w, r, s, d, lo, k, &in[d], a, H, &z));
    }
fail:
    gd_free(a->ps);
    gd_free(a->ss);
    a->ps = a->ss = NULL;
    return st;
}

/*
 * Layer l of type d into out (n_d x width, zeroed): every relation's sums (into out itself in a
 * hidden layer, into sum, n_d x H C, before the heads' mean of the last), then per chunk the
 * heads' mean, each relation's bias and ReLU, in the forward's order.
 */
static gd_status hi_rgat_type(gd__rgat *m, const hi_graph *g, int l, int d, const hi_rows *in,
                              hi_att *a, float *sum, hi_rows *out) {
    gd_status st = GD_OK;
    const gd__rsage_config *cfg = &m->cfg;
    const int last = l == cfg->num_layers - 1, H = m->heads;
    const int64_t n = hi_num(g, d), od = out->dim, sd = last ? H * od : od;
    float *acc = last ? sum : out->rows;
    if (last) memset(sum, 0, (size_t)(n * sd) * sizeof *sum);
    for (int r = 0; r < cfg->schema.num_relations; r++)
        if (cfg->schema.rel_dst[r] == d) GD_CHECK(hi_relation(m, g, l, r, in, a, acc));
    for (int64_t lo = 0; lo < n; lo += HI_CHUNK) {
        const int64_t k = n - lo < HI_CHUNK ? n - lo : HI_CHUNK;
        gd__nn_tensor z = gd__nn_view(out->rows + lo * od, GD_DTYPE_FLOAT32, GD__NN_HOST, k, od);
        if (last) {
            gd__nn_tensor s = gd__nn_view(sum + lo * sd, GD_DTYPE_FLOAT32, GD__NN_HOST, k, sd);
            GD_CHECK(gd__gat_head_mean_cpu(&s, H, &z));
        }
        for (int r = 0; r < cfg->schema.num_relations; r++) {
            if (cfg->schema.rel_dst[r] != d) continue;
            gd__rgat_rel w;
            GD_CHECK(gd__rgat_weights(m, l, r, 0, &w));
            GD_CHECK(a->ctx->be->add_bias(a->ctx, &z, &w.bias));
        }
        if (!last) GD_CHECK(gd__nn_relu(a->ctx, &z, &z));
    }
fail:
    return st;
}

/* The attention's blocks index a type's rows in int32: every type must fit. */
static gd_status hi_check_int32(const hi_graph *g, int T) {
    gd_status st = GD_OK;
    for (int t = 0; t < T; t++)
        GD_REQUIRE(hi_num(g, t) <= INT32_MAX, GD_ERR_UNSUPPORTED,
                   "exact inference of R-GAT: node type %d has %lld nodes, more than the %d an "
                   "int32 attention block indexes; evaluate with sampled neighbours (exact = 0)",
                   t, (long long)hi_num(g, t), INT32_MAX);
fail:
    return st;
}

gd_status gd__htrain_exact_rgat(const gd_dataset_t *ds, gd__model *model, int32_t *pred,
                                float *logits) {
    gd_status st = GD_OK;
    gd__rgat *m = gd__model_context(model);
    const gd__rsage_config *cfg = &m->cfg;
    const int T = cfg->schema.num_types, L = cfg->num_layers, H = m->heads;
    const int target = cfg->schema.target_type;
    gd_array_view tables[GD_MAX_NODE_TYPES];
    hi_rows in[GD_MAX_NODE_TYPES], out[GD_MAX_NODE_TYPES];
    hi_att a;
    float *sum = NULL;
    hi_graph g;
    int64_t widest;
    memset(in, 0, sizeof in);
    memset(out, 0, sizeof out);
    memset(&a, 0, sizeof a);
    a.ctx = gd__model_ctx(model);
    GD_REQUIRE(a.ctx->be == &gd__nn_cpu_backend, GD_ERR_UNSUPPORTED,
               "exact inference of R-GAT runs with the model on the CPU");
    GD_CHECK(hi_open(ds, &g));
    GD_CHECK(hi_check_int32(&g, T));
    GD_CHECK(hi_inputs(ds, cfg, tables, in, &widest));
    const int64_t HF =
        (int64_t)H * (cfg->hidden_dim > cfg->num_classes ? cfg->hidden_dim : cfg->num_classes);
    widest = HF > widest ? HF : widest;
    GD_ALLOC(a.wide, (size_t)(HI_CHUNK * widest) * sizeof *a.wide, "exact inference: own rows");
    GD_ALLOC(a.pd, (size_t)(HI_CHUNK * HF) * sizeof *a.pd, "exact inference: a chunk's projection");
    GD_ALLOC(a.sd, (size_t)(HI_CHUNK * H) * sizeof *a.sd, "exact inference: a chunk's scores");
    GD_ALLOC(a.indptr, (size_t)(HI_CHUNK + 1) * sizeof *a.indptr, "exact inference: a block");
    const int64_t nt = hi_num(&g, target);
    GD_ALLOC(sum, (size_t)((nt > 0 ? nt : 1) * H * cfg->num_classes) * sizeof *sum,
             "exact inference: the last layer's heads");
    for (int l = 0; l < L; l++) {
        for (int d = 0; d < T; d++) {
            if (l == L - 1 && d != target) continue;
            GD_CHECK(hi_alloc_rows(&out[d], hi_num(&g, d), gd__rgat_dim(m, l + 1, d)));
            GD_CHECK(hi_rgat_type(m, &g, l, d, in, &a, sum, &out[d]));
        }
        hi_advance(in, out, T);
    }
    hi_argmax(in[target].rows, nt, cfg->num_classes, pred);
    if (logits) memcpy(logits, in[target].rows, (size_t)(nt * cfg->num_classes) * sizeof *logits);
fail:
    hi_free_rows(in, out);
    hi_att_free(&a);
    gd_free(sum);
    return st;
}
