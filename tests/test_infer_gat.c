/*
 * Exact layer-wise inference of GAT (issue 17, item 1; train/infer.c's attention passes): on
 * the CPU, against the model's own forward over the whole graph as one block (every node a
 * destination of every layer, every edge and self loop: what full-neighbour sampling gives),
 * for 1 to 3 layers, 1 and 3 heads, int32 and int64 indices, and chunks of every size down to a
 * node's list; a chunk smaller than a node's list is refused. On a GPU: the same inference, with
 * the tables in GPU memory and under a budget that puts them in host memory, equal to the CPU's.
 */
#include "test.h"

#include "io/dataset.h"
#include "nn/model.h"
#include "train/infer.h"
#include "train/plan.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define F32 GD_DTYPE_FLOAT32

/* The tiny preset, with its indices widened to int64 when wide (a copy through gd__dataset). */
static gd_dataset_t *dataset(uint64_t *state, int wide) {
    gd_generate_options g = GD_GENERATE_OPTIONS_INIT;
    g.preset = "tiny";
    g.seed = t_rand(state) % 1000;
    gd_dataset_t *ds = NULL;
    T_OK(gd_generate(&g, &ds));
    if (!wide) return ds;
    gd_array_view ip, ix, fv, y;
    T_OK(gd_dataset_array(ds, GD_ARRAY_INDPTR, &ip));
    T_OK(gd_dataset_array(ds, GD_ARRAY_INDICES, &ix));
    T_OK(gd_dataset_array(ds, GD_ARRAY_FEATURES, &fv));
    T_OK(gd_dataset_array(ds, GD_ARRAY_LABELS, &y));
    gd_dataset_t *w = NULL;
    T_OK(gd__dataset_new("gat-infer-int64", NULL, 0, &w));
    int64_t *a, *b;
    float *x;
    int64_t s1[2] = {ip.shape[0], 1}, s2[2] = {ix.shape[0], 1}, s3[2] = {fv.shape[0], fv.shape[1]};
    int64_t s4[2] = {y.shape[0], 1};
    T_OK(gd__dataset_alloc(w, GD_ARRAY_INDPTR, GD_DTYPE_INT64, 1, s1, (void **)&a));
    memcpy(a, ip.data, (size_t)ip.shape[0] * 8);
    T_OK(gd__dataset_alloc(w, GD_ARRAY_INDICES, GD_DTYPE_INT64, 1, s2, (void **)&b));
    for (int64_t e = 0; e < ix.shape[0]; e++) b[e] = ((const int32_t *)ix.data)[e];
    T_OK(gd__dataset_alloc(w, GD_ARRAY_FEATURES, F32, 2, s3, (void **)&x));
    memcpy(x, fv.data, (size_t)(fv.shape[0] * fv.shape[1]) * 4);
    int64_t *yy;
    T_OK(gd__dataset_alloc(w, GD_ARRAY_LABELS, y.dtype, 1, s4, (void **)&yy));
    memcpy(yy, y.data, (size_t)y.shape[0] * gd_dtype_size(y.dtype));
    T_OK(gd__dataset_finish(w, 1));
    gd_dataset_close(ds);
    return w;
}

/* A GAT of L layers and H heads, sized for the whole graph of ds as one block per layer. */
static gd__model *make_gat(const gd__nn_ctx *ctx, const gd_dataset_t *ds, int L, int H,
                           uint64_t seed) {
    gd_array_view fv, ix;
    T_OK(gd_dataset_array(ds, GD_ARRAY_FEATURES, &fv));
    T_OK(gd_dataset_array(ds, GD_ARRAY_INDICES, &ix));
    const int64_t n = gd_dataset_num_nodes(ds);
    /* The dropouts are never applied: inference is eval mode. */
    gd__model_config c = gd__model_config_make(GD__MODEL_GAT, L, fv.shape[1], 12,
                                               gd_dataset_num_classes(ds), 0.5, F32);
    c.heads = H;
    c.attn_dropout = 0.3;
    for (int l = 0; l <= L; l++) c.max_nodes[l] = n;
    for (int l = 0; l < L; l++) c.max_edges[l] = ix.shape[0];
    gd__model *m = NULL;
    T_OK(gd__model_create(ctx, &c, seed, &m));
    return m;
}

/* The model's forward over the whole graph: every layer's block is the dataset's CSC. */
static float *full_forward(gd__model *m, const gd_dataset_t *ds) {
    gd_array_view ip, ix, fv;
    T_OK(gd_dataset_array(ds, GD_ARRAY_INDPTR, &ip));
    T_OK(gd_dataset_array(ds, GD_ARRAY_INDICES, &ix));
    T_OK(gd_dataset_array(ds, GD_ARRAY_FEATURES, &fv));
    const int64_t n = ip.shape[0] - 1, e = ix.shape[0];
    int32_t *indptr = malloc((size_t)(n + 1) * 4), *indices = malloc((size_t)(e ? e : 1) * 4);
    T_ASSERT(indptr && indices);
    for (int64_t v = 0; v <= n; v++) indptr[v] = (int32_t)((const int64_t *)ip.data)[v];
    for (int64_t i = 0; i < e; i++)
        indices[i] = ix.dtype == GD_DTYPE_INT64 ? (int32_t)((const int64_t *)ix.data)[i]
                                                : ((const int32_t *)ix.data)[i];
    const int L = gd__model_get_config(m)->num_layers;
    gd_block blocks[GD__MODEL_MAX_LAYERS];
    for (int l = 0; l < L; l++) blocks[l] = (gd_block){n, n, e, indptr, indices};
    gd__nn_tensor x = gd__nn_view(fv.data, F32, GD__NN_HOST, n, fv.shape[1]), z;
    T_OK(gd__model_forward(m, blocks, &x, NULL, 0, 0, &z));
    const int64_t c = z.cols;
    float *out = malloc((size_t)(n * c) * 4);
    T_ASSERT(out);
    memcpy(out, z.data, (size_t)(n * c) * 4);
    free(indptr);
    free(indices);
    return out;
}

/* got equals want within tol (relative to the row's scale); the predictions are the argmax. */
static void same_logits(const char *what, const float *want, const float *got,
                        const int32_t *pred, int64_t n, int64_t c, double tol) {
    double worst = 0;
    for (int64_t v = 0; v < n; v++) {
        double scale = 1;
        int64_t arg = 0;
        for (int64_t j = 0; j < c; j++) {
            scale = fmax(scale, fabs(want[v * c + j]));
            if (got[v * c + j] > got[v * c + arg]) arg = j;
        }
        for (int64_t j = 0; j < c; j++)
            worst = fmax(worst, fabs((double)got[v * c + j] - want[v * c + j]) / scale);
        T_EQ_INT(pred[v], arg);
    }
    if (worst > tol) T_FAIL_("%s: logits differ by %.3g (tolerance %.1g)", what, worst, tol);
    fprintf(stderr, "%s: logits within %.2g\n", what, worst);
}

static int64_t max_degree(const gd_dataset_t *ds) {
    gd_array_view ip;
    T_OK(gd_dataset_array(ds, GD_ARRAY_INDPTR, &ip));
    const int64_t *p = ip.data;
    int64_t most = 0;
    for (int64_t v = 0; v + 1 < ip.shape[0]; v++)
        if (p[v + 1] - p[v] > most) most = p[v + 1] - p[v];
    return most;
}

static void check_cpu(uint64_t *state, int L, int H, int wide) {
    gd__nn_ctx cpu = gd__nn_cpu_ctx();
    gd_dataset_t *ds = dataset(state, wide);
    gd__model *m = make_gat(&cpu, ds, L, H, t_rand(state));
    const int64_t n = gd_dataset_num_nodes(ds), c = gd_dataset_num_classes(ds);
    float *want = full_forward(m, ds);
    const int64_t deg = max_degree(ds);
    const int64_t caps[] = {0, deg + 1, deg + 7, 4 * deg, n};
    for (size_t k = 0; k < sizeof caps / sizeof caps[0]; k++) {
        gd__infer_options o = GD__INFER_OPTIONS_INIT;
        o.max_chunk_rows = caps[k];
        o.threads = 1 + (int)(k & 1);
        int32_t *pred = malloc((size_t)n * 4);
        float *z = malloc((size_t)(n * c) * 4);
        T_ASSERT(pred && z);
        gd__infer_stats stats;
        T_OK(gd__model_infer(m, ds, &o, pred, z, &stats));
        T_EQ_INT(stats.pieces, stats.chunks); /* a node's edges are never split */
        char what[128];
        snprintf(what, sizeof what, "cpu GAT inference, %d layers, %d heads, int%d, %lld rows", L,
                 H, wide ? 64 : 32, (long long)caps[k]);
        same_logits(what, want, z, pred, n, c, 1e-5);
        free(pred);
        free(z);
    }
    /* A chunk that cannot hold the largest list is refused, naming the fix. */
    gd__infer_options o = GD__INFER_OPTIONS_INIT;
    o.max_chunk_rows = deg;
    int32_t *pred = malloc((size_t)n * 4);
    T_FAILS(gd__model_infer(m, ds, &o, pred, NULL, NULL), GD_ERR_INVALID_ARG, "max_chunk_rows");
    free(pred);
    free(want);
    gd__model_destroy(m);
    gd_dataset_close(ds);
}

#ifdef GD_WITH_CUDA
/*
 * A budget that holds the projected tables, the smallest chunk buffers and the hidden tables
 * but only half of the features (infer.c's setup_gpu and plan.c's gd__plan_infer, from the
 * model's own layer widths), so the features stay in host memory.
 */
static int64_t host_features_budget(const gd__model *m, const gd_dataset_t *ds, int wide) {
    gd__infer_plan_input pi;
    gd__infer_plan ip;
    memset(&pi, 0, sizeof pi);
    gd_array_view ix;
    T_OK(gd_dataset_array(ds, GD_ARRAY_INDICES, &ix));
    pi.num_nodes = gd_dataset_num_nodes(ds);
    pi.num_edges = ix.shape[0];
    pi.num_layers = gd__model_get_config(m)->num_layers;
    pi.index_bytes = wide ? 8 : 4;
    pi.budget = INT64_C(1) << 50;
    int64_t pcols = 1, heads = 1;
    for (int l = 0; l < pi.num_layers; l++) {
        int64_t pc, h;
        gd__model_attn_dims(m, l, &pi.dims[l], &pi.dims[l + 1], &pc, &h);
        pcols = pc > pcols ? pc : pcols;
        heads = h > heads ? h : heads;
    }
    T_OK(gd__plan_infer(&pi, &ip));
    const int64_t total = pi.num_nodes + pi.num_edges;
    int64_t reserve = total < GD__PLAN_INFER_MIN_CHUNK_ROWS ? total : GD__PLAN_INFER_MIN_CHUNK_ROWS;
    if (reserve < 2) reserve = 2;
    return gd__infer_attention_bytes(pi.num_nodes, pcols, heads) + reserve * ip.unit_bytes +
           ip.hidden_tables * ip.hidden_bytes + ip.feature_bytes / 2;
}

/* The same model on the GPU: its inference equals the CPU's, tables on the GPU or on the host. */
static void check_gpu(uint64_t *state, gd__nn_ctx *gpu, int L, int H, int wide) {
    gd__nn_ctx cpu = gd__nn_cpu_ctx();
    gd_dataset_t *ds = dataset(state, wide);
    const uint64_t seed = t_rand(state);
    gd__model *mc = make_gat(&cpu, ds, L, H, seed), *mg = make_gat(gpu, ds, L, H, seed);
    const int64_t n = gd_dataset_num_nodes(ds), c = gd_dataset_num_classes(ds);
    int32_t *want_pred = malloc((size_t)n * 4);
    float *want = malloc((size_t)(n * c) * 4);
    T_ASSERT(want_pred && want);
    T_OK(gd__model_infer(mc, ds, NULL, want_pred, want, NULL));
    gd_array_view fv;
    T_OK(gd_dataset_array(ds, GD_ARRAY_FEATURES, &fv));
    const int64_t deg = max_degree(ds);
    /* Default (GPU memory); a budget that leaves the features on the host; small chunks. */
    const int64_t budgets[] = {0, host_features_budget(mg, ds, wide), 0};
    const int64_t caps[] = {0, 0, deg + 1};
    for (int k = 0; k < 3; k++) {
        gd__infer_options o = GD__INFER_OPTIONS_INIT;
        o.memory_budget = budgets[k];
        o.max_chunk_rows = caps[k];
        int32_t *pred = malloc((size_t)n * 4);
        float *z = malloc((size_t)(n * c) * 4);
        T_ASSERT(pred && z);
        gd__infer_stats stats;
        T_OK(gd__model_infer(mg, ds, &o, pred, z, &stats));
        char what[160];
        snprintf(what, sizeof what,
                 "gpu GAT inference, %d layers, %d heads, int%d, budget %lld, %lld rows "
                 "(features %s)",
                 L, H, wide ? 64 : 32, (long long)budgets[k], (long long)caps[k],
                 stats.features_on_device ? "on the GPU" : "on the host");
        same_logits(what, want, z, pred, n, c, 1e-4);
        if (k == 1) T_EQ_INT(stats.features_on_device, 0);
        free(pred);
        free(z);
    }
    free(want_pred);
    free(want);
    gd__model_destroy(mc);
    gd__model_destroy(mg);
    gd_dataset_close(ds);
}
#endif

int main(void) {
    uint64_t state = t_seed();
    for (int L = 1; L <= 3; L++) {
        check_cpu(&state, L, 1, 0);
        check_cpu(&state, L, 3, L == 2);
    }
    t_check_no_leaks();
    fprintf(stderr, "CPU GAT inference passed\n");
#ifdef GD_WITH_CUDA
    if (gd_device_count() == 0) {
        fprintf(stderr, "no GPU: the GPU GAT inference checks are skipped\n");
        return 0;
    }
    gd__nn_ctx gpu;
    T_OK(gd__nn_cuda_ctx_create(0, &gpu));
    for (int L = 1; L <= 3; L++) {
        check_gpu(&state, &gpu, L, 1, 0);
        check_gpu(&state, &gpu, L, 3, L == 3);
    }
    gd__nn_cuda_ctx_destroy(&gpu);
    t_check_no_leaks();
    printf("GPU GAT inference equals the CPU's\n");
#else
    fprintf(stderr, "built without CUDA: the GPU checks are skipped\n");
#endif
    return 0;
}
