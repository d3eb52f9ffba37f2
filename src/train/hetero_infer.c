/*
 * Exact (layer-wise) inference of R-SAGE over a whole heterogeneous graph (docs/hetero.md):
 * the sampled evaluation draws fanout neighbours per relation, this one averages every
 * neighbour. As the homogeneous layer-wise inference (infer.c) does, it computes each layer for
 * every node of every type before the next layer, so that no neighbourhood is expanded twice:
 * L passes over the graph instead of fanout^L rows per node.
 *
 * Layer l of destination type d, for a chunk of d's nodes: for every relation r into d, the mean
 * of the chunk's in-neighbours of type r (a run of each node's CSC list) over the source type's
 * layer-l rows, then z += mean W_l[r] + b[r] + h_d W_root[r] with the model's own parameter
 * views and linear op; ReLU between layers. Layer 0 reads the dataset's feature tables (float16
 * and bfloat16 widened as the gather does); later layers read the float32 tables of the layer
 * before, n_t x hidden per type. It runs on the CPU, where the trainer's heterogeneous path
 * keeps the model.
 */
#include "io/dataset.h"
#include "nn/rsage.h"
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

typedef struct {
    const gd_dataset_t *ds;
    const int64_t *indptr, *off;
    const void *indices;
    int is32;
    gd_array_view et;
} hi_graph;

/* Node v's run of edge type r: [*a, *b) of its list. */
static void hi_run(const hi_graph *g, int64_t v, int r, int64_t *a, int64_t *b) {
    *a = gd__edge_type_lower(g->et.data, g->et.dtype, g->indptr[v], g->indptr[v + 1], r);
    *b = gd__edge_type_lower(g->et.data, g->et.dtype, *a, g->indptr[v + 1], r + 1);
}

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
            const int64_t u = (g->is32 ? (int64_t)((const int32_t *)g->indices)[e]
                                       : ((const int64_t *)g->indices)[e]) -
                              src_off;
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
    gd_array_view tables[GD_MAX_NODE_TYPES], v;
    hi_rows in[GD_MAX_NODE_TYPES], out[GD_MAX_NODE_TYPES];
    float *agg = NULL, *self = NULL;
    hi_graph g;
    memset(in, 0, sizeof in);
    memset(out, 0, sizeof out);
    GD_REQUIRE(ctx->be == &gd__nn_cpu_backend, GD_ERR_UNSUPPORTED,
               "exact inference of R-SAGE runs with the model on the CPU");
    g.ds = ds;
    GD_CHECK(gd_dataset_array(ds, GD_ARRAY_INDPTR, &v));
    g.indptr = v.data;
    GD_CHECK(gd_dataset_array(ds, GD_ARRAY_INDICES, &v));
    g.indices = v.data;
    g.is32 = v.dtype == GD_DTYPE_INT32;
    GD_CHECK(gd_dataset_node_type_offsets(ds, &v));
    g.off = v.data;
    GD_CHECK(gd_dataset_edge_types(ds, &g.et));
    int64_t widest = 1;
    for (int t = 0; t < T; t++) {
        in[t].dim = cfg->in_dim[t];
        if (cfg->in_dim[t] > 0) {
            GD_CHECK(gd_dataset_type_features(ds, t, &tables[t]));
            in[t].table = &tables[t];
        }
        widest = cfg->in_dim[t] > widest ? cfg->in_dim[t] : widest;
    }
    widest = cfg->hidden_dim > widest ? cfg->hidden_dim : widest;
    GD_ALLOC(agg, (size_t)(HI_CHUNK * widest) * sizeof *agg, "exact inference: the means");
    GD_ALLOC(self, (size_t)(HI_CHUNK * widest) * sizeof *self, "exact inference: own rows");
    for (int l = 0; l < L; l++) {
        const int last = l == L - 1;
        for (int d = 0; d < T; d++) {
            const int64_t n = g.off[d + 1] - g.off[d], od = gd__rsage_dim(cfg, l + 1, d);
            out[d].dim = od;
            if (last && d != target) continue;
            GD_ALLOC(out[d].rows, (size_t)((n > 0 ? n : 1) * od) * sizeof(float),
                     "exact inference: a layer's rows");
            memset(out[d].rows, 0, (size_t)(n * od) * sizeof(float));
            for (int64_t lo = 0; lo < n; lo += HI_CHUNK) {
                const int64_t k = n - lo < HI_CHUNK ? n - lo : HI_CHUNK;
                gd__nn_tensor z =
                    gd__nn_view(out[d].rows + lo * od, GD_DTYPE_FLOAT32, GD__NN_HOST, k, od);
                /* The chunk's own rows (layer 0 widened from the table). */
                const int64_t wd = in[d].dim;
                for (int64_t i = 0; i < k; i++)
                    for (int64_t j = 0; j < wd; j++) self[i * wd + j] = hi_at(&in[d], lo + i, j);
                gd__nn_tensor own = gd__nn_view(self, GD_DTYPE_FLOAT32, GD__NN_HOST, k, wd);
                for (int r = 0; r < R; r++) {
                    if (cfg->schema.rel_dst[r] != d || !m->slot[l][r].used) continue;
                    const int s = cfg->schema.rel_src[r];
                    gd__nn_tensor wl, b, wr;
                    GD_CHECK(gd__rsage_weights(m, l, r, 0, &wl, &b, &wr));
                    hi_mean(&g, r, g.off[d] + lo, k, g.off[s], &in[s], agg);
                    gd__nn_tensor mean =
                        gd__nn_view(agg, GD_DTYPE_FLOAT32, GD__NN_HOST, k, in[s].dim);
                    GD_CHECK(gd__nn_linear(ctx, &mean, &wl, &b, &z, 1));
                    if (wd > 0) GD_CHECK(gd__nn_linear(ctx, &own, &wr, NULL, &z, 1));
                }
                if (!last) GD_CHECK(gd__nn_relu(ctx, &z, &z));
            }
        }
        /* Layer l + 1's rows (zeros for a type no relation enters, as the model gives it). */
        for (int t = 0; t < T; t++) {
            gd_free(in[t].rows);
            in[t] = out[t];
            memset(&out[t], 0, sizeof out[t]);
        }
    }
    /* The target type's logits: each node's class. */
    {
        const int64_t n = g.off[target + 1] - g.off[target], C = cfg->num_classes;
        const float *z = in[target].rows;
        for (int64_t i = 0; i < n; i++) {
            int64_t best = 0;
            for (int64_t c = 1; c < C; c++)
                if (z[i * C + c] > z[i * C + best]) best = c;
            pred[i] = (int32_t)best;
        }
    }
fail:
    for (int t = 0; t < GD_MAX_NODE_TYPES; t++) {
        gd_free(in[t].rows);
        gd_free(out[t].rows);
    }
    gd_free(agg);
    gd_free(self);
    return st;
}
