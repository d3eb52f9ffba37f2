/*
 * The CPU backend of the nn module: every op for float32 and float64 on host memory. It is the
 * CPU training path, the float64 oracle of the gradient checks and the reference the CUDA ops
 * are compared with. The op bodies are in ops_cpu_impl.h, instantiated for both types here; the
 * GEMM is gemm_cpu.c (OpenBLAS or the built-in loop).
 */
#include "nn/gemm_cpu.h"
#include "nn/internal.h"

#include <math.h>
#include <string.h>

#define NN_IMPL "nn/ops_cpu_impl.h"
#include "nn/each_dtype.h"
#undef NN_IMPL

#define IS_F64(t) ((t)->dtype == GD_DTYPE_FLOAT64)

static int cpu_supports(gd_dtype dtype) {
    return dtype == GD_DTYPE_FLOAT32 || dtype == GD_DTYPE_FLOAT64;
}

static gd_status cpu_alloc(const gd__nn_ctx *ctx, size_t bytes, void **out) {
    gd_status st = GD_OK;
    GD_ALLOC(*out, bytes, "an nn tensor");
fail:
    return st;
}

static void cpu_release(const gd__nn_ctx *ctx, void *ptr) {
    gd_free(ptr);
}

static gd_status cpu_zero(const gd__nn_ctx *ctx, void *ptr, size_t bytes) {
    if (bytes) memset(ptr, 0, bytes);
    return GD_OK;
}

static gd_status cpu_copy(const gd__nn_ctx *ctx, void *dst, const void *src, size_t bytes) {
    if (bytes && dst != src) memcpy(dst, src, bytes);
    return GD_OK;
}

static gd_status cpu_synchronize(const gd__nn_ctx *ctx) {
    return GD_OK;
}

static gd_status cpu_gemm(const gd__nn_ctx *ctx, gd__nn_trans ta, gd__nn_trans tb, double alpha,
                          const gd__nn_tensor *a, const gd__nn_tensor *b, double beta,
                          gd__nn_tensor *c) {
    const int64_t m = c->rows, n = c->cols, k = ta ? a->rows : a->cols;
    if (IS_F64(c))
        gd__nn_gemm_cpu_f64(ta, tb, m, n, k, alpha, a->data, b->data, beta, c->data,
                            gd__num_threads());
    else
        gd__nn_gemm_cpu_f32(ta, tb, m, n, k, (float)alpha, a->data, b->data, (float)beta, c->data,
                            gd__num_threads());
    return GD_OK;
}

static gd_status cpu_add_bias(const gd__nn_ctx *ctx, gd__nn_tensor *y, const gd__nn_tensor *b) {
    if (IS_F64(y))
        add_bias_f64(y->data, b->data, y->rows, y->cols, gd__num_threads());
    else
        add_bias_f32(y->data, b->data, y->rows, y->cols, gd__num_threads());
    return GD_OK;
}

static gd_status cpu_bias_grad(const gd__nn_ctx *ctx, const gd__nn_tensor *dy, gd__nn_tensor *db,
                               int accumulate) {
    if (IS_F64(dy))
        bias_grad_f64(dy->data, db->data, dy->rows, dy->cols, accumulate);
    else
        bias_grad_f32(dy->data, db->data, dy->rows, dy->cols, accumulate);
    return GD_OK;
}

static gd_status cpu_mean_agg(const gd__nn_ctx *ctx, const gd_block *blk, const gd__nn_tensor *x,
                              gd__nn_tensor *out) {
    if (IS_F64(x))
        mean_agg_f64(blk, x->data, out->data, x->cols, gd__num_threads());
    else
        mean_agg_f32(blk, x->data, out->data, x->cols, gd__num_threads());
    return GD_OK;
}

static gd_status cpu_mean_agg_backward(const gd__nn_ctx *ctx, const gd_block *blk,
                                       const gd__nn_tensor *dout, gd__nn_tensor *dx) {
    if (IS_F64(dout))
        mean_agg_backward_f64(blk, dout->data, dx->data, dout->cols);
    else
        mean_agg_backward_f32(blk, dout->data, dx->data, dout->cols);
    return GD_OK;
}

static gd_status cpu_relu(const gd__nn_ctx *ctx, const gd__nn_tensor *x, gd__nn_tensor *y) {
    if (IS_F64(x))
        relu_f64(x->data, y->data, gd__nn_numel(x), gd__num_threads());
    else
        relu_f32(x->data, y->data, gd__nn_numel(x), gd__num_threads());
    return GD_OK;
}

static gd_status cpu_relu_backward(const gd__nn_ctx *ctx, const gd__nn_tensor *y,
                                   const gd__nn_tensor *dy, gd__nn_tensor *dx) {
    if (IS_F64(y))
        relu_backward_f64(y->data, dy->data, dx->data, gd__nn_numel(y), gd__num_threads());
    else
        relu_backward_f32(y->data, dy->data, dx->data, gd__nn_numel(y), gd__num_threads());
    return GD_OK;
}

static gd_status cpu_dropout(const gd__nn_ctx *ctx, double p, uint64_t seed, uint32_t stream,
                             const int64_t *row_ids, const gd__nn_tensor *x, gd__nn_tensor *y) {
    if (IS_F64(x))
        dropout_f64(p, seed, stream, row_ids, x->data, y->data, x->rows, x->cols,
                    gd__num_threads());
    else
        dropout_f32(p, seed, stream, row_ids, x->data, y->data, x->rows, x->cols,
                    gd__num_threads());
    return GD_OK;
}

static gd_status cpu_softmax_xent(const gd__nn_ctx *ctx, const gd__nn_tensor *z,
                                  const int64_t *labels, double scale, gd__nn_tensor *loss,
                                  gd__nn_tensor *dz) {
    gd_status st = GD_OK;
    for (int64_t i = 0; i < z->rows; i++)
        GD_REQUIRE(labels[i] < z->cols, GD_ERR_RANGE,
                   "softmax cross-entropy: label %lld of row %lld is not below the %lld classes",
                   (long long)labels[i], (long long)i, (long long)z->cols);
    if (IS_F64(z))
        softmax_xent_f64(z->data, labels, z->rows, z->cols, scale, loss->data,
                         dz ? dz->data : NULL);
    else
        softmax_xent_f32(z->data, labels, z->rows, z->cols, scale, loss->data,
                         dz ? dz->data : NULL);
fail:
    return st;
}

static gd_status cpu_accuracy(const gd__nn_ctx *ctx, const gd__nn_tensor *z, const int64_t *labels,
                              int64_t *correct) {
    *correct = IS_F64(z) ? accuracy_f64(z->data, labels, z->rows, z->cols)
                         : accuracy_f32(z->data, labels, z->rows, z->cols);
    return GD_OK;
}

static gd_status cpu_adam(const gd__nn_ctx *ctx, const gd__nn_adam_options *o, double bc1,
                          double bc2, gd__nn_tensor *p, const gd__nn_tensor *g, gd__nn_tensor *m,
                          gd__nn_tensor *v) {
    if (IS_F64(p))
        adam_f64(o, bc1, bc2, p->data, g->data, m->data, v->data, gd__nn_numel(p),
                 gd__num_threads());
    else
        adam_f32(o, bc1, bc2, p->data, g->data, m->data, v->data, gd__nn_numel(p),
                 gd__num_threads());
    return GD_OK;
}

/*
 * The groups in waves: a wave ends before a group whose output an earlier group of the wave
 * wrote (outputs that overlap share their first element, as the front-end checked), so the
 * groups of a wave are independent and the waves keep the order of the writers of an output.
 * A wave of several products, each too small to pay for threads of its own (the threshold of
 * the GEMM's own split) but together large enough, runs them in parallel, one thread each;
 * otherwise each product is threaded by the GEMM (or not) one after another. Smaller waves stay
 * on one thread: a parallel region costs more than their products, and far more when the
 * cores are shared (R-GAT's gradient test took 12x longer with a region for every wave).
 */
#define GROUP_SMALL (1 << 20)

static void cpu_gemm_group(const gd__nn_gemm_group *g, int threads) {
    const int64_t m = g->c.rows, n = g->c.cols, k = g->ta ? g->a.rows : g->a.cols;
    const double beta = g->accumulate ? 1.0 : 0.0;
    if (IS_F64(&g->c)) {
        gd__nn_gemm_cpu_f64(g->ta, g->tb, m, n, k, 1.0, g->a.data, g->b.data, beta, g->c.data,
                            threads);
        if (g->has_bias) add_bias_f64(g->c.data, g->bias.data, m, n, threads);
    } else {
        gd__nn_gemm_cpu_f32(g->ta, g->tb, m, n, k, 1.0f, g->a.data, g->b.data, (float)beta,
                            g->c.data, threads);
        if (g->has_bias) add_bias_f32(g->c.data, g->bias.data, m, n, threads);
    }
}

static gd_status cpu_gemm_grouped(const gd__nn_ctx *ctx, gd__nn_grouped *plan, int count,
                                  const gd__nn_gemm_group *g) {
    const int threads = gd__num_threads();
    int w0 = 0;
    while (w0 < count) {
        int w1 = w0 + 1, small = 1;
        double work = 0;
        for (; w1 < count; w1++) {
            int clash = 0;
            for (int i = w0; i < w1 && !clash; i++)
                clash = g[i].c.data && g[i].c.data == g[w1].c.data;
            if (clash) break;
        }
        for (int j = w0; j < w1; j++) {
            const int64_t k = g[j].ta ? g[j].a.rows : g[j].a.cols;
            const double w = (double)g[j].c.rows * (double)g[j].c.cols * (double)(k > 0 ? k : 1);
            small &= w < (double)GROUP_SMALL;
            work += w;
        }
        if (small && work >= (double)GROUP_SMALL && w1 - w0 > 1 && threads > 1) {
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
            for (int j = w0; j < w1; j++) cpu_gemm_group(&g[j], 1);
        } else {
            for (int j = w0; j < w1; j++) cpu_gemm_group(&g[j], threads);
        }
        w0 = w1;
    }
    return GD_OK;
}

/* The column sums of the groups, in parallel over the groups where there is enough to sum. */
static gd_status cpu_bias_grad_grouped(const gd__nn_ctx *ctx, int count,
                                       const gd__nn_bias_grad_group *g) {
    int64_t total = 0;
    for (int j = 0; j < count; j++) total += gd__nn_numel(&g[j].dy);
#pragma omp parallel for schedule(dynamic, 1)                                                      \
    num_threads(gd__num_threads()) if (count > 1 && total > 65536)
    for (int j = 0; j < count; j++) {
        gd__nn_tensor db = g[j].db;
        cpu_bias_grad(ctx, &g[j].dy, &db, g[j].accumulate);
    }
    return GD_OK;
}

const gd__nn_backend gd__nn_cpu_backend = {
    .name = "cpu",
    .supports = cpu_supports,
    .alloc = cpu_alloc,
    .release = cpu_release,
    .zero = cpu_zero,
    .to_host = cpu_copy,
    .from_host = cpu_copy,
    .synchronize = cpu_synchronize,
    .check_errors = cpu_synchronize,
    .gemm = cpu_gemm,
    .add_bias = cpu_add_bias,
    .bias_grad = cpu_bias_grad,
    .mean_agg = cpu_mean_agg,
    .mean_agg_backward = cpu_mean_agg_backward,
    .relu = cpu_relu,
    .relu_backward = cpu_relu_backward,
    .dropout = cpu_dropout,
    .dropout_backward = cpu_dropout,
    .softmax_xent = cpu_softmax_xent,
    .accuracy = cpu_accuracy,
    .adam = cpu_adam,
    .grouped_init = NULL,
    .grouped_release = NULL,
    .gemm_grouped = cpu_gemm_grouped,
    .bias_grad_grouped = cpu_bias_grad_grouped,
};
