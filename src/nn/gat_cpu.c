/*
 * The graph attention ops on the CPU (gat.h): shape and dtype checks, then the bodies of
 * gat_cpu_impl.h for float32 or float64.
 */
#include "nn/gat.h"

#include <math.h>

#define NN_IMPL "nn/gat_cpu_impl.h"
#include "nn/each_dtype.h"
#undef NN_IMPL

/*
 * The tensors share one float dtype (float32 or float64) and live on `device` (GD__NN_HOST:
 * host memory). The checks below are the CPU entry points' and the CUDA ones' (gat_cuda.cu).
 */
static gd_status same_kind(const char *op, int device, const gd__nn_tensor *const *t, int n) {
    for (int i = 0; i < n; i++) {
        if (!t[i] || !t[i]->data)
            return gd__error(GD_ERR_INVALID_ARG, "%s: tensor %d is missing", op, i);
        if (t[i]->device != device)
            return gd__error(GD_ERR_INVALID_ARG, "%s: tensor %d is not in the memory of %s", op, i,
                             device == GD__NN_HOST ? "the host" : "the op's GPU");
        if (t[i]->dtype != t[0]->dtype ||
            (t[0]->dtype != GD_DTYPE_FLOAT32 && t[0]->dtype != GD_DTYPE_FLOAT64))
            return gd__error(GD_ERR_INVALID_ARG,
                             "%s: tensors must all be float32 or all float64 (tensor %d is %s)", op,
                             i, gd_dtype_name(t[i]->dtype));
    }
    return GD_OK;
}

static gd_status shape(const char *op, const char *name, const gd__nn_tensor *t, int64_t rows,
                       int64_t cols) {
    if (t->rows == rows && t->cols == cols) return GD_OK;
    return gd__error(GD_ERR_INVALID_ARG, "%s: %s is %lld x %lld, expected %lld x %lld", op, name,
                     (long long)t->rows, (long long)t->cols, (long long)rows, (long long)cols);
}

#define F64(t) ((t)->dtype == GD_DTYPE_FLOAT64)
/* The body fn of gat_cpu_impl.h for t's dtype, with the same arguments. */
#define BY_DTYPE(t, fn, ...)                                                                       \
    do {                                                                                           \
        if (F64(t))                                                                                \
            fn##_f64(__VA_ARGS__);                                                                 \
        else                                                                                       \
            fn##_f32(__VA_ARGS__);                                                                 \
    } while (0)

gd_status gd__gat_node_scores_check(int device, const gd__nn_tensor *h, const gd__nn_tensor *a_src,
                                    const gd__nn_tensor *a_dst, int64_t num_dst,
                                    gd__nn_tensor *ssrc, gd__nn_tensor *sdst) {
    gd_status st = GD_OK;
    static const char op[] = "gat node scores";
    const gd__nn_tensor *all[] = {h, a_src, a_dst, ssrc, sdst};
    GD_CHECK(same_kind(op, device, all, 5));
    const int64_t H = a_src->rows, F = a_src->cols;
    GD_REQUIRE(num_dst >= 0 && num_dst <= h->rows, GD_ERR_INVALID_ARG,
               "%s: %lld destinations of %lld sources", op, (long long)num_dst, (long long)h->rows);
    GD_CHECK(shape(op, "h", h, h->rows, H * F));
    GD_CHECK(shape(op, "a_dst", a_dst, H, F));
    GD_CHECK(shape(op, "ssrc", ssrc, h->rows, H));
    GD_CHECK(shape(op, "sdst", sdst, num_dst, H));
fail:
    return st;
}

gd_status gd__gat_node_scores_cpu(const gd__nn_tensor *h, const gd__nn_tensor *a_src,
                                  const gd__nn_tensor *a_dst, int64_t num_dst, gd__nn_tensor *ssrc,
                                  gd__nn_tensor *sdst) {
    gd_status st = GD_OK;
    GD_CHECK(gd__gat_node_scores_check(GD__NN_HOST, h, a_src, a_dst, num_dst, ssrc, sdst));
    const int64_t H = a_src->rows, F = a_src->cols;
    BY_DTYPE(h, gat_scores, h->data, a_src->data, a_dst->data, h->rows, num_dst, H, F, ssrc->data,
             sdst->data);
fail:
    return st;
}

gd_status gd__gat_node_scores_backward_check(int device, const gd__nn_tensor *h,
                                             const gd__nn_tensor *a_src, const gd__nn_tensor *a_dst,
                                             int64_t num_dst, const gd__nn_tensor *dssrc,
                                             const gd__nn_tensor *dsdst, gd__nn_tensor *dh,
                                             gd__nn_tensor *da_src, gd__nn_tensor *da_dst) {
    gd_status st = GD_OK;
    static const char op[] = "gat node scores backward";
    const gd__nn_tensor *all[] = {h, a_src, a_dst, dssrc, dsdst, dh, da_src, da_dst};
    GD_CHECK(same_kind(op, device, all, 8));
    const int64_t H = a_src->rows, F = a_src->cols;
    GD_REQUIRE(num_dst >= 0 && num_dst <= h->rows, GD_ERR_INVALID_ARG,
               "%s: %lld destinations of %lld sources", op, (long long)num_dst, (long long)h->rows);
    GD_CHECK(shape(op, "h", h, h->rows, H * F));
    GD_CHECK(shape(op, "a_dst", a_dst, H, F));
    GD_CHECK(shape(op, "dssrc", dssrc, h->rows, H));
    GD_CHECK(shape(op, "dsdst", dsdst, num_dst, H));
    GD_CHECK(shape(op, "dh", dh, h->rows, H * F));
    GD_CHECK(shape(op, "da_src", da_src, H, F));
    GD_CHECK(shape(op, "da_dst", da_dst, H, F));
fail:
    return st;
}

gd_status gd__gat_node_scores_backward_cpu(const gd__nn_tensor *h, const gd__nn_tensor *a_src,
                                           const gd__nn_tensor *a_dst, int64_t num_dst,
                                           const gd__nn_tensor *dssrc, const gd__nn_tensor *dsdst,
                                           gd__nn_tensor *dh, gd__nn_tensor *da_src,
                                           gd__nn_tensor *da_dst) {
    gd_status st = GD_OK;
    GD_CHECK(gd__gat_node_scores_backward_check(GD__NN_HOST, h, a_src, a_dst, num_dst, dssrc, dsdst,
                                                dh, da_src, da_dst));
    const int64_t H = a_src->rows, F = a_src->cols;
    BY_DTYPE(h, gat_scores_backward, h->data, a_src->data, a_dst->data, h->rows, num_dst, H, F,
             dssrc->data, dsdst->data, dh->data, da_src->data, da_dst->data);
fail:
    return st;
}

/*
 * The block's destinations are sources (prefix: the block forms; a bipartite relation's are a
 * set of their own) and (host memory only: a device block's arrays are not read here; the
 * kernels skip an edge past the sources) its edges point at sources.
 */
static gd_status check_block(const char *op, const gd_block *blk, int64_t num_src, int device,
                             int prefix) {
    gd_status st = GD_OK;
    GD_REQUIRE(blk && blk->indptr && (blk->indices || blk->num_edges == 0) &&
                   (!prefix || blk->num_dst <= num_src) && blk->num_dst >= 0,
               GD_ERR_INVALID_ARG, "%s: a block of %lld destinations over %lld sources", op,
               blk ? (long long)blk->num_dst : -1LL, (long long)num_src);
    if (device != GD__NN_HOST) return GD_OK;
    GD_REQUIRE(blk->indptr[0] == 0 && blk->indptr[blk->num_dst] == blk->num_edges,
               GD_ERR_INVALID_ARG, "%s: indptr does not span the block's %lld edges", op,
               (long long)blk->num_edges);
    for (int64_t e = 0; e < blk->num_edges; e++)
        GD_REQUIRE(blk->indices[e] >= 0 && blk->indices[e] < num_src, GD_ERR_RANGE,
                   "%s: edge %lld reads source %d of %lld", op, (long long)e, blk->indices[e],
                   (long long)num_src);
fail:
    return st;
}

/* The self rows d + off of num_dst destinations lie within rows sources. */
static gd_status check_offset(const char *op, int64_t off, int64_t num_dst, int64_t rows) {
    gd_status st = GD_OK;
    GD_REQUIRE(off >= 0 && off <= rows - num_dst, GD_ERR_INVALID_ARG,
               "%s: the destinations' own rows %lld..%lld are not among the %lld sources", op,
               (long long)off, (long long)(off + num_dst), (long long)rows);
fail:
    return st;
}

gd_status gd__gat_edge_softmax_check(int device, const gd_block *blk, int64_t self_offset,
                                     const gd__nn_tensor *ssrc, const gd__nn_tensor *sdst,
                                     double slope, gd__nn_tensor *alpha) {
    gd_status st = GD_OK;
    static const char op[] = "gat edge softmax";
    const gd__nn_tensor *all[] = {ssrc, sdst, alpha};
    GD_CHECK(same_kind(op, device, all, 3));
    const int64_t H = ssrc->cols;
    GD_CHECK(check_block(op, blk, ssrc->rows, device, 1));
    GD_CHECK(check_offset(op, self_offset, blk->num_dst, ssrc->rows));
    GD_CHECK(shape(op, "sdst", sdst, blk->num_dst, H));
    GD_CHECK(shape(op, "alpha", alpha, blk->num_edges + blk->num_dst, H));
fail:
    return st;
}

gd_status gd__gat_edge_softmax_at_cpu(const gd_block *blk, int64_t self_offset,
                                      const gd__nn_tensor *ssrc, const gd__nn_tensor *sdst,
                                      double slope, gd__nn_tensor *alpha) {
    gd_status st = GD_OK;
    GD_CHECK(gd__gat_edge_softmax_check(GD__NN_HOST, blk, self_offset, ssrc, sdst, slope, alpha));
    const int64_t H = ssrc->cols;
    BY_DTYPE(ssrc, gat_softmax, blk, self_offset, 1, ssrc->data, sdst->data, slope, H, alpha->data);
fail:
    return st;
}

gd_status gd__gat_edge_softmax_cpu(const gd_block *blk, const gd__nn_tensor *ssrc,
                                   const gd__nn_tensor *sdst, double slope, gd__nn_tensor *alpha) {
    return gd__gat_edge_softmax_at_cpu(blk, 0, ssrc, sdst, slope, alpha);
}

gd_status gd__gat_edge_softmax_backward_check(int device, const gd_block *blk,
                                              const gd__nn_tensor *ssrc, const gd__nn_tensor *sdst,
                                              double slope, const gd__nn_tensor *alpha,
                                              const gd__nn_tensor *dalpha, gd__nn_tensor *dssrc,
                                              gd__nn_tensor *dsdst) {
    gd_status st = GD_OK;
    static const char op[] = "gat edge softmax backward";
    const gd__nn_tensor *all[] = {ssrc, sdst, alpha, dalpha, dssrc, dsdst};
    GD_CHECK(same_kind(op, device, all, 6));
    const int64_t H = ssrc->cols, rows = blk ? blk->num_edges + blk->num_dst : 0;
    GD_CHECK(check_block(op, blk, ssrc->rows, device, 1));
    GD_CHECK(shape(op, "sdst", sdst, blk->num_dst, H));
    GD_CHECK(shape(op, "alpha", alpha, rows, H));
    GD_CHECK(shape(op, "dalpha", dalpha, rows, H));
    GD_CHECK(shape(op, "dssrc", dssrc, ssrc->rows, H));
    GD_CHECK(shape(op, "dsdst", dsdst, blk->num_dst, H));
fail:
    return st;
}

gd_status gd__gat_edge_softmax_backward_cpu(const gd_block *blk, const gd__nn_tensor *ssrc,
                                            const gd__nn_tensor *sdst, double slope,
                                            const gd__nn_tensor *alpha, const gd__nn_tensor *dalpha,
                                            gd__nn_tensor *dssrc, gd__nn_tensor *dsdst) {
    gd_status st = GD_OK;
    GD_CHECK(gd__gat_edge_softmax_backward_check(GD__NN_HOST, blk, ssrc, sdst, slope, alpha, dalpha,
                                                 dssrc, dsdst));
    const int64_t H = ssrc->cols;
    BY_DTYPE(ssrc, gat_softmax_backward, blk, 1, ssrc->data, sdst->data, slope, H, alpha->data,
             dalpha->data, dssrc->data, dsdst->data);
fail:
    return st;
}

gd_status gd__gat_aggregate_check(int device, const gd_block *blk, int64_t self_offset,
                                  const gd__nn_tensor *alpha, const gd__nn_tensor *h,
                                  gd__nn_tensor *out) {
    gd_status st = GD_OK;
    static const char op[] = "gat aggregate";
    const gd__nn_tensor *all[] = {alpha, h, out};
    GD_CHECK(same_kind(op, device, all, 3));
    const int64_t H = alpha->cols;
    GD_REQUIRE(H > 0 && h->cols % H == 0, GD_ERR_INVALID_ARG,
               "%s: h has %lld columns, not a multiple of %lld heads", op, (long long)h->cols,
               (long long)H);
    GD_CHECK(check_block(op, blk, h->rows, device, 1));
    GD_CHECK(check_offset(op, self_offset, blk->num_dst, h->rows));
    GD_CHECK(shape(op, "alpha", alpha, blk->num_edges + blk->num_dst, H));
    GD_CHECK(shape(op, "out", out, blk->num_dst, h->cols));
fail:
    return st;
}

gd_status gd__gat_aggregate_at_cpu(const gd_block *blk, int64_t self_offset,
                                   const gd__nn_tensor *alpha, const gd__nn_tensor *h,
                                   gd__nn_tensor *out) {
    gd_status st = GD_OK;
    GD_CHECK(gd__gat_aggregate_check(GD__NN_HOST, blk, self_offset, alpha, h, out));
    const int64_t H = alpha->cols;
    BY_DTYPE(h, gat_aggregate, blk, self_offset, 1, 0, alpha->data, h->data, H, h->cols / H,
             out->data);
fail:
    return st;
}

gd_status gd__gat_aggregate_cpu(const gd_block *blk, const gd__nn_tensor *alpha,
                                const gd__nn_tensor *h, gd__nn_tensor *out) {
    return gd__gat_aggregate_at_cpu(blk, 0, alpha, h, out);
}

gd_status gd__gat_aggregate_backward_check(int device, const gd_block *blk,
                                           const gd__nn_tensor *alpha, const gd__nn_tensor *h,
                                           const gd__nn_tensor *dout, gd__nn_tensor *dalpha,
                                           gd__nn_tensor *dh) {
    gd_status st = GD_OK;
    static const char op[] = "gat aggregate backward";
    const gd__nn_tensor *all[] = {alpha, h, dout, dalpha, dh};
    GD_CHECK(same_kind(op, device, all, 5));
    const int64_t H = alpha->cols;
    GD_REQUIRE(H > 0 && h->cols % H == 0, GD_ERR_INVALID_ARG,
               "%s: h has %lld columns, not a multiple of %lld heads", op, (long long)h->cols,
               (long long)H);
    GD_CHECK(check_block(op, blk, h->rows, device, 1));
    GD_CHECK(shape(op, "alpha", alpha, blk->num_edges + blk->num_dst, H));
    GD_CHECK(shape(op, "dout", dout, blk->num_dst, h->cols));
    GD_CHECK(shape(op, "dalpha", dalpha, alpha->rows, H));
    GD_CHECK(shape(op, "dh", dh, h->rows, h->cols));
fail:
    return st;
}

gd_status gd__gat_aggregate_backward_cpu(const gd_block *blk, const gd__nn_tensor *alpha,
                                         const gd__nn_tensor *h, const gd__nn_tensor *dout,
                                         gd__nn_tensor *dalpha, gd__nn_tensor *dh) {
    gd_status st = GD_OK;
    GD_CHECK(gd__gat_aggregate_backward_check(GD__NN_HOST, blk, alpha, h, dout, dalpha, dh));
    const int64_t H = alpha->cols;
    BY_DTYPE(h, gat_aggregate_backward, blk, 1, alpha->data, h->data, H, h->cols / H, dout->data,
             dalpha->data, dh->data);
fail:
    return st;
}

gd_status gd__gat_head_mean_check(int device, const gd__nn_tensor *x, int64_t heads,
                                  gd__nn_tensor *out) {
    gd_status st = GD_OK;
    static const char op[] = "gat head mean";
    const gd__nn_tensor *all[] = {x, out};
    GD_CHECK(same_kind(op, device, all, 2));
    GD_REQUIRE(heads > 0 && x->cols % heads == 0, GD_ERR_INVALID_ARG,
               "%s: %lld columns are not %lld heads", op, (long long)x->cols, (long long)heads);
    GD_CHECK(shape(op, "out", out, x->rows, x->cols / heads));
fail:
    return st;
}

gd_status gd__gat_head_mean_cpu(const gd__nn_tensor *x, int64_t heads, gd__nn_tensor *out) {
    gd_status st = GD_OK;
    GD_CHECK(gd__gat_head_mean_check(GD__NN_HOST, x, heads, out));
    BY_DTYPE(x, gat_head_mean, x->data, x->rows, heads, x->cols / heads, out->data);
fail:
    return st;
}

gd_status gd__gat_head_mean_backward_check(int device, const gd__nn_tensor *dout, int64_t heads,
                                           gd__nn_tensor *dx) {
    gd_status st = GD_OK;
    static const char op[] = "gat head mean backward";
    const gd__nn_tensor *all[] = {dout, dx};
    GD_CHECK(same_kind(op, device, all, 2));
    GD_REQUIRE(heads > 0, GD_ERR_INVALID_ARG, "%s: %lld heads", op, (long long)heads);
    GD_CHECK(shape(op, "dx", dx, dout->rows, dout->cols * heads));
fail:
    return st;
}

gd_status gd__gat_head_mean_backward_cpu(const gd__nn_tensor *dout, int64_t heads,
                                         gd__nn_tensor *dx) {
    gd_status st = GD_OK;
    GD_CHECK(gd__gat_head_mean_backward_check(GD__NN_HOST, dout, heads, dx));
    BY_DTYPE(dout, gat_head_mean_backward, dout->data, dout->rows, heads, dout->cols, dx->data);
fail:
    return st;
}

gd_status gd__gat_edge_keys_cpu(const gd_block *blk, const int64_t *node_ids, int64_t *keys) {
    gd_status st = GD_OK;
    GD_REQUIRE(blk && node_ids && keys, GD_ERR_INVALID_ARG, "gat edge keys: NULL argument");
    GD_CHECK(check_block("gat edge keys", blk, blk->num_src, GD__NN_HOST, 1));
    for (int64_t d = 0; d < blk->num_dst; d++) {
        for (int32_t e = blk->indptr[d]; e < blk->indptr[d + 1]; e++)
            keys[e] = gd__gat_edge_key(node_ids[d], node_ids[blk->indices[e]]);
        keys[blk->num_edges + d] = gd__gat_edge_key(node_ids[d], node_ids[d]);
    }
fail:
    return st;
}

/* ------------------------------------------------- bipartite relations (R-GAT) */

gd_status gd__gat_bip_softmax_check(int device, const gd_block *blk, const gd__nn_tensor *ssrc,
                                    const gd__nn_tensor *sdst, double slope,
                                    gd__nn_tensor *alpha) {
    gd_status st = GD_OK;
    static const char op[] = "gat bipartite softmax";
    const gd__nn_tensor *all[] = {ssrc, sdst, alpha};
    GD_CHECK(same_kind(op, device, all, 3));
    const int64_t H = ssrc->cols;
    GD_CHECK(check_block(op, blk, ssrc->rows, device, 0));
    GD_CHECK(shape(op, "sdst", sdst, blk->num_dst, H));
    GD_CHECK(shape(op, "alpha", alpha, blk->num_edges, H));
fail:
    return st;
}

gd_status gd__gat_bip_softmax_cpu(const gd_block *blk, const gd__nn_tensor *ssrc,
                                  const gd__nn_tensor *sdst, double slope, gd__nn_tensor *alpha) {
    gd_status st = GD_OK;
    GD_CHECK(gd__gat_bip_softmax_check(GD__NN_HOST, blk, ssrc, sdst, slope, alpha));
    BY_DTYPE(ssrc, gat_softmax, blk, 0, 0, ssrc->data, sdst->data, slope, ssrc->cols,
             alpha->data);
fail:
    return st;
}

gd_status gd__gat_bip_softmax_backward_check(int device, const gd_block *blk,
                                             const gd__nn_tensor *ssrc, const gd__nn_tensor *sdst,
                                             double slope, const gd__nn_tensor *alpha,
                                             const gd__nn_tensor *dalpha, gd__nn_tensor *dssrc,
                                             gd__nn_tensor *dsdst) {
    gd_status st = GD_OK;
    static const char op[] = "gat bipartite softmax backward";
    const gd__nn_tensor *all[] = {ssrc, sdst, alpha, dalpha, dssrc, dsdst};
    GD_CHECK(same_kind(op, device, all, 6));
    const int64_t H = ssrc->cols;
    GD_CHECK(check_block(op, blk, ssrc->rows, device, 0));
    GD_CHECK(shape(op, "sdst", sdst, blk->num_dst, H));
    GD_CHECK(shape(op, "alpha", alpha, blk->num_edges, H));
    GD_CHECK(shape(op, "dalpha", dalpha, blk->num_edges, H));
    GD_CHECK(shape(op, "dssrc", dssrc, ssrc->rows, H));
    GD_CHECK(shape(op, "dsdst", dsdst, blk->num_dst, H));
fail:
    return st;
}

gd_status gd__gat_bip_softmax_backward_cpu(const gd_block *blk, const gd__nn_tensor *ssrc,
                                           const gd__nn_tensor *sdst, double slope,
                                           const gd__nn_tensor *alpha, const gd__nn_tensor *dalpha,
                                           gd__nn_tensor *dssrc, gd__nn_tensor *dsdst) {
    gd_status st = GD_OK;
    GD_CHECK(gd__gat_bip_softmax_backward_check(GD__NN_HOST, blk, ssrc, sdst, slope, alpha, dalpha,
                                                dssrc, dsdst));
    BY_DTYPE(ssrc, gat_softmax_backward, blk, 0, ssrc->data, sdst->data, slope, ssrc->cols,
             alpha->data, dalpha->data, dssrc->data, dsdst->data);
fail:
    return st;
}

gd_status gd__gat_bip_aggregate_check(int device, const gd_block *blk, const gd__nn_tensor *alpha,
                                      const gd__nn_tensor *h, gd__nn_tensor *out) {
    gd_status st = GD_OK;
    static const char op[] = "gat bipartite aggregate";
    const gd__nn_tensor *all[] = {alpha, h, out};
    GD_CHECK(same_kind(op, device, all, 3));
    const int64_t H = alpha->cols;
    GD_REQUIRE(H > 0 && h->cols % H == 0, GD_ERR_INVALID_ARG,
               "%s: h has %lld columns, not a multiple of %lld heads", op, (long long)h->cols,
               (long long)H);
    GD_CHECK(check_block(op, blk, h->rows, device, 0));
    GD_CHECK(shape(op, "alpha", alpha, blk->num_edges, H));
    GD_CHECK(shape(op, "out", out, blk->num_dst, h->cols));
fail:
    return st;
}

gd_status gd__gat_bip_aggregate_cpu(const gd_block *blk, const gd__nn_tensor *alpha,
                                    const gd__nn_tensor *h, int accumulate, gd__nn_tensor *out) {
    gd_status st = GD_OK;
    GD_CHECK(gd__gat_bip_aggregate_check(GD__NN_HOST, blk, alpha, h, out));
    const int64_t H = alpha->cols;
    BY_DTYPE(h, gat_aggregate, blk, 0, 0, accumulate != 0, alpha->data, h->data, H, h->cols / H,
             out->data);
fail:
    return st;
}

gd_status gd__gat_bip_aggregate_backward_check(int device, const gd_block *blk,
                                               const gd__nn_tensor *alpha, const gd__nn_tensor *h,
                                               const gd__nn_tensor *dout, gd__nn_tensor *dalpha,
                                               gd__nn_tensor *dh) {
    gd_status st = GD_OK;
    static const char op[] = "gat bipartite aggregate backward";
    const gd__nn_tensor *all[] = {alpha, h, dout, dalpha, dh};
    GD_CHECK(same_kind(op, device, all, 5));
    const int64_t H = alpha->cols;
    GD_REQUIRE(H > 0 && h->cols % H == 0, GD_ERR_INVALID_ARG,
               "%s: h has %lld columns, not a multiple of %lld heads", op, (long long)h->cols,
               (long long)H);
    GD_CHECK(check_block(op, blk, h->rows, device, 0));
    GD_CHECK(shape(op, "alpha", alpha, blk->num_edges, H));
    GD_CHECK(shape(op, "dout", dout, blk->num_dst, h->cols));
    GD_CHECK(shape(op, "dalpha", dalpha, blk->num_edges, H));
    GD_CHECK(shape(op, "dh", dh, h->rows, h->cols));
fail:
    return st;
}

gd_status gd__gat_bip_aggregate_backward_cpu(const gd_block *blk, const gd__nn_tensor *alpha,
                                             const gd__nn_tensor *h, const gd__nn_tensor *dout,
                                             gd__nn_tensor *dalpha, gd__nn_tensor *dh) {
    gd_status st = GD_OK;
    GD_CHECK(gd__gat_bip_aggregate_backward_check(GD__NN_HOST, blk, alpha, h, dout, dalpha, dh));
    const int64_t H = alpha->cols;
    BY_DTYPE(h, gat_aggregate_backward, blk, 0, alpha->data, h->data, H, h->cols / H, dout->data,
             dalpha->data, dh->data);
fail:
    return st;
}

gd_status gd__gat_bip_edge_keys_cpu(const gd_block *blk, const int64_t *src_ids,
                                    const int64_t *dst_ids, int64_t *keys) {
    gd_status st = GD_OK;
    GD_REQUIRE(blk && src_ids && dst_ids && (keys || blk->num_edges == 0), GD_ERR_INVALID_ARG,
               "gat bipartite edge keys: NULL argument");
    GD_CHECK(check_block("gat bipartite edge keys", blk, blk->num_src, GD__NN_HOST, 0));
    for (int64_t d = 0; d < blk->num_dst; d++)
        for (int32_t e = blk->indptr[d]; e < blk->indptr[d + 1]; e++)
            keys[e] = gd__gat_edge_key(dst_ids[d], src_ids[blk->indices[e]]);
fail:
    return st;
}
