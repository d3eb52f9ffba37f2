/*
 * Layer-wise full-neighbour inference (infer.h): exact predictions of a model whose layers
 * combine a mean aggregate with the self row (model.h) for every node of a dataset, on the
 * model's backend.
 *
 * The activations of a layer form a table of num_nodes rows: h_0 is the dataset's features,
 * h_1, h_2, ... two hidden tables used in turn (layer l reads one and writes the other), and
 * the last layer's logits are never stored whole: each chunk's logits become predictions at
 * once. For each layer the nodes are walked in chunks cut by rows (self + neighbour rows, see
 * next_chunk); for a chunk [lo, hi) the aggregation reads the in-neighbours' rows of h_l by
 * global id straight from the table, the self rows are h_l[lo:hi), and gd__model_layer_combine
 * writes h_{l+1}[lo:hi).
 *
 * On the CPU every table is host memory and the self rows and the output are views into the
 * tables: nothing is copied. On a GPU the tables are placed by the memory budget: the chunk
 * buffers first, then the hidden tables, then the features in GPU memory while they fit; the
 * rest stays in pinned host memory, which the aggregation kernel reads zero-copy and which the
 * self rows and the outputs reach by one contiguous DMA copy per chunk. Each chunk's slice of
 * the CSC (indptr[lo..hi] and its indices) is copied by CPU threads into a pinned staging
 * buffer and from there to the GPU; an event tells the CPU when the previous slice has left
 * the staging buffer, so the CPU prepares chunk k + 1 while the GPU computes chunk k. The last
 * layer waits for each chunk's logits to take their argmax on the host.
 */
#include "train/infer.h"

#include "train/infer_table.h"
#include "train/plan.h"

#include "feature/widen.h"
#include "graph/internal.h"
#ifdef GD_WITH_CUDA
#include "core/cuda.h"
#endif

#include <math.h>
#include <string.h>

/* The CPU's chunk capacity (a GPU's is planned: plan.h, gd__plan_infer). */
#define INFER_CPU_CHUNK_ROWS (INT64_C(1) << 20)

typedef struct {
    gd__model *m;
    int64_t dims[GD__MODEL_MAX_LAYERS + 1]; /* the model's layer widths (gd__model_dim) */
    int64_t hidden;                         /* the width of its hidden tables */
    const gd__nn_ctx *ctx;
    int gpu;
    int threads;
    int num_layers;
    int64_t n, num_edges;
    const int64_t *indptr;
    const char *indices; /* int32 or int64 */
    gd_dtype index_dtype;
    size_t index_size;
    int64_t cap;                  /* rows per chunk */
    int64_t chunks, pieces;       /* per layer */
    int64_t max_dst, max_window;  /* the largest chunk and edge window */
    gd__infer_table tab[3];       /* features, hidden A, hidden B: num_nodes rows each */
    gd__nn_tensor agg, self, out; /* flat chunk buffers (self: GPU only) */
    int64_t self_cols, out_cols;
    /* GPU: the CSC slice staging (indptr slice, then indices) and the logits of a chunk. */
    gd__infer_stage stage;
    size_t stage_index_offset;
    float *logits_host;
    int64_t device_bytes;
    /* A half table's features widened to float32 (owned; page-aligned for pinning), else NULL. */
    gd_host_tensor_t *widened_t;
    float *widened;
    /*
     * Attention layers (GAT): each layer's projection of every node and its scores, a chunk's
     * softmax weights and weighted sums, and the chunk's block (int32 CSC over global ids,
     * staged: built on the host, copied to the GPU).
     */
    int attention;
    int64_t pcols, heads, max_degree;
    gd__nn_tensor p_all, ssrc_all, sdst_all, alpha, attn_agg;
    gd__infer_stage blk;
} infer_state;

/*
 * The chunk that starts at lo: the longest run [lo, hi) whose self rows plus neighbour rows fit
 * in cap, and at least the node lo (a node whose list alone does not fit is aggregated in
 * pieces, see windows()).
 */
static int64_t next_chunk(const int64_t *indptr, int64_t n, int64_t lo, int64_t cap) {
    int64_t hi = lo + 1;
    while (hi < n && (hi + 1 - lo) + (indptr[hi + 1] - indptr[lo]) <= cap) hi++;
    return hi;
}

/* The indices of edges from e on (NULL for a graph without edges). */
static const void *indices_at(const infer_state *s, int64_t e) {
    return s->indices ? s->indices + (size_t)e * s->index_size : NULL;
}

/* The edge window of a chunk (edges per piece) and its number of pieces. */
static void windows(const infer_state *s, int64_t lo, int64_t hi, int64_t *window,
                    int64_t *pieces) {
    const int64_t edges = s->indptr[hi] - s->indptr[lo];
    if ((hi - lo) + edges <= s->cap) {
        *window = edges;
        *pieces = 1;
    } else { /* one node (next_chunk) with more than cap - 1 in-neighbours */
        *window = s->cap - 1;
        *pieces = (edges + *window - 1) / *window;
    }
}

/* Walk the chunks once to size the buffers: chunk count, pieces, largest chunk and window. */
static void plan(infer_state *s) {
    s->chunks = s->pieces = s->max_dst = s->max_window = 0;
    for (int64_t lo = 0, hi; lo < s->n; lo = hi) {
        int64_t w, p;
        hi = next_chunk(s->indptr, s->n, lo, s->cap);
        windows(s, lo, hi, &w, &p);
        s->chunks++;
        s->pieces += p;
        s->max_dst = gd__max64(s->max_dst, hi - lo);
        s->max_window = gd__max64(s->max_window, w);
    }
}

void gd__infer_agg_cpu(const float *table, int64_t cols, const int64_t *indptr, const void *indices,
                       gd_dtype index_dtype, int64_t num_dst, int64_t e_begin, int64_t e_end,
                       int first, int last, float *agg, int threads) {
    const int wide = index_dtype == GD_DTYPE_INT64;
#pragma omp parallel for schedule(dynamic, 64)                                                     \
    num_threads(threads) if (num_dst > 64 && (e_end - e_begin + num_dst) * cols > 65536)
    for (int64_t d = 0; d < num_dst; d++) {
        float *o = agg + d * cols;
        const int64_t g0 = indptr[d], g1 = indptr[d + 1];
        const int64_t a = g0 > e_begin ? g0 : e_begin, b = g1 < e_end ? g1 : e_end;
        if (first)
            for (int64_t j = 0; j < cols; j++) o[j] = 0.0f;
        /* Edge by edge, every column in edge order: the order of the nn mean aggregation. */
        for (int64_t e = a; e < b; e++) {
            const int64_t r = wide ? ((const int64_t *)indices)[e - e_begin]
                                   : (int64_t)((const int32_t *)indices)[e - e_begin];
            const float *x = table + r * cols;
            for (int64_t j = 0; j < cols; j++) o[j] += x[j];
        }
        if (last) {
            const float inv = g1 > g0 ? (float)(1.0 / (double)(g1 - g0)) : 0.0f;
            for (int64_t j = 0; j < cols; j++) o[j] *= inv;
        }
    }
}

void gd__infer_argmax(const float *logits, int64_t rows, int64_t cols, int32_t *pred, int threads) {
#pragma omp parallel for schedule(static) num_threads(threads) if (rows * cols > 262144)
    for (int64_t i = 0; i < rows; i++) {
        const float *z = logits + i * cols;
        int64_t arg = 0;
        for (int64_t j = 1; j < cols; j++)
            if (z[j] > z[arg]) arg = j;
        pred[i] = (int32_t)arg;
    }
}

/* --------------------------------------------------------------- setup */

static void state_release(infer_state *s) {
    if (!s->ctx) return;
#ifdef GD_WITH_CUDA
    /* Work may still be queued after a failure: let it finish before its buffers go. */
    if (s->gpu) (void)gd__cuda_stream_sync(s->ctx->stream);
#endif
    for (int i = 0; i < 3; i++) gd__infer_table_release(s->ctx, &s->tab[i]);
    gd_host_tensor_destroy(s->widened_t); /* after the tables: one may have pinned it */
    gd__nn_tensor_free(s->ctx, &s->agg);
    gd__nn_tensor_free(s->ctx, &s->self);
    gd__nn_tensor_free(s->ctx, &s->out);
    gd__nn_tensor *const attn[] = {&s->p_all, &s->ssrc_all, &s->sdst_all, &s->alpha, &s->attn_agg};
    for (size_t i = 0; i < sizeof attn / sizeof attn[0]; i++) gd__nn_tensor_free(s->ctx, attn[i]);
    gd__infer_stage_release(s->ctx, &s->blk);
    gd__infer_stage_release(s->ctx, &s->stage);
#ifdef GD_WITH_CUDA
    if (s->logits_host) gd__cuda_host_free(s->logits_host);
#endif
}

/* The arrays of ds that inference reads, checked against the model. */
static gd_status load_dataset(infer_state *s, const gd_dataset_t *ds, const float **features) {
    gd_status st = GD_OK;
    gd_array_view ip, ix, fv;
    s->n = gd_dataset_num_nodes(ds);
    GD_CHECK(gd_dataset_array(ds, GD_ARRAY_INDPTR, &ip));
    GD_CHECK(gd_dataset_array(ds, GD_ARRAY_INDICES, &ix));
    st = gd_dataset_array(ds, GD_ARRAY_FEATURES, &fv);
    if (st == GD_ERR_NOT_FOUND) {
        gd__error(st, "inference: dataset '%s' has no node features", gd_dataset_name(ds));
        goto fail;
    }
    GD_CHECK(st);
    GD_REQUIRE(ip.dtype == GD_DTYPE_INT64 && ip.shape[0] == s->n + 1, GD_ERR_FORMAT,
               "inference: dataset '%s' has indptr of %s x %lld, expected int64 x %lld",
               gd_dataset_name(ds), gd_dtype_name(ip.dtype), (long long)ip.shape[0],
               (long long)(s->n + 1));
    GD_REQUIRE(fv.dtype == GD_DTYPE_FLOAT32 || gd__widen_dtype(fv.dtype), GD_ERR_UNSUPPORTED,
               "inference: dataset '%s' has %s features; inference reads float32, float16 or "
               "bfloat16 features (regenerate or convert with --dtype)",
               gd_dataset_name(ds), gd_dtype_name(fv.dtype));
    GD_REQUIRE(fv.ndim == 2 && fv.shape[0] == s->n && fv.shape[1] == s->dims[0], GD_ERR_INVALID_ARG,
               "inference: dataset '%s' has %lld x %lld features but the model reads %lld "
               "features of %lld nodes",
               gd_dataset_name(ds), (long long)fv.shape[0], (long long)fv.shape[1],
               (long long)s->dims[0], (long long)s->n);
    s->num_edges = ix.shape[0];
    s->indptr = ip.data;
    s->indices = ix.data;
    s->index_dtype = ix.dtype;
    /* Every index is read by global id, so the graph must be sound before the first read. */
    st = gd_csc_validate(s->n, s->indptr, s->indices, s->index_dtype, s->num_edges);
    if (st != GD_OK) {
        gd__error_context(st, "inference on dataset '%s'", gd_dataset_name(ds));
        goto fail;
    }
    s->index_size = gd_dtype_size(s->index_dtype);
    *features = fv.data;
    /* A half table is widened once into a float32 copy (infer_table.h). */
    if (gd__widen_dtype(fv.dtype)) {
        GD_CHECK(gd__infer_widen(&fv, s->threads, &s->widened_t));
        s->widened = gd_host_tensor_data(s->widened_t);
        *features = s->widened;
    }
fail:
    return st;
}

/* Widest input and output of any layer. */
static void widths(const infer_state *s, int64_t *in_max, int64_t *out_max) {
    *in_max = *out_max = 1;
    for (int l = 0; l < s->num_layers; l++) {
        *in_max = gd__max64(*in_max, s->dims[l]);
        *out_max = gd__max64(*out_max, s->dims[l + 1]);
    }
}

/* Which table layer l reads and which it writes (-1: the logits, not stored). */
static int in_table(int l) {
    return l == 0 ? 0 : 1 + ((l - 1) & 1);
}
static int out_table(const infer_state *s, int l) {
    return l == s->num_layers - 1 ? -1 : 1 + (l & 1);
}

static gd_status setup_cpu(infer_state *s, const float *features, const gd__infer_options *o) {
    gd_status st = GD_OK;
    int64_t in_max, out_max;
    widths(s, &in_max, &out_max);
    s->cap = o->max_chunk_rows > 0 ? o->max_chunk_rows : INFER_CPU_CHUNK_ROWS;
    plan(s);
    GD_CHECK(gd__infer_table_cpu(s->ctx, s->n, s->dims[0], features, &s->tab[0]));
    for (int i = 1; i <= gd__min64(s->num_layers - 1, 2); i++)
        GD_CHECK(gd__infer_table_cpu(s->ctx, s->n, s->hidden, NULL, &s->tab[i]));
    GD_CHECK(gd__nn_tensor_alloc(s->ctx, GD_DTYPE_FLOAT32, 1, s->max_dst * in_max, &s->agg));
    s->out_cols = s->dims[s->num_layers];
    GD_CHECK(gd__nn_tensor_alloc(s->ctx, GD_DTYPE_FLOAT32, 1, s->max_dst * s->out_cols, &s->out));
fail:
    return st;
}

#ifdef GD_WITH_CUDA
/* A table in GPU memory (features: with a copy of them), counted in the device bytes. */
static gd_status table_on_device(infer_state *s, gd__infer_table *t, int64_t cols,
                                 const float *init) {
    s->device_bytes += s->n * cols * (int64_t)sizeof(float);
    return gd__infer_table_device(s->ctx, s->n, cols, init, t);
}

/*
 * Place the tables and size the chunk buffers within the budget. One row of chunk capacity
 * costs at most one staged index and indptr entry plus an aggregate row, a self row and an
 * output row (a chunk has at most cap destination nodes and cap edges).
 */
static gd_status setup_gpu(infer_state *s, const float *features, const gd__infer_options *o) {
    gd_status st = GD_OK;
    const int L = s->num_layers;
    int64_t in_max, out_max;
    widths(s, &in_max, &out_max);
    gd__infer_plan_input pi;
    gd__infer_plan ip;
    memset(&pi, 0, sizeof pi);
    pi.num_nodes = s->n;
    pi.num_edges = s->num_edges;
    pi.num_layers = s->num_layers;
    for (int l = 0; l <= s->num_layers; l++) pi.dims[l] = s->dims[l];
    pi.index_bytes = (int64_t)s->index_size;
    pi.max_chunk_rows = o->max_chunk_rows;
    pi.budget = o->memory_budget;
    if (pi.budget <= 0) {
        gd_device_info info;
        GD_CHECK(gd_device_info_get(s->ctx->device, &info));
        pi.budget = info.free_memory / 2;
    }
    if (s->attention) {
        /* The projected tables of the attention layers come out of the budget first. */
        const int64_t attn = gd__infer_attention_bytes(s->n, s->pcols, s->heads);
        GD_REQUIRE(attn < pi.budget, GD_ERR_NO_MEMORY,
                   "inference: a GAT's projection of every node (%lld x %lld floats, %.1f GiB) "
                   "does not fit the memory budget of %.1f GiB; raise it, or evaluate by "
                   "sampled inference",
                   (long long)s->n, (long long)(s->pcols + 2 * s->heads), attn / 1073741824.0,
                   pi.budget / 1073741824.0);
        pi.budget -= attn;
    }
    GD_CHECK(gd__plan_infer(&pi, &ip));
    for (int i = 1; i <= ip.hidden_tables; i++) {
        if (ip.hidden_on_gpu[i - 1])
            GD_CHECK(table_on_device(s, &s->tab[i], s->hidden, NULL));
        else
            GD_CHECK(gd__infer_table_host(s->ctx, s->n, s->hidden, NULL, NULL,
                                          "a hidden activation table", &s->tab[i]));
    }
    if (ip.features_on_gpu) {
        GD_CHECK(table_on_device(s, &s->tab[0], s->dims[0], features));
    } else {
        /* A registered half table is not what inference reads: its widened copy is pinned. */
        gd_host_tensor_t *given = s->widened ? NULL : o->features;
        if (given) {
            GD_REQUIRE(gd_host_tensor_is_registered(given) && given->reg_device == s->ctx->device &&
                           gd_host_tensor_dtype(given) == GD_DTYPE_FLOAT32 &&
                           gd_host_tensor_rows(given) == s->n &&
                           gd_host_tensor_cols(given) == s->dims[0],
                       GD_ERR_INVALID_ARG,
                       "inference: the given feature tensor must hold the dataset's %lld x %lld "
                       "float32 features and be registered with GPU %d (the model's)",
                       (long long)s->n, (long long)s->dims[0], s->ctx->device);
        }
        GD_CHECK(gd__infer_table_host(s->ctx, s->n, s->dims[0], features, given, "the features",
                                      &s->tab[0]));
    }
    s->cap = ip.chunk_rows;
    plan(s);

    /* The chunk buffers, each as wide as the widest layer that needs it. */
    s->self_cols = s->out_cols = 0;
    for (int l = 0; l < L; l++) {
        if (!s->tab[in_table(l)].on_device) s->self_cols = gd__max64(s->self_cols, s->dims[l]);
        const int ot = out_table(s, l);
        if (ot < 0 || !s->tab[ot].on_device) s->out_cols = gd__max64(s->out_cols, s->dims[l + 1]);
    }
    GD_CHECK(gd__nn_tensor_alloc(s->ctx, GD_DTYPE_FLOAT32, 1, s->max_dst * in_max, &s->agg));
    GD_CHECK(gd__nn_tensor_alloc(s->ctx, GD_DTYPE_FLOAT32, 1, s->max_dst * s->self_cols, &s->self));
    GD_CHECK(gd__nn_tensor_alloc(s->ctx, GD_DTYPE_FLOAT32, 1, s->max_dst * s->out_cols, &s->out));
    s->device_bytes += s->max_dst * (in_max + s->self_cols + s->out_cols) * (int64_t)sizeof(float);
    s->stage_index_offset = (size_t)(s->max_dst + 1) * sizeof(int64_t);
    const size_t stage_bytes = s->stage_index_offset + (size_t)s->max_window * s->index_size;
    GD_CHECK(gd__infer_stage_create(s->ctx, stage_bytes, "the inference's graph staging",
                                    "lower max_chunk_rows", &s->stage));
    s->device_bytes += (int64_t)stage_bytes;
    GD_CHECK(gd__cuda_pinned_alloc((void **)&s->logits_host,
                                   (size_t)(s->max_dst * s->dims[L]) * sizeof(float),
                                   "the inference's logits staging", "lower max_chunk_rows"));
fail:
    return st;
}

/*
 * Copy the CSC slice of a piece into the GPU's staging buffer: indptr[lo..hi] and the indices
 * of edges [wb, we). The pinned buffer is rewritten only once the previous copy out of it has
 * finished (the event); the device buffer is rewritten in stream order, after the kernels that
 * read the previous slice.
 */
static gd_status stage(infer_state *s, int64_t lo, int64_t hi, int64_t wb, int64_t we) {
    gd_status st = GD_OK;
    const size_t ip_bytes = (size_t)(hi - lo + 1) * sizeof(int64_t);
    const size_t ix_bytes = (size_t)(we - wb) * s->index_size;
    char *host = s->stage.host;
    GD_CHECK(gd__infer_stage_wait(&s->stage));
    gd__infer_par_copy(host, s->indptr + lo, ip_bytes, s->threads);
    if (ix_bytes)
        gd__infer_par_copy(host + s->stage_index_offset, indices_at(s, wb), ix_bytes, s->threads);
    GD_CHECK(gd__infer_stage_send(s->ctx, &s->stage, 0, ip_bytes));
    GD_CHECK(gd__infer_stage_send(s->ctx, &s->stage, s->stage_index_offset, ix_bytes));
    GD_CHECK(gd__infer_stage_sent(s->ctx, &s->stage));
fail:
    return st;
}
#endif

/* ---------------------------------------------------------------- run */

/*
 * Where layer l writes the rows of destinations [lo, lo + nd): straight into its output table
 * (CPU, or a table in GPU memory), else the chunk's output buffer (a pinned host table, and the
 * last layer's logits).
 */
static gd__nn_tensor chunk_out(const infer_state *s, int l, int64_t lo, int64_t nd) {
    const int ot = out_table(s, l);
    if (ot >= 0) return gd__infer_table_out(s->ctx, &s->tab[ot], lo, nd, s->out.data);
    return gd__nn_view(s->out.data, GD_DTYPE_FLOAT32, s->ctx->device, nd, s->dims[l + 1]);
}

/*
 * Layer l has written out (chunk_out) for the destinations from lo: copy it to a pinned host
 * table, or, for the last layer, take the predictions (and the logits) on the host.
 */
static gd_status chunk_done(infer_state *s, int l, int64_t lo, const gd__nn_tensor *out,
                            int32_t *pred, float *logits) {
    const int ot = out_table(s, l);
    if (ot >= 0) return gd__infer_table_commit(s->ctx, &s->tab[ot], lo, out);
    return gd__infer_take_logits(s->ctx, out, s->logits_host, pred + lo,
                                 logits ? logits + lo * out->cols : NULL, s->threads);
}

static gd_status run_chunk(infer_state *s, int l, int64_t lo, int64_t hi, int32_t *pred,
                           float *logits) {
    gd_status st = GD_OK;
    const gd__nn_ctx *ctx = s->ctx;
    const int L = s->num_layers;
    const gd__infer_table *in = &s->tab[in_table(l)];
    const int64_t nd = hi - lo, din = in->cols;
    const int64_t e0 = s->indptr[lo], e1 = s->indptr[hi];
    int64_t window, pieces;
    windows(s, lo, hi, &window, &pieces);

    for (int64_t p = 0; p < pieces; p++) {
        const int64_t wb = e0 + p * window, we = p == pieces - 1 ? e1 : wb + window;
        if (s->gpu) {
#ifdef GD_WITH_CUDA
            const char *dev = s->stage.dev;
            GD_CHECK(stage(s, lo, hi, wb, we));
            GD_CHECK(gd__infer_cuda_agg(ctx->stream, in->dev, din, (const int64_t *)dev,
                                        dev + s->stage_index_offset, s->index_dtype, nd, wb, we,
                                        p == 0, p == pieces - 1, s->agg.data));
#endif
        } else {
            gd__infer_agg_cpu(in->dev, din, s->indptr + lo, indices_at(s, wb), s->index_dtype, nd,
                              wb, we, p == 0, p == pieces - 1, s->agg.data, s->threads);
        }
    }

    gd__nn_tensor agg = gd__nn_view(s->agg.data, GD_DTYPE_FLOAT32, ctx->device, nd, din);
    gd__nn_tensor self, out;
    GD_CHECK(gd__infer_table_rows(ctx, in, lo, nd, s->self.data, &self));
    out = chunk_out(s, l, lo, nd);
    GD_CHECK(gd__model_layer_combine(s->m, l, &agg, &self, &out, l < L - 1));
    GD_CHECK(chunk_done(s, l, lo, &out, pred, logits));
fail:
    return st;
}

/* ------------------------------------------------------ attention layers */

int64_t gd__infer_attention_bytes(int64_t num_nodes, int64_t proj_cols, int64_t heads) {
    return num_nodes * (proj_cols + 2 * heads) * (int64_t)sizeof(float);
}

/*
 * Attention layers (GAT) need every edge of a destination in one chunk (the softmax runs over
 * them all), 32-bit node ids (gd_block), and per layer the projection of every node and its
 * scores: n x (projection + 2 x heads) floats, in the model's memory, and the chunk scratch.
 */
static gd_status attn_setup(infer_state *s) {
    gd_status st = GD_OK;
    const gd__nn_ctx *ctx = s->ctx;
    GD_REQUIRE(s->n <= INT32_MAX && s->max_window <= INT32_MAX, GD_ERR_UNSUPPORTED,
               "inference: %lld nodes; a GAT's exact inference indexes nodes with 32 bits (at "
               "most %d); evaluate it by sampled inference",
               (long long)s->n, INT32_MAX);
    GD_REQUIRE(s->cap >= s->max_degree + 1, GD_ERR_INVALID_ARG,
               "inference: a node has %lld in-neighbours, more than a chunk of %lld rows holds; "
               "a GAT's exact inference takes each node's edges in one chunk: raise %s",
               (long long)s->max_degree, (long long)s->cap,
               s->gpu ? "the memory budget (or max_chunk_rows)" : "max_chunk_rows");
    GD_CHECK(gd__nn_tensor_alloc(ctx, GD_DTYPE_FLOAT32, s->n, s->pcols, &s->p_all));
    GD_CHECK(gd__nn_tensor_alloc(ctx, GD_DTYPE_FLOAT32, s->n, s->heads, &s->ssrc_all));
    GD_CHECK(gd__nn_tensor_alloc(ctx, GD_DTYPE_FLOAT32, s->n, s->heads, &s->sdst_all));
    GD_CHECK(gd__nn_tensor_alloc(ctx, GD_DTYPE_FLOAT32, 1, (s->max_window + s->max_dst) * s->heads,
                                 &s->alpha));
    GD_CHECK(gd__nn_tensor_alloc(ctx, GD_DTYPE_FLOAT32, 1, s->max_dst * s->pcols, &s->attn_agg));
    const size_t blk_bytes = gd__infer_block_bytes(s->max_dst, s->max_window);
    GD_CHECK(gd__infer_stage_create(ctx, blk_bytes, "the inference's attention blocks",
                                    "lower max_chunk_rows", &s->blk));
    if (s->gpu)
        s->device_bytes += (int64_t)blk_bytes + s->n * (s->pcols + 2 * s->heads) * 4 +
                           (s->max_window + s->max_dst) * s->heads * 4 + s->max_dst * s->pcols * 4;
fail:
    return st;
}

/* Layer l's projection of every node and its scores, in chunks of rows. */
static gd_status attn_project_layer(infer_state *s, int l, int64_t pcols) {
    gd_status st = GD_OK;
    const gd__nn_ctx *ctx = s->ctx;
    const gd__infer_table *in = &s->tab[in_table(l)];
    const int64_t H = s->heads;
    for (int64_t r0 = 0; r0 < s->n; r0 += s->max_dst) {
        const int64_t nr = gd__min64(s->max_dst, s->n - r0);
        gd__nn_tensor h;
        GD_CHECK(gd__infer_table_rows(ctx, in, r0, nr, s->self.data, &h));
        gd__nn_tensor p = gd__nn_view((float *)s->p_all.data + r0 * pcols, GD_DTYPE_FLOAT32,
                                      ctx->device, nr, pcols);
        gd__nn_tensor ss = gd__nn_view((float *)s->ssrc_all.data + r0 * H, GD_DTYPE_FLOAT32,
                                       ctx->device, nr, H);
        gd__nn_tensor sd = gd__nn_view((float *)s->sdst_all.data + r0 * H, GD_DTYPE_FLOAT32,
                                       ctx->device, nr, H);
        GD_CHECK(gd__model_attn_project(s->m, l, &h, &p, &ss, &sd));
    }
fail:
    return st;
}

/*
 * Layer l for destinations [lo, hi): their block over global ids (indptr rebased, indices as
 * int32), built on the host (GPU: in the pinned buffer once the last copy out of it is done),
 * then the attention over the whole projected table, the chunk's own rows at offset lo.
 */
static gd_status attn_chunk(infer_state *s, int l, int64_t lo, int64_t hi, int64_t pcols,
                            int32_t *pred, float *logits) {
    gd_status st = GD_OK;
    const gd__nn_ctx *ctx = s->ctx;
    const int64_t nd = hi - lo, e0 = s->indptr[lo], ne = s->indptr[hi] - e0, H = s->heads;
    int32_t *ip = s->blk.host, *ix = ip + s->max_dst + 1;
    GD_CHECK(gd__infer_stage_wait(&s->blk));
    for (int64_t i = 0; i <= nd; i++) ip[i] = (int32_t)(s->indptr[lo + i] - e0);
    const int wide = s->index_dtype == GD_DTYPE_INT64;
#pragma omp parallel for schedule(static) num_threads(s->threads) if (ne > 65536)
    for (int64_t e = 0; e < ne; e++)
        ix[e] = wide ? (int32_t)((const int64_t *)s->indices)[e0 + e]
                     : ((const int32_t *)s->indices)[e0 + e];
    gd_block blk;
    GD_CHECK(gd__infer_stage_block(ctx, &s->blk, s->max_dst, nd, s->n, ne, &blk));
    gd__nn_tensor p = gd__nn_view(s->p_all.data, GD_DTYPE_FLOAT32, ctx->device, s->n, pcols);
    gd__nn_tensor ss = gd__nn_view(s->ssrc_all.data, GD_DTYPE_FLOAT32, ctx->device, s->n, H);
    gd__nn_tensor sd = gd__nn_view((float *)s->sdst_all.data + lo * H, GD_DTYPE_FLOAT32,
                                   ctx->device, nd, H);
    gd__nn_tensor alpha = gd__nn_view(s->alpha.data, GD_DTYPE_FLOAT32, ctx->device, ne + nd, H);
    gd__nn_tensor agg = gd__nn_view(s->attn_agg.data, GD_DTYPE_FLOAT32, ctx->device, nd, pcols);
    gd__nn_tensor out = chunk_out(s, l, lo, nd);
    GD_CHECK(gd__model_attn_combine(s->m, l, &blk, lo, &p, &ss, &sd, &alpha, &agg, &out));
    GD_CHECK(chunk_done(s, l, lo, &out, pred, logits));
fail:
    return st;
}

/* The widths of an attention model's layers, and its largest in-degree. */
static void attn_shape(infer_state *s) {
    s->pcols = s->heads = 1;
    for (int l = 0; l < s->num_layers; l++) {
        int64_t in, out, pc, h;
        gd__model_attn_dims(s->m, l, &in, &out, &pc, &h);
        s->dims[l] = in;
        s->dims[l + 1] = out;
        s->pcols = gd__max64(s->pcols, pc);
        s->heads = gd__max64(s->heads, h);
    }
    s->hidden = 1;
    for (int l = 1; l < s->num_layers; l++) s->hidden = gd__max64(s->hidden, s->dims[l]);
    s->max_degree = gd__csc_max_degree(s->indptr, s->n);
}

gd_status gd__model_infer(gd__model *m, const gd_dataset_t *ds, const gd__infer_options *o,
                          int32_t *pred, float *logits, gd__infer_stats *stats) {
    gd_status st = GD_OK;
    const double start = gd__now();
    infer_state s;
    memset(&s, 0, sizeof s);
    gd__infer_options opts = GD__INFER_OPTIONS_INIT;
    const float *features = NULL;
#ifdef GD_WITH_CUDA
    int prev_device = -1, entered = 0;
#endif
    GD_REQUIRE(m && ds && pred, GD_ERR_INVALID_ARG,
               "inference: model, dataset and prediction buffer must be given");
    if (o) opts = *o;
    GD_REQUIRE(opts.max_chunk_rows == 0 || opts.max_chunk_rows >= 2, GD_ERR_INVALID_ARG,
               "inference: max_chunk_rows = %lld; use 0 (automatic) or at least 2 (a node and "
               "one neighbour)",
               (long long)opts.max_chunk_rows);
    GD_REQUIRE(opts.memory_budget >= 0, GD_ERR_INVALID_ARG,
               "inference: memory budget %lld must not be negative", (long long)opts.memory_budget);
    GD_CHECK(gd__threads_check(opts.threads, "inference"));
    const gd__model_config *mc = gd__model_get_config(m);
    GD_REQUIRE(mc->dtype == GD_DTYPE_FLOAT32, GD_ERR_UNSUPPORTED,
               "inference: the model is %s; inference runs float32 models",
               gd_dtype_name(mc->dtype));
    GD_REQUIRE(gd__model_has_layer_combine(m) || gd__model_has_attention(m), GD_ERR_UNSUPPORTED,
               "inference: a %s model has no layer-wise form (a mean aggregate and the self row, "
               "or attention); evaluate it by sampled inference",
               gd__model_iface(m)->title);
    s.m = m;
    s.ctx = gd__model_ctx(m);
    s.gpu = s.ctx->device != GD__NN_HOST;
    s.num_layers = mc->num_layers;
    s.hidden = mc->hidden_dim;
    for (int l = 0; l <= s.num_layers; l++) s.dims[l] = gd__model_dim(m, l);
    s.threads = opts.threads > 0 ? opts.threads : gd__num_threads();
    s.attention = gd__model_has_attention(m);
    GD_CHECK(load_dataset(&s, ds, &features));
    if (s.attention) attn_shape(&s);
    if (stats) memset(stats, 0, sizeof *stats);
    if (s.n == 0) goto fail; /* nothing to predict; st is GD_OK */

    if (s.gpu) {
#ifdef GD_WITH_CUDA
        GD_CHECK(gd__cuda_enter_device(s.ctx->device, &prev_device));
        entered = 1;
        GD_CHECK(setup_gpu(&s, features, &opts));
#else
        GD_REQUIRE(0, GD_ERR_NO_DEVICE, "inference: the model is on a GPU in a build without CUDA");
#endif
    } else {
        GD_CHECK(setup_cpu(&s, features, &opts));
    }
    if (s.attention) GD_CHECK(attn_setup(&s));
    GD_INFO("inference: %lld nodes, %lld edges, %d layers, %lld rows per chunk: %lld chunks "
            "(%lld pieces) per layer%s",
            (long long)s.n, (long long)s.num_edges, s.num_layers, (long long)s.cap,
            (long long)s.chunks, (long long)s.pieces,
            s.gpu ? (s.tab[0].on_device ? ", features in GPU memory"
                                        : ", features read from pinned host memory")
                  : "");

    int64_t bytes = 0, bytes_host = 0;
    const uint64_t total = (uint64_t)(s.num_layers * s.chunks);
    uint64_t done = 0;
    for (int l = 0; l < s.num_layers; l++) {
        int64_t in_cols, out_cols, pcols = 0, heads;
        if (s.attention) {
            gd__model_attn_dims(m, l, &in_cols, &out_cols, &pcols, &heads);
            GD_CHECK(attn_project_layer(&s, l, pcols));
        }
        for (int64_t lo = 0, hi; lo < s.n; lo = hi) {
            hi = next_chunk(s.indptr, s.n, lo, s.cap);
            if (s.attention)
                GD_CHECK(attn_chunk(&s, l, lo, hi, pcols, pred, logits));
            else
                GD_CHECK(run_chunk(&s, l, lo, hi, pred, logits));
            GD_CHECK(gd__progress(opts.progress, opts.progress_user, "inference", ++done, total));
        }
        const gd__infer_table *in = &s.tab[in_table(l)];
        const int64_t b = (s.num_edges + s.n) * in->cols * (int64_t)sizeof(float);
        bytes += b;
        if (s.gpu && !in->on_device) bytes_host += b;
    }
    GD_CHECK(gd__nn_check_errors(s.ctx));
    if (stats) {
        stats->chunk_rows = s.cap;
        stats->chunks = s.chunks;
        stats->pieces = s.pieces;
        stats->bytes_read = bytes;
        stats->bytes_read_host = bytes_host;
        stats->device_bytes = s.device_bytes;
        stats->features_on_device = s.tab[0].on_device;
        stats->hidden_on_device = s.tab[1].on_device + s.tab[2].on_device;
    }
fail:
    state_release(&s);
#ifdef GD_WITH_CUDA
    if (entered) gd__cuda_leave_device(s.ctx->device, prev_device);
#endif
    if (st == GD_OK && stats) stats->seconds = gd__now() - start;
    return st;
}

/* ----------------------------------------------------------- accuracy */

static int64_t int_at(const gd_array_view *v, int64_t i) {
    return v->dtype == GD_DTYPE_INT32 ? (int64_t)((const int32_t *)v->data)[i]
                                      : ((const int64_t *)v->data)[i];
}

gd_status gd__infer_accuracy(const gd_dataset_t *ds, gd_array_id split, const int32_t *pred,
                             double *acc, int64_t *count) {
    gd_status st = GD_OK;
    gd_array_view ids, labels;
    int64_t correct = 0, labelled = 0;
    GD_REQUIRE(ds && pred && acc, GD_ERR_INVALID_ARG,
               "inference accuracy: dataset, predictions and acc must be given");
    GD_REQUIRE(split >= GD_ARRAY_TRAIN_IDX && split <= GD_ARRAY_TEST_IDX, GD_ERR_INVALID_ARG,
               "inference accuracy: %s is not a split (train_idx, valid_idx or test_idx)",
               gd_array_name(split));
    *acc = NAN;
    if (count) *count = 0;
    st = gd_dataset_array(ds, split, &ids);
    if (st == GD_ERR_NOT_FOUND) {
        gd_clear_error();
        return GD_OK;
    }
    GD_CHECK(st);
    GD_CHECK(gd_dataset_array(ds, GD_ARRAY_LABELS, &labels));
    GD_REQUIRE((ids.dtype == GD_DTYPE_INT32 || ids.dtype == GD_DTYPE_INT64) &&
                   (labels.dtype == GD_DTYPE_INT32 || labels.dtype == GD_DTYPE_INT64),
               GD_ERR_FORMAT, "inference accuracy: %s is %s and labels %s; expected integers",
               gd_array_name(split), gd_dtype_name(ids.dtype), gd_dtype_name(labels.dtype));
    const int64_t n = gd_dataset_num_nodes(ds);
    for (int64_t i = 0; i < ids.shape[0]; i++) {
        const int64_t v = int_at(&ids, i);
        GD_REQUIRE(v >= 0 && v < n, GD_ERR_RANGE,
                   "inference accuracy: %s[%lld] = %lld is not a node (0 to %lld)",
                   gd_array_name(split), (long long)i, (long long)v, (long long)(n - 1));
        const int64_t y = int_at(&labels, v);
        if (y < 0) continue;
        labelled++;
        correct += pred[v] == y;
    }
    *acc = labelled ? (double)correct / (double)labelled : NAN;
    if (count) *count = labelled;
fail:
    return st;
}
