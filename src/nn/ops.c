/*
 * The checked front-ends of the nn ops and the tensor allocation helpers. Every caller (the
 * models, the trainer, the tests) comes through here: a wrong dtype, shape or device is
 * reported with the op, the tensor and the values involved, and only then does the backend of
 * the context run the op. The backends trust their inputs.
 */
#include "nn/internal.h"

#include <stdio.h>
#include <string.h>

static const char *dev_name(int device, char *buf, size_t n) {
    if (device == GD__NN_HOST) return "host";
    snprintf(buf, n, "cuda:%d", device);
    return buf;
}

/*
 * t must exist, hold dtype (a type the backend supports), live on ctx's device and be rows x
 * cols (a negative value accepts any).
 */
static gd_status check_tensor(const gd__nn_ctx *ctx, const char *op, const char *name,
                              const gd__nn_tensor *t, gd_dtype dtype, int64_t rows, int64_t cols) {
    gd_status st = GD_OK;
    char a[32], b[32];
    GD_REQUIRE(t, GD_ERR_INVALID_ARG, "%s: %s is NULL", op, name);
    GD_REQUIRE(t->dtype == dtype, GD_ERR_INVALID_ARG, "%s: %s is %s, expected %s", op, name,
               gd_dtype_name(t->dtype), gd_dtype_name(dtype));
    GD_REQUIRE(ctx->be->supports(dtype), GD_ERR_UNSUPPORTED, "%s: the %s backend has no %s ops", op,
               ctx->be->name, gd_dtype_name(dtype));
    GD_REQUIRE(t->device == ctx->device, GD_ERR_INVALID_ARG,
               "%s: %s is in %s memory but the op runs on %s", op, name,
               dev_name(t->device, a, sizeof a), dev_name(ctx->device, b, sizeof b));
    GD_REQUIRE(t->rows >= 0 && t->cols >= 0, GD_ERR_INVALID_ARG, "%s: %s has shape %lld x %lld", op,
               name, (long long)t->rows, (long long)t->cols);
    GD_REQUIRE((rows < 0 || t->rows == rows) && (cols < 0 || t->cols == cols), GD_ERR_INVALID_ARG,
               "%s: %s is %lld x %lld, expected %lld x %lld", op, name, (long long)t->rows,
               (long long)t->cols, (long long)(rows < 0 ? t->rows : rows),
               (long long)(cols < 0 ? t->cols : cols));
    GD_REQUIRE(t->data || t->rows * t->cols == 0, GD_ERR_INVALID_ARG, "%s: %s has no data", op,
               name);
fail:
    return st;
}

/* t as check_tensor asks, of any shape and of any dtype the backend supports. */
static gd_status check_any(const gd__nn_ctx *ctx, const char *op, const char *name,
                           const gd__nn_tensor *t) {
    return check_tensor(ctx, op, name, t, t ? t->dtype : GD_DTYPE_INVALID, -1, -1);
}

/* t as check_tensor asks, of the dtype and shape of ref (a checked tensor). */
static gd_status check_like(const gd__nn_ctx *ctx, const char *op, const char *name,
                            const gd__nn_tensor *t, const gd__nn_tensor *ref) {
    return check_tensor(ctx, op, name, t, ref->dtype, ref->rows, ref->cols);
}

static gd_status check_ctx(const gd__nn_ctx *ctx, const char *op) {
    if (!ctx || !ctx->be) return gd__error(GD_ERR_INVALID_ARG, "%s: no nn context", op);
    return GD_OK;
}

gd_status gd__nn_tensor_alloc(const gd__nn_ctx *ctx, gd_dtype dtype, int64_t rows, int64_t cols,
                              gd__nn_tensor *out) {
    gd_status st = GD_OK;
    int64_t n, bytes;
    void *data = NULL;
    GD_CHECK(check_ctx(ctx, "tensor alloc"));
    GD_REQUIRE(out, GD_ERR_INVALID_ARG, "tensor alloc: out is NULL");
    GD_REQUIRE(ctx->be->supports(dtype), GD_ERR_UNSUPPORTED,
               "tensor alloc: the %s backend has no %s ops", ctx->be->name, gd_dtype_name(dtype));
    GD_REQUIRE(rows >= 0 && cols >= 0, GD_ERR_INVALID_ARG, "tensor alloc: shape %lld x %lld",
               (long long)rows, (long long)cols);
    GD_REQUIRE(!gd__mul_overflow_i64(rows, cols, &n) &&
                   !gd__mul_overflow_i64(n, (int64_t)gd_dtype_size(dtype), &bytes),
               GD_ERR_OVERFLOW, "tensor alloc: %lld x %lld %s overflows", (long long)rows,
               (long long)cols, gd_dtype_name(dtype));
    GD_CHECK(ctx->be->alloc(ctx, (size_t)bytes, &data));
    *out = gd__nn_view(data, dtype, ctx->device, rows, cols);
    out->owned = 1;
fail:
    return st;
}

void gd__nn_tensor_free(const gd__nn_ctx *ctx, gd__nn_tensor *t) {
    if (!t) return;
    if (t->owned && t->data) ctx->be->release(ctx, t->data);
    *t = gd__nn_view(NULL, t->dtype, t->device, 0, 0);
}

static size_t tensor_bytes(const gd__nn_tensor *t) {
    return (size_t)(t->rows * t->cols) * gd_dtype_size(t->dtype);
}

gd_status gd__nn_zero(const gd__nn_ctx *ctx, gd__nn_tensor *t) {
    gd_status st = GD_OK;
    GD_CHECK(check_ctx(ctx, "zero"));
    GD_CHECK(check_any(ctx, "zero", "t", t));
    GD_CHECK(ctx->be->zero(ctx, t->data, tensor_bytes(t)));
fail:
    return st;
}

/* A copy between t and host memory (either way): a context, t, and host unless t is empty. */
static gd_status check_host_copy(const gd__nn_ctx *ctx, const char *op, const gd__nn_tensor *t,
                                 const void *host) {
    gd_status st = GD_OK;
    GD_CHECK(check_ctx(ctx, op));
    GD_CHECK(check_any(ctx, op, "t", t));
    GD_REQUIRE(host || tensor_bytes(t) == 0, GD_ERR_INVALID_ARG, "%s: host is NULL", op);
fail:
    return st;
}

gd_status gd__nn_to_host(const gd__nn_ctx *ctx, const gd__nn_tensor *t, void *host) {
    gd_status st = GD_OK;
    GD_CHECK(check_host_copy(ctx, "to host", t, host));
    GD_CHECK(ctx->be->to_host(ctx, host, t->data, tensor_bytes(t)));
fail:
    return st;
}

gd_status gd__nn_from_host(const gd__nn_ctx *ctx, gd__nn_tensor *t, const void *host) {
    gd_status st = GD_OK;
    GD_CHECK(check_host_copy(ctx, "from host", t, host));
    GD_CHECK(ctx->be->from_host(ctx, t->data, host, tensor_bytes(t)));
fail:
    return st;
}

gd_status gd__nn_check_errors(const gd__nn_ctx *ctx) {
    gd_status st = GD_OK;
    GD_CHECK(check_ctx(ctx, "check errors"));
    GD_CHECK(ctx->be->check_errors(ctx));
fail:
    return st;
}

gd_status gd__nn_gemm(const gd__nn_ctx *ctx, gd__nn_trans ta, gd__nn_trans tb, double alpha,
                      const gd__nn_tensor *a, const gd__nn_tensor *b, double beta,
                      gd__nn_tensor *c) {
    gd_status st = GD_OK;
    GD_CHECK(check_ctx(ctx, "gemm"));
    GD_CHECK(check_any(ctx, "gemm", "C", c));
    GD_CHECK(check_tensor(ctx, "gemm", "A", a, c->dtype, -1, -1));
    GD_CHECK(check_tensor(ctx, "gemm", "B", b, c->dtype, -1, -1));
    const int64_t m = ta ? a->cols : a->rows, k = ta ? a->rows : a->cols;
    const int64_t kb = tb ? b->cols : b->rows, n = tb ? b->rows : b->cols;
    GD_REQUIRE(k == kb && c->rows == m && c->cols == n, GD_ERR_INVALID_ARG,
               "gemm: op(A) is %lld x %lld, op(B) %lld x %lld and C %lld x %lld", (long long)m,
               (long long)k, (long long)kb, (long long)n, (long long)c->rows, (long long)c->cols);
    GD_REQUIRE(c->data != a->data && c->data != b->data, GD_ERR_INVALID_ARG,
               "gemm: C aliases an input");
    GD_CHECK(ctx->be->gemm(ctx, ta, tb, alpha, a, b, beta, c));
fail:
    return st;
}

gd_status gd__nn_linear(const gd__nn_ctx *ctx, const gd__nn_tensor *x, const gd__nn_tensor *w,
                        const gd__nn_tensor *b, gd__nn_tensor *y, int accumulate) {
    gd_status st = GD_OK;
    GD_CHECK(check_ctx(ctx, "linear"));
    GD_CHECK(check_any(ctx, "linear", "x", x));
    GD_CHECK(check_tensor(ctx, "linear", "W", w, x->dtype, x->cols, -1));
    GD_CHECK(check_tensor(ctx, "linear", "y", y, x->dtype, x->rows, w->cols));
    if (b) GD_CHECK(check_tensor(ctx, "linear", "b", b, x->dtype, 1, w->cols));
    GD_CHECK(gd__nn_gemm(ctx, GD__NN_N, GD__NN_N, 1.0, x, w, accumulate ? 1.0 : 0.0, y));
    if (b) GD_CHECK(ctx->be->add_bias(ctx, y, b));
fail:
    return st;
}

gd_status gd__nn_linear_backward(const gd__nn_ctx *ctx, const gd__nn_tensor *x,
                                 const gd__nn_tensor *w, const gd__nn_tensor *dy, gd__nn_tensor *dx,
                                 int accumulate_dx, gd__nn_tensor *dw, gd__nn_tensor *db,
                                 int accumulate_dw) {
    gd_status st = GD_OK;
    GD_CHECK(check_ctx(ctx, "linear backward"));
    GD_CHECK(check_any(ctx, "linear backward", "x", x));
    GD_CHECK(check_tensor(ctx, "linear backward", "W", w, x->dtype, x->cols, -1));
    GD_CHECK(check_tensor(ctx, "linear backward", "dy", dy, x->dtype, x->rows, w->cols));
    GD_CHECK(check_tensor(ctx, "linear backward", "dW", dw, x->dtype, w->rows, w->cols));
    if (dx) GD_CHECK(check_like(ctx, "linear backward", "dx", dx, x));
    if (db) GD_CHECK(check_tensor(ctx, "linear backward", "db", db, x->dtype, 1, w->cols));
    if (dx)
        GD_CHECK(gd__nn_gemm(ctx, GD__NN_N, GD__NN_T, 1.0, dy, w, accumulate_dx ? 1.0 : 0.0, dx));
    GD_CHECK(gd__nn_gemm(ctx, GD__NN_T, GD__NN_N, 1.0, x, dy, accumulate_dw ? 1.0 : 0.0, dw));
    if (db) GD_CHECK(ctx->be->bias_grad(ctx, dy, db, accumulate_dw));
fail:
    return st;
}

static gd_status check_block(const char *op, const gd_block *blk) {
    gd_status st = GD_OK;
    GD_REQUIRE(blk, GD_ERR_INVALID_ARG, "%s: block is NULL", op);
    GD_REQUIRE(blk->num_dst >= 0 && blk->num_dst <= blk->num_src && blk->num_edges >= 0 &&
                   blk->num_edges <= INT32_MAX,
               GD_ERR_INVALID_ARG,
               "%s: block of %lld destination, %lld source nodes and %lld "
               "edges (destinations must be a prefix of the sources)",
               op, (long long)blk->num_dst, (long long)blk->num_src, (long long)blk->num_edges);
    GD_REQUIRE(blk->indptr || blk->num_dst == 0, GD_ERR_INVALID_ARG, "%s: block has no indptr", op);
    GD_REQUIRE(blk->indices || blk->num_edges == 0, GD_ERR_INVALID_ARG, "%s: block has no indices",
               op);
fail:
    return st;
}

gd_status gd__nn_mean_agg(const gd__nn_ctx *ctx, const gd_block *blk, const gd__nn_tensor *x,
                          gd__nn_tensor *out) {
    gd_status st = GD_OK;
    GD_CHECK(check_ctx(ctx, "mean aggregation"));
    GD_CHECK(check_block("mean aggregation", blk));
    GD_CHECK(check_any(ctx, "mean aggregation", "x", x));
    GD_REQUIRE(x->rows >= blk->num_src, GD_ERR_INVALID_ARG,
               "mean aggregation: x has %lld rows but the block %lld source nodes",
               (long long)x->rows, (long long)blk->num_src);
    GD_CHECK(check_tensor(ctx, "mean aggregation", "out", out, x->dtype, blk->num_dst, x->cols));
    GD_REQUIRE(out->data != x->data || out->rows == 0, GD_ERR_INVALID_ARG,
               "mean aggregation: out aliases x");
    GD_CHECK(ctx->be->mean_agg(ctx, blk, x, out));
fail:
    return st;
}

gd_status gd__nn_mean_agg_backward(const gd__nn_ctx *ctx, const gd_block *blk,
                                   const gd__nn_tensor *dout, gd__nn_tensor *dx) {
    gd_status st = GD_OK;
    GD_CHECK(check_ctx(ctx, "mean aggregation backward"));
    GD_CHECK(check_block("mean aggregation backward", blk));
    GD_CHECK(check_tensor(ctx, "mean aggregation backward", "dout", dout,
                          dout ? dout->dtype : GD_DTYPE_INVALID, blk->num_dst, -1));
    GD_CHECK(check_tensor(ctx, "mean aggregation backward", "dx", dx, dout->dtype, -1, dout->cols));
    GD_REQUIRE(dx->rows >= blk->num_src, GD_ERR_INVALID_ARG,
               "mean aggregation backward: dx has %lld rows but the block %lld source nodes",
               (long long)dx->rows, (long long)blk->num_src);
    GD_CHECK(ctx->be->mean_agg_backward(ctx, blk, dout, dx));
fail:
    return st;
}

gd_status gd__nn_relu(const gd__nn_ctx *ctx, const gd__nn_tensor *x, gd__nn_tensor *y) {
    gd_status st = GD_OK;
    GD_CHECK(check_ctx(ctx, "relu"));
    GD_CHECK(check_any(ctx, "relu", "x", x));
    GD_CHECK(check_like(ctx, "relu", "y", y, x));
    GD_CHECK(ctx->be->relu(ctx, x, y));
fail:
    return st;
}

gd_status gd__nn_relu_backward(const gd__nn_ctx *ctx, const gd__nn_tensor *y,
                               const gd__nn_tensor *dy, gd__nn_tensor *dx) {
    gd_status st = GD_OK;
    GD_CHECK(check_ctx(ctx, "relu backward"));
    GD_CHECK(check_any(ctx, "relu backward", "y", y));
    GD_CHECK(check_like(ctx, "relu backward", "dy", dy, y));
    GD_CHECK(check_like(ctx, "relu backward", "dx", dx, y));
    GD_CHECK(ctx->be->relu_backward(ctx, y, dy, dx));
fail:
    return st;
}

static gd_status check_dropout(const gd__nn_ctx *ctx, const char *op, double p,
                               const gd__nn_tensor *x, gd__nn_tensor *y) {
    gd_status st = GD_OK;
    GD_CHECK(check_ctx(ctx, op));
    GD_REQUIRE(p >= 0.0 && p < 1.0, GD_ERR_INVALID_ARG, "%s: p = %g is not in [0, 1)", op, p);
    GD_CHECK(check_any(ctx, op, "input", x));
    GD_CHECK(check_like(ctx, op, "output", y, x));
fail:
    return st;
}

gd_status gd__nn_dropout(const gd__nn_ctx *ctx, double p, uint64_t seed, uint32_t stream,
                         const int64_t *row_ids, const gd__nn_tensor *x, gd__nn_tensor *y) {
    gd_status st = GD_OK;
    GD_CHECK(check_dropout(ctx, "dropout", p, x, y));
    GD_CHECK(ctx->be->dropout(ctx, p, seed, stream, row_ids, x, y));
fail:
    return st;
}

gd_status gd__nn_dropout_backward(const gd__nn_ctx *ctx, double p, uint64_t seed, uint32_t stream,
                                  const int64_t *row_ids, const gd__nn_tensor *dy,
                                  gd__nn_tensor *dx) {
    gd_status st = GD_OK;
    GD_CHECK(check_dropout(ctx, "dropout backward", p, dy, dx));
    GD_CHECK(ctx->be->dropout_backward(ctx, p, seed, stream, row_ids, dy, dx));
fail:
    return st;
}

gd_status gd__nn_softmax_xent(const gd__nn_ctx *ctx, const gd__nn_tensor *logits,
                              const int64_t *labels, double scale, gd__nn_tensor *loss,
                              gd__nn_tensor *dlogits) {
    gd_status st = GD_OK;
    const char *op = "softmax cross-entropy";
    GD_CHECK(check_ctx(ctx, op));
    GD_CHECK(check_any(ctx, op, "logits", logits));
    GD_REQUIRE(logits->cols > 0, GD_ERR_INVALID_ARG, "%s: logits have no classes", op);
    GD_REQUIRE(labels || logits->rows == 0, GD_ERR_INVALID_ARG, "%s: labels are NULL", op);
    GD_CHECK(check_tensor(ctx, op, "loss", loss, logits->dtype, 1, 1));
    if (dlogits) GD_CHECK(check_like(ctx, op, "dlogits", dlogits, logits));
    GD_CHECK(ctx->be->softmax_xent(ctx, logits, labels, scale, loss, dlogits));
fail:
    return st;
}

gd_status gd__nn_accuracy(const gd__nn_ctx *ctx, const gd__nn_tensor *logits, const int64_t *labels,
                          int64_t *correct) {
    gd_status st = GD_OK;
    GD_CHECK(check_ctx(ctx, "accuracy"));
    GD_CHECK(check_any(ctx, "accuracy", "logits", logits));
    GD_REQUIRE(logits->cols > 0, GD_ERR_INVALID_ARG, "accuracy: logits have no classes");
    GD_REQUIRE((labels || logits->rows == 0) && correct, GD_ERR_INVALID_ARG,
               "accuracy: labels or correct is NULL");
    GD_CHECK(ctx->be->accuracy(ctx, logits, labels, correct));
fail:
    return st;
}

/* ------------------------------------------------------------ grouped GEMM */

gd_status gd__nn_grouped_create(const gd__nn_ctx *ctx, gd_dtype dtype, int64_t scratch_elems,
                                gd__nn_grouped *plan) {
    gd_status st = GD_OK;
    int64_t on = 1;
    GD_CHECK(check_ctx(ctx, "grouped GEMM plan"));
    GD_REQUIRE(plan && scratch_elems >= 0, GD_ERR_INVALID_ARG,
               "grouped GEMM plan: no plan, or %lld scratch elements", (long long)scratch_elems);
    memset(plan, 0, sizeof *plan);
    plan->scratch = gd__nn_view(NULL, dtype, ctx->device, 0, 0);
    GD_CHECK(gd_param_get_int("GD_NN_GROUPED", &on));
    plan->grouped = on != 0 && ctx->be->gemm_grouped != NULL;
    /* One product at a time accumulates in place (beta 1): only grouped calls use scratch. */
    if (plan->grouped && scratch_elems > 0)
        GD_CHECK(gd__nn_tensor_alloc(ctx, dtype, 1, scratch_elems, &plan->scratch));
    if (plan->grouped && ctx->be->grouped_init) GD_CHECK(ctx->be->grouped_init(ctx, plan));
    return GD_OK;
fail:
    if (plan) gd__nn_grouped_destroy(ctx, plan);
    return st;
}

int gd__nn_grouped_wanted(void) {
    int64_t on = 0;
    return gd_param_get_int("GD_NN_GROUPED", &on) == GD_OK && on != 0;
}

void gd__nn_grouped_destroy(const gd__nn_ctx *ctx, gd__nn_grouped *plan) {
    if (!plan || !ctx || !ctx->be) return;
    if (plan->state && ctx->be->grouped_release) ctx->be->grouped_release(ctx, plan);
    plan->state = NULL;
    gd__nn_tensor_free(ctx, &plan->scratch);
}

/* The bytes [lo, hi) of a contiguous tensor (empty: lo == hi). */
static void span(const gd__nn_tensor *t, uintptr_t *lo, uintptr_t *hi) {
    *lo = (uintptr_t)t->data;
    *hi = *lo + (uintptr_t)tensor_bytes(t);
}

/* The first earlier group whose output overlaps group j's (-1: none); the check made it so. */
static int family_of(const gd__nn_gemm_group *g, int j) {
    for (int i = 0; i < j; i++)
        if (g[i].c.data == g[j].c.data && tensor_bytes(&g[i].c) && tensor_bytes(&g[j].c))
            return i;
    return -1;
}

int64_t gd__nn_gemm_grouped_scratch(int count, const gd__nn_gemm_group *g) {
    int64_t need = 0;
    for (int j = 0; j < count; j++)
        if (family_of(g, j) >= 0) need += gd__nn_scratch_elems(g[j].c.rows, g[j].c.cols);
    return need;
}

/* Group j as gd__nn_gemm checks a GEMM, its bias, and its output against the earlier ones'. */
static gd_status check_gemm_group(const gd__nn_ctx *ctx, const gd__nn_gemm_group *g, int j) {
    gd_status st = GD_OK;
    const char *op = "grouped GEMM";
    const gd__nn_gemm_group *x = &g[j];
    GD_CHECK(check_any(ctx, op, "C", &x->c));
    GD_CHECK(check_tensor(ctx, op, "A", &x->a, x->c.dtype, -1, -1));
    GD_CHECK(check_tensor(ctx, op, "B", &x->b, x->c.dtype, -1, -1));
    const int64_t m = x->ta ? x->a.cols : x->a.rows, k = x->ta ? x->a.rows : x->a.cols;
    const int64_t kb = x->tb ? x->b.cols : x->b.rows, n = x->tb ? x->b.rows : x->b.cols;
    GD_REQUIRE(k == kb && x->c.rows == m && x->c.cols == n, GD_ERR_INVALID_ARG,
               "%s: group %d: op(A) is %lld x %lld, op(B) %lld x %lld and C %lld x %lld", op, j,
               (long long)m, (long long)k, (long long)kb, (long long)n, (long long)x->c.rows,
               (long long)x->c.cols);
    GD_REQUIRE(tensor_bytes(&x->c) == 0 ||
                   (x->c.data != x->a.data && x->c.data != x->b.data &&
                    (!x->has_bias || x->c.data != x->bias.data)),
               GD_ERR_INVALID_ARG, "%s: group %d: C aliases an input", op, j);
    if (x->has_bias) GD_CHECK(check_tensor(ctx, op, "bias", &x->bias, x->c.dtype, 1, n));
    uintptr_t lo, hi;
    span(&x->c, &lo, &hi);
    for (int i = 0; i < j && lo < hi; i++) {
        uintptr_t li, hi_i;
        span(&g[i].c, &li, &hi_i);
        if (li >= hi_i || hi <= li || hi_i <= lo) continue;
        GD_REQUIRE(g[i].c.data == x->c.data && g[i].c.cols == x->c.cols &&
                       g[i].c.dtype == x->c.dtype,
                   GD_ERR_INVALID_ARG,
                   "%s: the outputs of groups %d (%lld x %lld) and %d (%lld x %lld) overlap "
                   "without one being a row prefix of the other",
                   op, i, (long long)g[i].c.rows, (long long)g[i].c.cols, j, (long long)x->c.rows,
                   (long long)x->c.cols);
        GD_REQUIRE(x->accumulate, GD_ERR_INVALID_ARG,
                   "%s: group %d overwrites (accumulate 0) the output that group %d wrote; only "
                   "the first writer of an output may overwrite it",
                   op, j, i);
    }
fail:
    return st;
}

/* One product at a time through the backend's GEMM and bias add: the per-group path. */
static gd_status gemm_groups_each(const gd__nn_ctx *ctx, int count, const gd__nn_gemm_group *g) {
    gd_status st = GD_OK;
    for (int j = 0; j < count; j++) {
        gd__nn_tensor c = g[j].c;
        GD_CHECK(ctx->be->gemm(ctx, g[j].ta, g[j].tb, 1.0, &g[j].a, &g[j].b,
                               g[j].accumulate ? 1.0 : 0.0, &c));
        if (g[j].has_bias) GD_CHECK(ctx->be->add_bias(ctx, &c, &g[j].bias));
    }
fail:
    return st;
}

gd_status gd__nn_gemm_grouped(const gd__nn_ctx *ctx, gd__nn_grouped *plan, int count,
                              const gd__nn_gemm_group *g) {
    gd_status st = GD_OK;
    const char *op = "grouped GEMM";
    GD_CHECK(check_ctx(ctx, op));
    GD_REQUIRE(plan && count >= 0 && (g || count == 0), GD_ERR_INVALID_ARG,
               "%s: no plan, or %d groups", op, count);
    for (int j0 = 0; j0 < count; j0 += GD__NN_GROUP_MAX) {
        const int n = count - j0 < GD__NN_GROUP_MAX ? count - j0 : GD__NN_GROUP_MAX;
        for (int j = 0; j < n; j++) GD_CHECK(check_gemm_group(ctx, g + j0, j));
        const int64_t need = plan->grouped ? gd__nn_gemm_grouped_scratch(n, g + j0) : 0;
        GD_REQUIRE(need <= gd__nn_numel(&plan->scratch), GD_ERR_RANGE,
                   "%s: groups %d to %d sum into shared outputs and need %lld scratch elements, "
                   "but the plan has %lld (the model sized it too small)",
                   op, j0, j0 + n - 1, (long long)need, (long long)gd__nn_numel(&plan->scratch));
        GD_REQUIRE(need == 0 || plan->scratch.dtype == g[j0].c.dtype, GD_ERR_INVALID_ARG,
                   "%s: the plan's scratch is %s, the groups %s", op,
                   gd_dtype_name(plan->scratch.dtype), gd_dtype_name(g[j0].c.dtype));
        if (plan->grouped && ctx->be->gemm_grouped)
            GD_CHECK(ctx->be->gemm_grouped(ctx, plan, n, g + j0));
        else
            GD_CHECK(gemm_groups_each(ctx, n, g + j0));
    }
fail:
    return st;
}

gd_status gd__nn_bias_grad_grouped(const gd__nn_ctx *ctx, int count,
                                   const gd__nn_bias_grad_group *g) {
    gd_status st = GD_OK;
    const char *op = "grouped bias gradient";
    GD_CHECK(check_ctx(ctx, op));
    GD_REQUIRE(count >= 0 && (g || count == 0), GD_ERR_INVALID_ARG, "%s: %d groups", op, count);
    for (int j = 0; j < count; j++) {
        GD_CHECK(check_any(ctx, op, "dy", &g[j].dy));
        GD_CHECK(check_tensor(ctx, op, "db", &g[j].db, g[j].dy.dtype, 1, g[j].dy.cols));
        uintptr_t lo, hi;
        span(&g[j].db, &lo, &hi);
        for (int i = 0; i < j; i++) {
            uintptr_t li, hi_i;
            span(&g[i].db, &li, &hi_i);
            GD_REQUIRE(lo >= hi || li >= hi_i || hi <= li || hi_i <= lo, GD_ERR_INVALID_ARG,
                       "%s: groups %d and %d write overlapping db", op, i, j);
        }
    }
    for (int j0 = 0; j0 < count; j0 += GD__NN_GROUP_MAX) {
        const int n = count - j0 < GD__NN_GROUP_MAX ? count - j0 : GD__NN_GROUP_MAX;
        if (ctx->be->bias_grad_grouped) {
            GD_CHECK(ctx->be->bias_grad_grouped(ctx, n, g + j0));
        } else {
            for (int j = j0; j < j0 + n; j++) {
                gd__nn_tensor db = g[j].db;
                GD_CHECK(ctx->be->bias_grad(ctx, &g[j].dy, &db, g[j].accumulate));
            }
        }
    }
fail:
    return st;
}

gd_status gd__nn_linear_grouped(const gd__nn_ctx *ctx, gd__nn_grouped *plan, int count,
                                const gd__nn_linear_group *g) {
    gd_status st = GD_OK;
    gd__nn_gemm_group gg[GD__NN_GROUP_MAX];
    GD_CHECK(check_ctx(ctx, "grouped linear"));
    GD_REQUIRE(count >= 0 && (g || count == 0), GD_ERR_INVALID_ARG, "grouped linear: %d groups",
               count);
    for (int j0 = 0; j0 < count; j0 += GD__NN_GROUP_MAX) {
        const int n = count - j0 < GD__NN_GROUP_MAX ? count - j0 : GD__NN_GROUP_MAX;
        for (int j = 0; j < n; j++) {
            const gd__nn_linear_group *x = &g[j0 + j];
            gd__nn_gemm_group y = {GD__NN_N, GD__NN_N, x->x, x->w, x->y, x->b, x->has_bias,
                                   x->accumulate};
            gg[j] = y;
        }
        GD_CHECK(gd__nn_gemm_grouped(ctx, plan, n, gg));
    }
fail:
    return st;
}

gd_status gd__nn_linear_backward_grouped(const gd__nn_ctx *ctx, gd__nn_grouped *plan, int count,
                                         const gd__nn_linear_grad_group *g) {
    gd_status st = GD_OK;
    const char *op = "grouped linear backward";
    gd__nn_gemm_group gg[GD__NN_GROUP_MAX];
    gd__nn_bias_grad_group bg[GD__NN_GROUP_MAX / 2];
    GD_CHECK(check_ctx(ctx, op));
    GD_REQUIRE(count >= 0 && (g || count == 0), GD_ERR_INVALID_ARG, "%s: %d groups", op, count);
    for (int j0 = 0; j0 < count; j0 += GD__NN_GROUP_MAX / 2) {
        const int n = count - j0 < GD__NN_GROUP_MAX / 2 ? count - j0 : GD__NN_GROUP_MAX / 2;
        int ng = 0, nb = 0;
        for (int j = 0; j < n; j++) {
            const gd__nn_linear_grad_group *x = &g[j0 + j];
            /* The shapes as gd__nn_linear_backward names them; the GEMM checks redo the rest. */
            GD_CHECK(check_any(ctx, op, "x", &x->x));
            GD_CHECK(check_tensor(ctx, op, "W", &x->w, x->x.dtype, x->x.cols, -1));
            GD_CHECK(check_tensor(ctx, op, "dy", &x->dy, x->x.dtype, x->x.rows, x->w.cols));
            if (x->want_dx) {
                gd__nn_gemm_group d = {GD__NN_N, GD__NN_T, x->dy, x->w, x->dx,
                                       x->dx, 0, x->accumulate_dx};
                gg[ng++] = d;
            }
            gd__nn_gemm_group w = {GD__NN_T, GD__NN_N, x->x, x->dy, x->dw, x->dw, 0,
                                   x->accumulate_dw};
            gg[ng++] = w;
            if (x->has_db) {
                gd__nn_bias_grad_group b = {x->dy, x->db, x->accumulate_dw};
                bg[nb++] = b;
            }
        }
        GD_CHECK(gd__nn_gemm_grouped(ctx, plan, ng, gg));
        GD_CHECK(gd__nn_bias_grad_grouped(ctx, nb, bg));
    }
fail:
    return st;
}
