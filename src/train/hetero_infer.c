/*
 * Exact (layer-wise) inference of the relational models over a whole heterogeneous graph
 * (docs/hetero.md): the sampled evaluation draws fanout neighbours per relation, this one uses
 * every neighbour. As the homogeneous layer-wise inference (infer.c) does, it computes each
 * layer for every node of every type before the next layer, so that no neighbourhood is expanded
 * twice: L passes over the graph instead of fanout^L rows per node. It runs on the model's
 * backend, the CPU or the model's GPU, with the model's own backend-agnostic ops, one code path
 * for both: the CPU run is the reference of the GPU's (tests/test_rgat_exact.c).
 *
 * Tables (infer_table.h). Layer l of type t reads h^l_t: layer 0 the type's feature table (a
 * float32 table as it is, a float16 or bfloat16 one widened once into a float32 host copy with
 * the gather's conversion), later layers a float32 table of n_t rows, one of two sets used in
 * turn (layer l reads one and writes the other); the last layer's logits are never stored
 * whole, each chunk's become predictions at once. On a GPU the tables are placed by the memory
 * budget: the chunk scratch first (and R-GAT's projection and accumulator), then the hidden
 * tables, then the feature tables, each in GPU memory while it fits and otherwise in pinned
 * host memory, which the kernels read zero-copy and which a chunk's own rows and outputs reach
 * by one DMA copy.
 *
 * Blocks. Per layer, destination type d and chunk of d's nodes, relation r's block is built on
 * the host in local ids (the chunk's rows as destinations, the source type's whole table as
 * sources: each node's CSC run of r less the source type's offset) in one of two pinned staging
 * buffers used in turn and copied to the GPU, so the host builds the next block while the GPU
 * computes with the last (an event says when a buffer may be rewritten).
 *
 * R-SAGE, layer l of type d, per chunk: for every relation r into d, the mean op over the
 * block of the source type's rows, then z += mean W_l[r] + b[r] + h_d W_root[r] with the
 * model's own parameter views and linear op; ReLU between layers.
 *
 * R-GAT, layer l of type d: for every relation r into d, the source type's whole table is
 * projected and scored once (p_r = h_s W_src, its att_src scores), then each chunk's block runs
 * the model's attention ops (bipartite softmax and aggregation) with the chunk's own projection
 * and att_dst scores, its weighted sums added into the type's accumulator: exactly what the
 * model's forward computes on a minibatch whose blocks hold every neighbour, dropout off. Per
 * chunk the heads' mean of the last layer, the relations' biases and ReLU follow in the
 * forward's order (rgat.h).
 */
#include "feature/widen.h"
#include "io/dataset.h"
#include "nn/rgat.h"
#include "train/infer_table.h"
#include "train/internal.h"
#ifdef GD_WITH_CUDA
#include "core/cuda.h"
#endif

#include <stdio.h>
#include <string.h>

/* Destination nodes per chunk: on the CPU; on a GPU at most (halved to fit the budget). */
#define HI_CHUNK_CPU 4096
#define HI_CHUNK_GPU 16384
#define HI_CHUNK_MIN 256

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


/* ------------------------------------------------------------ state */

typedef struct {
    const gd__nn_ctx *ctx;
    int gpu, threads, rgat;
    int T, R, L, H, target;
    const gd__rsage_config *cfg;
    gd__rsage *rs;
    gd__rgat *ra;
    hi_graph g;
    /* Tables: [0] the features, [1] and [2] the hidden sets, each of one table per type. */
    gd__infer_table tab[3][GD_MAX_NODE_TYPES];
    gd_host_tensor_t *widened[GD_MAX_NODE_TYPES];
    int64_t K;         /* destination nodes per chunk */
    int64_t max_edges; /* the most edges of one relation in one chunk */
    int64_t max_in, max_out, max_n;
    /* Scratch on the backend: a chunk's own rows (GPU, pinned tables), output, means. */
    gd__nn_tensor self, zbuf, agg;
    /* R-GAT: one relation's projected sources and scores, a chunk's projection, scores and
     * attention weights, and one type's sums (its hidden table itself where that is direct). */
    int64_t hf; /* the widest projection: H x max(hidden, classes) */
    gd__nn_tensor ps, ss, pd, sd, alpha, acc;
    gd__infer_stage blk[2];
    int64_t blocks; /* blocks built, to take the stages in turn */
    float *logits_host; /* GPU: a chunk's logits (pinned) */
    int64_t device_bytes, scratch; /* GPU: all it allocated, the scratch of it */
} hi_state;

/* Layer l's width of type t (0 for a featureless type in layer 0). */
static int64_t hi_dim(const hi_state *s, int l, int t) {
    return s->rgat ? gd__rgat_dim(s->ra, l, t) : gd__rsage_dim(s->cfg, l, t);
}

/* Which table set layer l reads and which it writes (-1: the logits, not stored). */
static int hi_in_set(int l) {
    return l == 0 ? 0 : 1 + ((l - 1) & 1);
}
static int hi_out_set(const hi_state *s, int l) {
    return l == s->L - 1 ? -1 : 1 + (l & 1);
}

static int hi_has_slot(const hi_state *s, int l, int r) {
    return s->rgat ? s->ra->slot[l][r].used : s->rs->slot[l][r].used;
}

/* The blocks index a type's rows, and a chunk's edges, with int32. */
static gd_status hi_check_int32(const hi_state *s) {
    gd_status st = GD_OK;
    for (int t = 0; t < s->T; t++)
        GD_REQUIRE(hi_num(&s->g, t) <= INT32_MAX, GD_ERR_UNSUPPORTED,
                   "exact inference: node type %d has %lld nodes, more than the %d an int32 "
                   "block indexes; evaluate with sampled neighbours (exact = 0)",
                   t, (long long)hi_num(&s->g, t), INT32_MAX);
fail:
    return st;
}

/* The most edges of one relation into one chunk of K destinations (blocks are sized by it). */
static gd_status hi_max_edges(hi_state *s) {
    gd_status st = GD_OK;
    s->max_edges = 0;
    for (int r = 0; r < s->R; r++) {
        const int d = s->cfg->schema.rel_dst[r];
        const int64_t n = hi_num(&s->g, d);
        for (int64_t lo = 0; lo < n; lo += s->K) {
            const int64_t k = gd__min64(s->K, n - lo);
            int64_t E = 0;
            for (int64_t i = 0; i < k; i++) {
                int64_t a, b;
                hi_run(&s->g, s->g.off[d] + lo + i, r, &a, &b);
                E += b - a;
            }
            GD_REQUIRE(E <= INT32_MAX, GD_ERR_UNSUPPORTED,
                       "exact inference: %lld destination nodes from node %lld have more than %d "
                       "in-edges of relation %d, more than an int32 block holds; evaluate with "
                       "sampled neighbours (exact = 0)",
                       (long long)k, (long long)(s->g.off[d] + lo), INT32_MAX, r);
            s->max_edges = gd__max64(s->max_edges, E);
        }
    }
fail:
    return st;
}

/* The scratch's bytes for chunks of K destinations (GPU: what comes out of the budget first). */
static int64_t hi_scratch_bytes(const hi_state *s, int64_t K) {
    int64_t f = K * (2 * s->max_in + s->max_out); /* own rows, means, outputs */
    if (s->rgat) f += K * (s->hf + s->H) + s->max_edges * s->H;
    return f * (int64_t)sizeof(float) + 2 * (int64_t)gd__infer_block_bytes(K, s->max_edges) +
           K * s->cfg->num_classes * (int64_t)sizeof(float);
}

/* R-GAT's whole-type buffers: one source type's projection and scores, one type's sums. */
static int64_t hi_rgat_bytes(const hi_state *s) {
    if (!s->rgat) return 0;
    return (s->max_n * (s->hf + s->H) + s->max_n * s->hf) * (int64_t)sizeof(float);
}

static gd_status hi_widths(hi_state *s) {
    gd_status st = GD_OK;
    s->max_in = s->max_out = s->max_n = 1;
    for (int t = 0; t < s->T; t++) {
        s->max_n = gd__max64(s->max_n, hi_num(&s->g, t));
        for (int l = 0; l < s->L; l++) {
            s->max_in = gd__max64(s->max_in, hi_dim(s, l, t));
            s->max_out = gd__max64(s->max_out, hi_dim(s, l + 1, t));
        }
    }
    s->hf = s->H * gd__max64(s->cfg->hidden_dim, s->cfg->num_classes);
    return st;
}

/*
 * Type t's layer-0 table: the dataset's float32 rows, or a half table widened into a host copy;
 * on a GPU copied into GPU memory when fits, else pinned (given: the trainer's registration).
 */
static gd_status hi_feature_table(hi_state *s, const gd__hinfer_options *o, int t, int fits) {
    gd_status st = GD_OK;
    gd_array_view f;
    const int64_t n = hi_num(&s->g, t), dim = s->cfg->in_dim[t];
    gd__infer_table *tb = &s->tab[0][t];
    memset(tb, 0, sizeof *tb);
    if (dim == 0) return GD_OK; /* featureless: projects to 0 (the models' rule) */
    GD_CHECK(gd_dataset_type_features(s->g.ds, t, &f));
    GD_REQUIRE(f.ndim == 2 && f.shape[0] == n && f.shape[1] == dim &&
                   (f.dtype == GD_DTYPE_FLOAT32 || gd__widen_dtype(f.dtype)),
               GD_ERR_FORMAT,
               "exact inference: node type %d's features are %s of %lld x %lld; the model reads "
               "%lld x %lld float32, float16 or bfloat16",
               t, gd_dtype_name(f.dtype), (long long)f.shape[0],
               (long long)(f.ndim > 1 ? f.shape[1] : 0), (long long)n, (long long)dim);
    const float *rows = f.data;
    gd_host_tensor_t *given = NULL;
    if (f.dtype != GD_DTYPE_FLOAT32) {
        GD_CHECK(gd__infer_widen(&f, s->threads, &s->widened[t]));
        rows = gd_host_tensor_data(s->widened[t]);
    } else if (o && o->features[t] && gd_host_tensor_is_registered(o->features[t]) &&
               gd_host_tensor_dtype(o->features[t]) == GD_DTYPE_FLOAT32 &&
               gd_host_tensor_rows(o->features[t]) == n && gd_host_tensor_cols(o->features[t]) == dim) {
        given = o->features[t]; /* CUDA refuses to register the trainer's table again */
    }
    if (!s->gpu) {
        GD_CHECK(gd__infer_table_cpu(s->ctx, n, dim, rows, tb));
    } else if (fits) {
        GD_CHECK(gd__infer_table_device(s->ctx, n, dim, rows, tb));
    } else {
        char what[64];
        snprintf(what, sizeof what, "node type %d's features", t);
        GD_CHECK(gd__infer_table_host(s->ctx, n, dim, rows, given, what, tb));
    }
fail:
    return st;
}

/* A hidden table of type t (set i): host memory, GPU memory (fits) or pinned host memory. */
static gd_status hi_hidden_table(hi_state *s, int i, int t, int64_t cols, int fits) {
    const int64_t n = hi_num(&s->g, t);
    gd__infer_table *tb = &s->tab[i][t];
    if (!s->gpu) return gd__infer_table_cpu(s->ctx, n, cols, NULL, tb);
    if (fits) return gd__infer_table_device(s->ctx, n, cols, NULL, tb);
    return gd__infer_table_host(s->ctx, n, cols, NULL, NULL, "a hidden activation table", tb);
}

/*
 * Every table and buffer, before the layer loop. On a GPU the budget (o->memory_budget, else
 * half of the free memory) takes the scratch (chunks halved until it fits half the budget),
 * R-GAT's whole-type buffers, then the hidden tables and the feature tables while they fit.
 */
static gd_status hi_setup(hi_state *s, const gd__hinfer_options *o) {
    gd_status st = GD_OK;
    const gd__nn_ctx *ctx = s->ctx;
    int64_t budget = INT64_MAX, used = 0;
    s->K = s->gpu ? HI_CHUNK_GPU : HI_CHUNK_CPU;
    if (o && o->chunk_rows > 0) s->K = o->chunk_rows;
    s->K = gd__max64(1, gd__min64(s->K, s->max_n));
    GD_CHECK(hi_max_edges(s));
    if (s->gpu) {
        budget = o ? o->memory_budget : 0;
        if (budget <= 0) {
            gd_device_info info;
            GD_CHECK(gd_device_info_get(ctx->device, &info));
            budget = info.free_memory / 2;
        }
        while (s->K > HI_CHUNK_MIN && !(o && o->chunk_rows > 0) &&
               hi_scratch_bytes(s, s->K) > budget / 2) {
            s->K /= 2;
            GD_CHECK(hi_max_edges(s));
        }
        used = s->scratch = hi_scratch_bytes(s, s->K) + hi_rgat_bytes(s);
        GD_REQUIRE(used <= budget, GD_ERR_NO_MEMORY,
                   "exact inference: chunks of %lld nodes%s take %lld bytes, more than the GPU "
                   "memory budget of %lld; raise the budget (--gpu-mem-budget) or evaluate with "
                   "sampled neighbours (exact = 0)",
                   (long long)s->K,
                   s->rgat ? " and R-GAT's projection and sums of a whole node type" : "",
                   (long long)used, (long long)budget);
    }
    /* The hidden tables, then the features: in GPU memory while they fit. */
    for (int i = 1; i <= gd__min64(s->L - 1, 2); i++)
        for (int t = 0; t < s->T; t++) {
            const int64_t cols = hi_dim(s, 1, t), b = hi_num(&s->g, t) * cols * 4;
            const int fits = used + b <= budget;
            GD_CHECK(hi_hidden_table(s, i, t, cols, fits));
            if (fits) used += b;
        }
    for (int t = 0; t < s->T; t++) {
        const int64_t b = hi_num(&s->g, t) * s->cfg->in_dim[t] * 4;
        const int fits = used + b <= budget;
        GD_CHECK(hi_feature_table(s, o, t, fits));
        if (fits) used += b;
    }
    /* The scratch. */
    const int64_t K = s->K;
    if (s->gpu) GD_CHECK(gd__nn_tensor_alloc(ctx, GD_DTYPE_FLOAT32, K, s->max_in, &s->self));
    GD_CHECK(gd__nn_tensor_alloc(ctx, GD_DTYPE_FLOAT32, K, s->max_out, &s->zbuf));
    GD_CHECK(gd__nn_tensor_alloc(ctx, GD_DTYPE_FLOAT32, K, s->max_in, &s->agg));
    for (int i = 0; i < 2; i++)
        GD_CHECK(gd__infer_stage_create(ctx, gd__infer_block_bytes(K, s->max_edges),
                                        "the exact inference's blocks",
                                        "lower the GPU memory budget", &s->blk[i]));
    if (s->rgat) {
        GD_CHECK(gd__nn_tensor_alloc(ctx, GD_DTYPE_FLOAT32, s->max_n, s->hf, &s->ps));
        GD_CHECK(gd__nn_tensor_alloc(ctx, GD_DTYPE_FLOAT32, s->max_n, s->H, &s->ss));
        GD_CHECK(gd__nn_tensor_alloc(ctx, GD_DTYPE_FLOAT32, K, s->hf, &s->pd));
        GD_CHECK(gd__nn_tensor_alloc(ctx, GD_DTYPE_FLOAT32, K, s->H, &s->sd));
        GD_CHECK(gd__nn_tensor_alloc(ctx, GD_DTYPE_FLOAT32, gd__max64(1, s->max_edges), s->H,
                                     &s->alpha));
        GD_CHECK(gd__nn_tensor_alloc(ctx, GD_DTYPE_FLOAT32, s->max_n, s->hf, &s->acc));
    }
#ifdef GD_WITH_CUDA
    if (s->gpu)
        GD_CHECK(gd__cuda_pinned_alloc((void **)&s->logits_host,
                                       (size_t)(K * s->cfg->num_classes) * sizeof(float),
                                       "the exact inference's logits",
                                       "lower the GPU memory budget"));
#endif
    if (s->gpu) s->device_bytes = used;
fail:
    return st;
}

static void hi_release(hi_state *s) {
    const gd__nn_ctx *ctx = s->ctx;
    if (!ctx) return;
#ifdef GD_WITH_CUDA
    /* Work may still be queued after a failure: let it finish before its buffers go. */
    if (s->gpu) (void)gd__cuda_stream_sync(ctx->stream);
    if (s->logits_host) gd__cuda_host_free(s->logits_host);
#endif
    for (int i = 0; i < 3; i++)
        for (int t = 0; t < GD_MAX_NODE_TYPES; t++) gd__infer_table_release(ctx, &s->tab[i][t]);
    /* After the tables: one may have pinned a widened copy in place. */
    for (int t = 0; t < GD_MAX_NODE_TYPES; t++) gd_host_tensor_destroy(s->widened[t]);
    gd__nn_tensor *const bufs[] = {&s->self, &s->zbuf, &s->agg, &s->ps, &s->ss,
                                   &s->pd,   &s->sd,   &s->alpha, &s->acc};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) gd__nn_tensor_free(ctx, bufs[i]);
    for (int i = 0; i < 2; i++) gd__infer_stage_release(ctx, &s->blk[i]);
}

/*
 * Relation r's block of destinations [v0, v0 + k) (global ids), in local ids: destination i is
 * the chunk's row i, a source its row in the source type's table (global id less src_off), so
 * the block's sources are the type's whole table (num_src rows). Built in the next stage.
 */
static gd_status hi_block(hi_state *s, int r, int64_t v0, int64_t k, int64_t src_off,
                          int64_t num_src, gd_block *b) {
    gd_status st = GD_OK;
    const gd__infer_stage *stage = &s->blk[s->blocks++ & 1];
    int32_t *ip = stage->host, *ix = ip + s->K + 1;
    int64_t E = 0;
    GD_CHECK(gd__infer_stage_wait(stage));
    ip[0] = 0;
    for (int64_t i = 0; i < k; i++) {
        int64_t lo, hi;
        hi_run(&s->g, v0 + i, r, &lo, &hi);
        for (int64_t e = lo; e < hi; e++) ix[E++] = (int32_t)(hi_src(&s->g, e) - src_off);
        ip[i + 1] = (int32_t)E;
    }
    GD_CHECK(gd__infer_stage_block(s->ctx, stage, s->K, k, num_src, E, b));
fail:
    return st;
}

/*
 * The last layer's chunk z of type d (the target) from lo: its predictions and logits; a hidden
 * layer's: copied into the output table unless it was written there.
 */
static gd_status hi_chunk_done(hi_state *s, int l, int d, int64_t lo, const gd__nn_tensor *z,
                               int32_t *pred, float *logits) {
    const int os = hi_out_set(s, l);
    if (os >= 0) return gd__infer_table_commit(s->ctx, &s->tab[os][d], lo, z);
    return gd__infer_take_logits(s->ctx, z, s->logits_host, pred + lo,
                                 logits ? logits + lo * z->cols : NULL, s->threads);
}

/* ------------------------------------------------------------ R-SAGE */

/* Layer l of type d, chunk by chunk (rsage.c's forward with every neighbour). */
static gd_status hi_rsage_type(hi_state *s, int l, int d, int32_t *pred, float *logits) {
    gd_status st = GD_OK;
    const gd__nn_ctx *ctx = s->ctx;
    const gd__infer_table *in = s->tab[hi_in_set(l)];
    const int os = hi_out_set(s, l), last = os < 0;
    const int64_t n = hi_num(&s->g, d), od = hi_dim(s, l + 1, d);
    for (int64_t lo = 0; lo < n; lo += s->K) {
        const int64_t k = gd__min64(s->K, n - lo);
        gd__nn_tensor z = last ? gd__nn_shaped(&s->zbuf, k, od)
                               : gd__infer_table_out(ctx, &s->tab[os][d], lo, k, s->zbuf.data);
        gd__nn_tensor own = gd__nn_view(NULL, GD_DTYPE_FLOAT32, ctx->device, k, 0);
        if (in[d].cols > 0) GD_CHECK(gd__infer_table_rows(ctx, &in[d], lo, k, s->self.data, &own));
        if (s->cfg->root_per_type) {
            /* R-GCN: z = own W_root[d] + b[d] (the bias alone for a featureless type). */
            gd__nn_tensor wr, b;
            GD_CHECK(gd__rsage_root_weights(s->rs, l, d, 0, &wr, &b));
            GD_CHECK(gd__nn_linear(ctx, &own, &wr, &b, &z, 0));
        } else {
            GD_CHECK(gd__nn_zero(ctx, &z));
        }
        for (int r = 0; r < s->R; r++) {
            if (s->cfg->schema.rel_dst[r] != d || !hi_has_slot(s, l, r)) continue;
            const int src = s->cfg->schema.rel_src[r];
            const gd__infer_table *hs = &in[src];
            gd__nn_tensor wl, b, wr;
            GD_CHECK(gd__rsage_weights(s->rs, l, r, 0, &wl, &b, &wr));
            if (wl.rows == 0 && b.rows == 0) continue; /* R-GCN, a featureless source */
            gd__nn_tensor mean = gd__nn_shaped(&s->agg, k, hs->cols);
            if (hs->cols > 0) {
                gd_block blk;
                GD_CHECK(hi_block(s, r, s->g.off[d] + lo, k, s->g.off[src], hs->rows, &blk));
                if (blk.num_edges == 0) {
                    GD_CHECK(gd__nn_zero(ctx, &mean));
                } else {
                    gd_block ob;
                    gd__nn_tensor orows,
                        rows = gd__nn_view(hs->dev, GD_DTYPE_FLOAT32, ctx->device, hs->rows,
                                           hs->cols);
                    gd__rsage_bipartite(&blk, &rows, &ob, &orows);
                    GD_CHECK(gd__nn_mean_agg(ctx, &ob, &orows, &mean));
                }
            }
            /* A featureless source: no mean columns, the relation adds its bias alone (R-SAGE;
             * R-GCN's relations have no bias). */
            GD_CHECK(gd__nn_linear(ctx, &mean, &wl, b.rows > 0 ? &b : NULL, &z, 1));
            if (wr.rows > 0) GD_CHECK(gd__nn_linear(ctx, &own, &wr, NULL, &z, 1));
        }
        if (!last) GD_CHECK(gd__nn_relu(ctx, &z, &z));
        GD_CHECK(hi_chunk_done(s, l, d, lo, &z, pred, logits));
    }
fail:
    return st;
}

/* ------------------------------------------------------------ R-GAT */

/* One side's attention scores: s = p . att per head (n x H), as the forward's node_scores. */
static gd_status hi_scores(const gd__nn_ctx *ctx, const gd__nn_tensor *p, const gd__nn_tensor *att,
                           const gd__nn_tensor *other, gd__nn_tensor *sc) {
    gd__nn_tensor none = gd__nn_rows(sc, 0);
    return GAT_OP(node_scores, ctx, p, att, other, 0, sc, &none);
}

/*
 * Relation r of layer l into type d over every node of d: the source table projected and
 * scored once, then each chunk's attention, its weighted sums added into acc (n_d x HF).
 */
static gd_status hi_relation(hi_state *s, int l, int r, const gd__infer_table *in,
                             const gd__nn_tensor *acc) {
    gd_status st = GD_OK;
    const gd__nn_ctx *ctx = s->ctx;
    const int src = s->cfg->schema.rel_src[r], d = s->cfg->schema.rel_dst[r];
    const int64_t ns = hi_num(&s->g, src), nd = hi_num(&s->g, d), H = s->H;
    gd__rgat_rel w;
    /* A featureless source projects to 0: zero messages (rgat.c's active()). */
    if (in[src].cols == 0) return GD_OK;
    GD_CHECK(gd__rgat_weights(s->ra, l, r, 0, &w));
    const int64_t HF = w.w_src.cols;
    gd__nn_tensor ps = gd__nn_shaped(&s->ps, ns, HF), ss = gd__nn_shaped(&s->ss, ns, H);
    for (int64_t lo = 0; lo < ns; lo += s->K) {
        const int64_t k = gd__min64(s->K, ns - lo);
        gd__nn_tensor x, p = gd__nn_row_range(&ps, lo, lo + k), sc = gd__nn_row_range(&ss, lo, lo + k);
        GD_CHECK(gd__infer_table_rows(ctx, &in[src], lo, k, s->self.data, &x));
        GD_CHECK(gd__nn_linear(ctx, &x, &w.w_src, NULL, &p, 0));
        GD_CHECK(hi_scores(ctx, &p, &w.att_src, &w.att_dst, &sc));
    }
    for (int64_t lo = 0; lo < nd; lo += s->K) {
        const int64_t k = gd__min64(s->K, nd - lo);
        gd_block b;
        GD_CHECK(hi_block(s, r, s->g.off[d] + lo, k, s->g.off[src], ns, &b));
        if (b.num_edges == 0) continue; /* no messages: the bias alone, as the forward */
        gd__nn_tensor sd = gd__nn_shaped(&s->sd, k, H);
        if (w.w_dst.rows > 0) {
            gd__nn_tensor x, pd = gd__nn_shaped(&s->pd, k, HF);
            GD_CHECK(gd__infer_table_rows(ctx, &in[d], lo, k, s->self.data, &x));
            GD_CHECK(gd__nn_linear(ctx, &x, &w.w_dst, NULL, &pd, 0));
            GD_CHECK(hi_scores(ctx, &pd, &w.att_dst, &w.att_src, &sd));
        } else {
            GD_CHECK(gd__nn_zero(ctx, &sd)); /* a featureless side projects to 0 */
        }
        gd__nn_tensor al = gd__nn_shaped(&s->alpha, b.num_edges, H);
        gd__nn_tensor sum = gd__nn_row_range(acc, lo, lo + k);
        GD_CHECK(GAT_OP(bip_softmax, ctx, &b, &ss, &sd, GD__RGAT_SLOPE, &al));
        GD_CHECK(GAT_OP(bip_aggregate, ctx, &b, &al, &ps, 1, &sum));
    }
fail:
    return st;
}

/*
 * Layer l of type d: every relation's sums into the accumulator (a hidden layer's output table
 * itself where it is direct), then per chunk the heads' mean (last layer), each relation's bias
 * and ReLU, in the forward's order.
 */
static gd_status hi_rgat_type(hi_state *s, int l, int d, int32_t *pred, float *logits) {
    gd_status st = GD_OK;
    const gd__nn_ctx *ctx = s->ctx;
    const gd__infer_table *in = s->tab[hi_in_set(l)];
    const int os = hi_out_set(s, l), last = os < 0;
    const int64_t n = hi_num(&s->g, d), od = hi_dim(s, l + 1, d), sw = last ? s->H * od : od;
    const gd__infer_table *out = last ? NULL : &s->tab[os][d];
    const int in_place = out && out->direct;
    gd__nn_tensor acc = in_place ? gd__nn_view(out->dev, GD_DTYPE_FLOAT32, ctx->device, n, od)
                                 : gd__nn_shaped(&s->acc, n, sw);
    GD_CHECK(gd__nn_zero(ctx, &acc));
    for (int r = 0; r < s->R; r++)
        if (s->cfg->schema.rel_dst[r] == d && hi_has_slot(s, l, r))
            GD_CHECK(hi_relation(s, l, r, in, &acc));
    for (int64_t lo = 0; lo < n; lo += s->K) {
        const int64_t k = gd__min64(s->K, n - lo);
        gd__nn_tensor z = gd__nn_row_range(&acc, lo, lo + k);
        if (last) {
            gd__nn_tensor sum = z;
            z = gd__nn_shaped(&s->zbuf, k, od);
            GD_CHECK(GAT_OP(head_mean, ctx, &sum, s->H, &z));
        }
        for (int r = 0; r < s->R; r++) {
            if (s->cfg->schema.rel_dst[r] != d || !hi_has_slot(s, l, r)) continue;
            gd__rgat_rel w;
            GD_CHECK(gd__rgat_weights(s->ra, l, r, 0, &w));
            GD_CHECK(ctx->be->add_bias(ctx, &z, &w.bias));
        }
        if (!last) GD_CHECK(gd__nn_relu(ctx, &z, &z));
        GD_CHECK(hi_chunk_done(s, l, d, lo, &z, pred, logits));
    }
fail:
    return st;
}

/* ------------------------------------------------------------ driver */

static gd_status hi_infer(const gd_dataset_t *ds, gd__model *model, int rgat,
                          const gd__hinfer_options *o, int32_t *pred, float *logits) {
    gd_status st = GD_OK;
    hi_state s;
    memset(&s, 0, sizeof s);
    const gd__nn_ctx *ctx = NULL;
#ifdef GD_WITH_CUDA
    int prev_device = -1, entered = 0;
#endif
    GD_REQUIRE(ds && model && pred, GD_ERR_INVALID_ARG,
               "exact inference: dataset, model and prediction buffer must be given");
    if (o) GD_CHECK(gd__threads_check(o->threads, "exact inference"));
    ctx = gd__model_ctx(model);
    s.rgat = rgat;
    if (rgat) {
        s.ra = gd__model_context(model);
        s.cfg = &s.ra->cfg;
        s.H = s.ra->heads;
    } else {
        s.rs = gd__model_context(model);
        s.cfg = &s.rs->cfg;
        s.H = 1;
    }
    GD_REQUIRE(s.cfg->dtype == GD_DTYPE_FLOAT32, GD_ERR_UNSUPPORTED,
               "exact inference: the model is %s; exact inference runs float32 models",
               gd_dtype_name(s.cfg->dtype));
    s.T = s.cfg->schema.num_types;
    s.R = s.cfg->schema.num_relations;
    s.L = s.cfg->num_layers;
    s.target = s.cfg->schema.target_type;
    s.threads = o && o->threads > 0 ? o->threads : gd__num_threads();
    s.gpu = ctx->device != GD__NN_HOST;
    GD_CHECK(hi_open(ds, &s.g));
    GD_CHECK(hi_check_int32(&s));
    GD_CHECK(hi_widths(&s));
    if (s.gpu) {
#ifdef GD_WITH_CUDA
        GD_CHECK(gd__cuda_enter_device(ctx->device, &prev_device));
        entered = 1;
#else
        GD_REQUIRE(0, GD_ERR_NO_DEVICE,
                   "exact inference: the model is on a GPU in a build without CUDA");
#endif
    }
    s.ctx = ctx;
    GD_CHECK(hi_setup(&s, o));
    int on_gpu = 0, pinned = 0;
    for (int i = 0; i < 3; i++)
        for (int t = 0; t < s.T; t++) {
            on_gpu += s.tab[i][t].on_device;
            pinned += s.tab[i][t].cols > 0 && !s.tab[i][t].direct;
        }
    GD_INFO("exact inference of %s: %d layers, %d node types, %lld nodes per chunk%s",
            rgat                   ? "R-GAT"
            : s.cfg->root_per_type ? "R-GCN"
                                   : "R-SAGE",
            s.L, s.T, (long long)s.K,
            s.gpu ? (pinned ? ", some tables read from pinned host memory"
                            : ", every table in GPU memory")
                  : "");
    for (int l = 0; l < s.L; l++)
        for (int d = 0; d < s.T; d++) {
            if (l == s.L - 1 && d != s.target) continue;
            if (rgat)
                GD_CHECK(hi_rgat_type(&s, l, d, pred, logits));
            else
                GD_CHECK(hi_rsage_type(&s, l, d, pred, logits));
        }
    GD_CHECK(gd__nn_check_errors(ctx));
    if (o && o->stats) {
        o->stats->chunk_rows = s.K;
        o->stats->device_bytes = s.device_bytes;
        o->stats->tables_on_device = on_gpu;
        o->stats->tables_pinned = pinned;
        o->stats->scratch_bytes = s.scratch;
    }
fail:
    hi_release(&s);
#ifdef GD_WITH_CUDA
    if (entered) gd__cuda_leave_device(ctx->device, prev_device);
#endif
    return st;
}

gd_status gd__htrain_exact_rsage(const gd_dataset_t *ds, gd__model *model,
                                 const gd__hinfer_options *o, int32_t *pred, float *logits) {
    return hi_infer(ds, model, 0, o, pred, logits);
}

gd_status gd__htrain_exact_rgat(const gd_dataset_t *ds, gd__model *model,
                                const gd__hinfer_options *o, int32_t *pred, float *logits) {
    return hi_infer(ds, model, 1, o, pred, logits);
}
