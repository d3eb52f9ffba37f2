/*
 * The graph attention ops on a GPU (gat.h), float32: a thread per (node, head) for the scores
 * and the softmax, a warp per (destination, head) for the aggregation with the lanes across
 * the head's features, a thread per element for the head mean. The forwards sum in the CPU's
 * order and in double, as the CPU does, so they agree with it to float rounding; the backwards
 * scatter into the sources with atomic adds (not bit-reproducible). An edge past the block's
 * sources is skipped. The bipartite forms of R-GAT's relations (gat.h) run the same softmax and
 * aggregation kernels with the self loop off. The arguments are checked by the checks the CPU
 * entry points use (gat_cpu.c). CUDA only.
 */
#include "nn/gat.h"
#include "nn/ops_cuda.cuh"

#include <math.h>

namespace {

__device__ __forceinline__ float leaky(float z, float slope) {
    return z > 0.0f ? z : slope * z;
}

/* ssrc[v, k] and, for v < nd, sdst[v, k]: a thread per (v, k). */
__global__ void scores_kernel(const float *h, const float *a_src, const float *a_dst, long long ns,
                              long long nd, int H, int F, float *ssrc, float *sdst) {
    FOR_EACH(i, ns * H) {
        const long long v = i / H;
        const int k = (int)(i % H);
        const float *hv = h + v * H * F + (long long)k * F;
        double s = 0, t = 0;
        for (int f = 0; f < F; f++) {
            s += (double)hv[f] * (double)a_src[k * F + f];
            if (v < nd) t += (double)hv[f] * (double)a_dst[k * F + f];
        }
        ssrc[i] = (float)s;
        if (v < nd) sdst[i] = (float)t;
    }
}

/* dh[v, kF + f] += dssrc[v, k] a_src[k, f] (+ the destination's term): a thread per element. */
__global__ void scores_backward_dh_kernel(const float *a_src, const float *a_dst, long long ns,
                                          long long nd, int H, int F, const float *dssrc,
                                          const float *dsdst, float *dh) {
    FOR_EACH(i, ns * H * F) {
        const long long v = i / ((long long)H * F);
        const int kf = (int)(i % ((long long)H * F)), k = kf / F;
        double g = (double)dssrc[v * H + k] * (double)a_src[kf];
        if (v < nd) g += (double)dsdst[v * H + k] * (double)a_dst[kf];
        dh[i] += (float)g;
    }
}

/*
 * da_src[k, f] += sum_v dssrc[v, k] h[v, kF + f] (and da_dst over the destinations): a block
 * per (k, f), its threads over the nodes, then a block reduction.
 */
__global__ void scores_backward_da_kernel(const float *h, long long ns, long long nd, int H, int F,
                                          const float *dssrc, const float *dsdst, float *da_src,
                                          float *da_dst) {
    __shared__ double part[2][BLOCK_THREADS];
    const int kf = blockIdx.x, k = kf / F;
    double gs = 0, gd = 0;
    for (long long v = threadIdx.x; v < ns; v += blockDim.x) {
        const double hv = (double)h[v * H * F + kf];
        gs += (double)dssrc[v * H + k] * hv;
        if (v < nd) gd += (double)dsdst[v * H + k] * hv;
    }
    part[0][threadIdx.x] = gs;
    part[1][threadIdx.x] = gd;
    __syncthreads();
    for (int w = blockDim.x / 2; w > 0; w /= 2) {
        if ((int)threadIdx.x < w) {
            part[0][threadIdx.x] += part[0][threadIdx.x + w];
            part[1][threadIdx.x] += part[1][threadIdx.x + w];
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        da_src[kf] += (float)part[0][0];
        da_dst[kf] += (float)part[1][0];
    }
}

/*
 * The softmax of a destination's edges and (loops set) its self loop, per head: a thread per
 * (d, k). Without loops (a bipartite relation) a destination without edges has no weights and
 * its own row d + off is never read (d may be past the sources).
 */
__global__ void softmax_kernel(const int *indptr, const int *indices, long long nd, long long ns,
                               long long ne, long long off, int loops, int H, const float *ssrc,
                               const float *sdst, float slope, float *alpha) {
    FOR_EACH(i, nd * H) {
        const long long d = i / H;
        const int k = (int)(i % H);
        const int e0 = indptr[d], e1 = indptr[d + 1];
        if (!loops && e1 == e0) continue;
        const float sd = sdst[i];
        double m = loops ? (double)leaky(ssrc[(d + off) * H + k] + sd, slope) : -HUGE_VAL;
        double sum = 0;
        for (int e = e0; e < e1; e++)
            if (indices[e] >= 0 && indices[e] < ns)
                m = fmax(m, (double)leaky(ssrc[(long long)indices[e] * H + k] + sd, slope));
        for (int e = e0; e < e1; e++)
            if (indices[e] >= 0 && indices[e] < ns)
                sum += exp((double)leaky(ssrc[(long long)indices[e] * H + k] + sd, slope) - m);
        const double self =
            loops ? exp((double)leaky(ssrc[(d + off) * H + k] + sd, slope) - m) : 0.0;
        sum += self;
        for (int e = e0; e < e1; e++)
            alpha[(long long)e * H + k] =
                indices[e] >= 0 && indices[e] < ns
                    ? (float)(exp((double)leaky(ssrc[(long long)indices[e] * H + k] + sd, slope) -
                                  m) /
                              sum)
                    : 0.0f;
        if (loops) alpha[(ne + d) * H + k] = (float)(self / sum);
    }
}

__global__ void softmax_backward_kernel(const int *indptr, const int *indices, long long nd,
                                        long long ns, long long ne, int loops, int H,
                                        const float *ssrc,
                                        const float *sdst, float slope, const float *alpha,
                                        const float *dalpha, float *dssrc, float *dsdst) {
    FOR_EACH(i, nd * H) {
        const long long d = i / H;
        const int k = (int)(i % H);
        const int e0 = indptr[d], e1 = indptr[d + 1];
        const long long self = (ne + d) * H + k;
        double dot = loops ? (double)alpha[self] * (double)dalpha[self] : 0.0;
        for (int e = e0; e < e1; e++)
            dot += (double)alpha[(long long)e * H + k] * (double)dalpha[(long long)e * H + k];
        double to_dst = 0;
        for (int e = e0; e < e1 + loops; e++) {
            const long long row = e < e1 ? (long long)e * H + k : self;
            const long long s = e < e1 ? (long long)indices[e] : d;
            if (s < 0 || s >= ns) continue;
            const float z = ssrc[s * H + k] + sdst[i];
            const double g =
                (double)alpha[row] * ((double)dalpha[row] - dot) * (z > 0.0f ? 1.0 : slope);
            atomicAdd(dssrc + s * H + k, (float)g);
            to_dst += g;
        }
        dsdst[i] += (float)to_dst;
    }
}

/* The attention dropout's key of each edge row and self loop: a thread per destination. */
__global__ void edge_keys_kernel(const int *indptr, const int *indices, long long nd, long long ns,
                                 long long ne, const long long *node_ids, long long *keys) {
    FOR_EACH(d, nd) {
        for (int e = indptr[d]; e < indptr[d + 1]; e++) {
            const long long s = indices[e];
            keys[e] = s >= 0 && s < ns ? gd__gat_edge_key(node_ids[d], node_ids[s]) : 0;
        }
        keys[ne + d] = gd__gat_edge_key(node_ids[d], node_ids[d]);
    }
}

/* The bipartite form: dst_ids for the destinations, src_ids for the sources, no self loops. */
__global__ void bip_edge_keys_kernel(const int *indptr, const int *indices, long long nd,
                                     long long ns, const long long *src_ids,
                                     const long long *dst_ids, long long *keys) {
    FOR_EACH(d, nd) {
        for (int e = indptr[d]; e < indptr[d + 1]; e++) {
            const long long s = indices[e];
            keys[e] = s >= 0 && s < ns ? gd__gat_edge_key(dst_ids[d], src_ids[s]) : 0;
        }
    }
}

/*
 * out[d, kF + f] (+= with accumulate): a warp per (d, k), the lanes over the head's features;
 * the self loop's term first when loops is set, as the CPU sums.
 */
__global__ void aggregate_kernel(const int *indptr, const int *indices, long long nd, long long ns,
                                 long long ne, long long off, int loops, int accumulate, int H,
                                 int F, const float *alpha, const float *h, float *out) {
    const int lane = threadIdx.x & 31;
    FOR_EACH_WARP(w, nd * H) {
        const long long d = w / H;
        const int k = (int)(w % H);
        for (int f = lane; f < F; f += 32) {
            double s = loops ? (double)alpha[(ne + d) * H + k] *
                                   (double)h[(d + off) * H * F + (long long)k * F + f]
                             : 0.0;
            for (int e = indptr[d]; e < indptr[d + 1]; e++) {
                const long long src = indices[e];
                if (src < 0 || src >= ns) continue;
                s += (double)alpha[(long long)e * H + k] *
                     (double)h[src * H * F + (long long)k * F + f];
            }
            float *o = out + d * H * F + (long long)k * F + f;
            *o = (float)(accumulate ? (double)*o + s : s);
        }
    }
}

/* dalpha of each edge and self loop (a warp's dot over the features) and dh (atomics). */
__global__ void aggregate_backward_kernel(const int *indptr, const int *indices, long long nd,
                                          long long ns, long long ne, int loops, int H, int F,
                                          const float *alpha, const float *h, const float *dout,
                                          float *dalpha, float *dh) {
    const int lane = threadIdx.x & 31;
    FOR_EACH_WARP(w, nd * H) {
        const long long d = w / H;
        const int k = (int)(w % H);
        const float *g = dout + d * H * F + (long long)k * F;
        for (int e = indptr[d]; e < indptr[d + 1] + loops; e++) {
            const bool self = e == indptr[d + 1];
            const long long row = self ? (ne + d) * H + k : (long long)e * H + k;
            const long long s = self ? d : (long long)indices[e];
            if (s < 0 || s >= ns) {
                if (lane == 0) dalpha[row] = 0.0f;
                continue;
            }
            double dot = 0;
            for (int f = lane; f < F; f += 32) {
                const long long at = s * H * F + (long long)k * F + f;
                dot += (double)g[f] * (double)h[at];
                atomicAdd(dh + at, alpha[row] * g[f]);
            }
            for (int o = 16; o > 0; o /= 2) dot += __shfl_down_sync(FULL_MASK, dot, o);
            if (lane == 0) dalpha[row] = (float)dot;
        }
    }
}

__global__ void head_mean_kernel(const float *x, long long rows, int H, int F, float *out) {
    FOR_EACH(i, rows * F) {
        const long long r = i / F;
        const int f = (int)(i % F);
        double s = 0;
        for (int k = 0; k < H; k++) s += (double)x[r * H * F + (long long)k * F + f];
        out[i] = (float)(s / H);
    }
}

__global__ void head_mean_backward_kernel(const float *dout, long long rows, int H, int F,
                                          float *dx) {
    FOR_EACH(i, rows * H * F) {
        const long long r = i / ((long long)H * F);
        const int f = (int)(i % F);
        dx[i] += (float)((double)dout[r * F + f] / H);
    }
}

/* float32 only on the GPU. */
gd_status float32_only(const char *op, const gd__nn_tensor *t) {
    if (t->dtype == GD_DTYPE_FLOAT32) return GD_OK;
    return gd__error(GD_ERR_UNSUPPORTED, "%s on a GPU: float32 only (the CPU has float64)", op);
}

} // namespace

#define F32(p) ((float *)(p)->data)
#define CF32(p) ((const float *)(p)->data)

gd_status gd__gat_node_scores_cuda(const gd__nn_ctx *ctx, const gd__nn_tensor *h,
                                   const gd__nn_tensor *a_src, const gd__nn_tensor *a_dst,
                                   int64_t num_dst, gd__nn_tensor *ssrc, gd__nn_tensor *sdst) {
    OP_ENTER();
    GD_CHECK(gd__gat_node_scores_check(ctx->device, h, a_src, a_dst, num_dst, ssrc, sdst));
    GD_CHECK(float32_only("gat node scores", h));
    if (h->rows * a_src->rows > 0) {
        scores_kernel<<<grid_for(h->rows * a_src->rows, BLOCK_THREADS), BLOCK_THREADS, 0,
                        STREAM(ctx)>>>(CF32(h), CF32(a_src), CF32(a_dst), h->rows, num_dst,
                                       (int)a_src->rows, (int)a_src->cols, F32(ssrc), F32(sdst));
        GD_CUDA_CHECK_LAUNCH();
    }
fail:
    OP_LEAVE();
}

gd_status gd__gat_node_scores_backward_cuda(const gd__nn_ctx *ctx, const gd__nn_tensor *h,
                                            const gd__nn_tensor *a_src, const gd__nn_tensor *a_dst,
                                            int64_t num_dst, const gd__nn_tensor *dssrc,
                                            const gd__nn_tensor *dsdst, gd__nn_tensor *dh,
                                            gd__nn_tensor *da_src, gd__nn_tensor *da_dst) {
    OP_ENTER();
    GD_CHECK(gd__gat_node_scores_backward_check(ctx->device, h, a_src, a_dst, num_dst, dssrc, dsdst,
                                                dh, da_src, da_dst));
    GD_CHECK(float32_only("gat node scores backward", h));
    if (h->rows * a_src->rows * a_src->cols > 0) {
        const int H = (int)a_src->rows, F = (int)a_src->cols;
        scores_backward_dh_kernel<<<grid_for(h->rows * H * F, BLOCK_THREADS), BLOCK_THREADS, 0,
                                    STREAM(ctx)>>>(CF32(a_src), CF32(a_dst), h->rows, num_dst, H, F,
                                                   CF32(dssrc), CF32(dsdst), F32(dh));
        GD_CUDA_CHECK_LAUNCH();
        scores_backward_da_kernel<<<H * F, BLOCK_THREADS, 0, STREAM(ctx)>>>(
            CF32(h), h->rows, num_dst, H, F, CF32(dssrc), CF32(dsdst), F32(da_src), F32(da_dst));
        GD_CUDA_CHECK_LAUNCH();
    }
fail:
    OP_LEAVE();
}

gd_status gd__gat_edge_softmax_at_cuda(const gd__nn_ctx *ctx, const gd_block *blk,
                                       int64_t self_offset, const gd__nn_tensor *ssrc,
                                       const gd__nn_tensor *sdst, double slope,
                                       gd__nn_tensor *alpha) {
    OP_ENTER();
    GD_CHECK(gd__gat_edge_softmax_check(ctx->device, blk, self_offset, ssrc, sdst, slope, alpha));
    GD_CHECK(float32_only("gat edge softmax", ssrc));
    if (blk->num_dst * ssrc->cols > 0) {
        softmax_kernel<<<grid_for(blk->num_dst * ssrc->cols, BLOCK_THREADS), BLOCK_THREADS, 0,
                         STREAM(ctx)>>>(blk->indptr, blk->indices, blk->num_dst, ssrc->rows,
                                        blk->num_edges, self_offset, 1, (int)ssrc->cols, CF32(ssrc),
                                        CF32(sdst), (float)slope, F32(alpha));
        GD_CUDA_CHECK_LAUNCH();
    }
fail:
    OP_LEAVE();
}

gd_status gd__gat_edge_softmax_cuda(const gd__nn_ctx *ctx, const gd_block *blk,
                                    const gd__nn_tensor *ssrc, const gd__nn_tensor *sdst,
                                    double slope, gd__nn_tensor *alpha) {
    return gd__gat_edge_softmax_at_cuda(ctx, blk, 0, ssrc, sdst, slope, alpha);
}

gd_status gd__gat_edge_softmax_backward_cuda(const gd__nn_ctx *ctx, const gd_block *blk,
                                             const gd__nn_tensor *ssrc, const gd__nn_tensor *sdst,
                                             double slope, const gd__nn_tensor *alpha,
                                             const gd__nn_tensor *dalpha, gd__nn_tensor *dssrc,
                                             gd__nn_tensor *dsdst) {
    OP_ENTER();
    GD_CHECK(gd__gat_edge_softmax_backward_check(ctx->device, blk, ssrc, sdst, slope, alpha, dalpha,
                                                 dssrc, dsdst));
    GD_CHECK(float32_only("gat edge softmax backward", ssrc));
    if (blk->num_dst * ssrc->cols > 0) {
        softmax_backward_kernel<<<grid_for(blk->num_dst * ssrc->cols, BLOCK_THREADS), BLOCK_THREADS,
                                  0, STREAM(ctx)>>>(
            blk->indptr, blk->indices, blk->num_dst, ssrc->rows, blk->num_edges, 1,
            (int)ssrc->cols, CF32(ssrc), CF32(sdst), (float)slope, CF32(alpha), CF32(dalpha),
            F32(dssrc), F32(dsdst));
        GD_CUDA_CHECK_LAUNCH();
    }
fail:
    OP_LEAVE();
}

gd_status gd__gat_aggregate_at_cuda(const gd__nn_ctx *ctx, const gd_block *blk, int64_t self_offset,
                                    const gd__nn_tensor *alpha, const gd__nn_tensor *h,
                                    gd__nn_tensor *out) {
    OP_ENTER();
    GD_CHECK(gd__gat_aggregate_check(ctx->device, blk, self_offset, alpha, h, out));
    GD_CHECK(float32_only("gat aggregate", h));
    if (blk->num_dst * alpha->cols > 0) {
        aggregate_kernel<<<grid_for(blk->num_dst * alpha->cols, WARPS_PER_BLOCK), BLOCK_THREADS, 0,
                           STREAM(ctx)>>>(blk->indptr, blk->indices, blk->num_dst, h->rows,
                                          blk->num_edges, self_offset, 1, 0, (int)alpha->cols,
                                          (int)(h->cols / alpha->cols), CF32(alpha), CF32(h),
                                          F32(out));
        GD_CUDA_CHECK_LAUNCH();
    }
fail:
    OP_LEAVE();
}

gd_status gd__gat_aggregate_cuda(const gd__nn_ctx *ctx, const gd_block *blk,
                                 const gd__nn_tensor *alpha, const gd__nn_tensor *h,
                                 gd__nn_tensor *out) {
    return gd__gat_aggregate_at_cuda(ctx, blk, 0, alpha, h, out);
}

gd_status gd__gat_aggregate_backward_cuda(const gd__nn_ctx *ctx, const gd_block *blk,
                                          const gd__nn_tensor *alpha, const gd__nn_tensor *h,
                                          const gd__nn_tensor *dout, gd__nn_tensor *dalpha,
                                          gd__nn_tensor *dh) {
    OP_ENTER();
    GD_CHECK(gd__gat_aggregate_backward_check(ctx->device, blk, alpha, h, dout, dalpha, dh));
    GD_CHECK(float32_only("gat aggregate backward", h));
    if (blk->num_dst * alpha->cols > 0) {
        aggregate_backward_kernel<<<grid_for(blk->num_dst * alpha->cols, WARPS_PER_BLOCK),
                                    BLOCK_THREADS, 0, STREAM(ctx)>>>(
            blk->indptr, blk->indices, blk->num_dst, h->rows, blk->num_edges, 1, (int)alpha->cols,
            (int)(h->cols / alpha->cols), CF32(alpha), CF32(h), CF32(dout), F32(dalpha), F32(dh));
        GD_CUDA_CHECK_LAUNCH();
    }
fail:
    OP_LEAVE();
}

gd_status gd__gat_head_mean_cuda(const gd__nn_ctx *ctx, const gd__nn_tensor *x, int64_t heads,
                                 gd__nn_tensor *out) {
    OP_ENTER();
    GD_CHECK(gd__gat_head_mean_check(ctx->device, x, heads, out));
    GD_CHECK(float32_only("gat head mean", x));
    if (out->rows * out->cols > 0) {
        head_mean_kernel<<<grid_for(out->rows * out->cols, BLOCK_THREADS), BLOCK_THREADS, 0,
                           STREAM(ctx)>>>(CF32(x), x->rows, (int)heads, (int)out->cols, F32(out));
        GD_CUDA_CHECK_LAUNCH();
    }
fail:
    OP_LEAVE();
}

gd_status gd__gat_head_mean_backward_cuda(const gd__nn_ctx *ctx, const gd__nn_tensor *dout,
                                          int64_t heads, gd__nn_tensor *dx) {
    OP_ENTER();
    GD_CHECK(gd__gat_head_mean_backward_check(ctx->device, dout, heads, dx));
    GD_CHECK(float32_only("gat head mean backward", dout));
    if (dx->rows * dx->cols > 0) {
        head_mean_backward_kernel<<<grid_for(dx->rows * dx->cols, BLOCK_THREADS), BLOCK_THREADS, 0,
                                    STREAM(ctx)>>>(CF32(dout), dout->rows, (int)heads,
                                                   (int)dout->cols, F32(dx));
        GD_CUDA_CHECK_LAUNCH();
    }
fail:
    OP_LEAVE();
}

gd_status gd__gat_edge_keys_cuda(const gd__nn_ctx *ctx, const gd_block *blk,
                                 const int64_t *node_ids, int64_t *keys) {
    OP_ENTER();
    GD_REQUIRE(blk && node_ids && keys, GD_ERR_INVALID_ARG, "gat edge keys: NULL argument");
    if (blk->num_dst > 0) {
        edge_keys_kernel<<<grid_for(blk->num_dst, BLOCK_THREADS), BLOCK_THREADS, 0,
                           STREAM(ctx)>>>(blk->indptr, blk->indices, blk->num_dst, blk->num_src,
                                          blk->num_edges, (const long long *)node_ids,
                                          (long long *)keys);
        GD_CUDA_CHECK_LAUNCH();
    }
fail:
    OP_LEAVE();
}

/* ------------------------------------------------- bipartite relations (R-GAT) */

gd_status gd__gat_bip_softmax_cuda(const gd__nn_ctx *ctx, const gd_block *blk,
                                   const gd__nn_tensor *ssrc, const gd__nn_tensor *sdst,
                                   double slope, gd__nn_tensor *alpha) {
    OP_ENTER();
    GD_CHECK(gd__gat_bip_softmax_check(ctx->device, blk, ssrc, sdst, slope, alpha));
    GD_CHECK(float32_only("gat bipartite softmax", ssrc));
    if (blk->num_dst * ssrc->cols > 0) {
        softmax_kernel<<<grid_for(blk->num_dst * ssrc->cols, BLOCK_THREADS), BLOCK_THREADS, 0,
                         STREAM(ctx)>>>(blk->indptr, blk->indices, blk->num_dst, ssrc->rows,
                                        blk->num_edges, 0, 0, (int)ssrc->cols, CF32(ssrc),
                                        CF32(sdst), (float)slope, F32(alpha));
        GD_CUDA_CHECK_LAUNCH();
    }
fail:
    OP_LEAVE();
}

gd_status gd__gat_bip_softmax_backward_cuda(const gd__nn_ctx *ctx, const gd_block *blk,
                                            const gd__nn_tensor *ssrc, const gd__nn_tensor *sdst,
                                            double slope, const gd__nn_tensor *alpha,
                                            const gd__nn_tensor *dalpha, gd__nn_tensor *dssrc,
                                            gd__nn_tensor *dsdst) {
    OP_ENTER();
    GD_CHECK(gd__gat_bip_softmax_backward_check(ctx->device, blk, ssrc, sdst, slope, alpha, dalpha,
                                                dssrc, dsdst));
    GD_CHECK(float32_only("gat bipartite softmax backward", ssrc));
    if (blk->num_dst * ssrc->cols > 0) {
        softmax_backward_kernel<<<grid_for(blk->num_dst * ssrc->cols, BLOCK_THREADS), BLOCK_THREADS,
                                  0, STREAM(ctx)>>>(
            blk->indptr, blk->indices, blk->num_dst, ssrc->rows, blk->num_edges, 0,
            (int)ssrc->cols, CF32(ssrc), CF32(sdst), (float)slope, CF32(alpha), CF32(dalpha),
            F32(dssrc), F32(dsdst));
        GD_CUDA_CHECK_LAUNCH();
    }
fail:
    OP_LEAVE();
}

gd_status gd__gat_bip_aggregate_cuda(const gd__nn_ctx *ctx, const gd_block *blk,
                                     const gd__nn_tensor *alpha, const gd__nn_tensor *h,
                                     int accumulate, gd__nn_tensor *out) {
    OP_ENTER();
    GD_CHECK(gd__gat_bip_aggregate_check(ctx->device, blk, alpha, h, out));
    GD_CHECK(float32_only("gat bipartite aggregate", h));
    if (blk->num_dst * alpha->cols > 0) {
        aggregate_kernel<<<grid_for(blk->num_dst * alpha->cols, WARPS_PER_BLOCK), BLOCK_THREADS, 0,
                           STREAM(ctx)>>>(blk->indptr, blk->indices, blk->num_dst, h->rows,
                                          blk->num_edges, 0, 0, accumulate != 0, (int)alpha->cols,
                                          (int)(h->cols / alpha->cols), CF32(alpha), CF32(h),
                                          F32(out));
        GD_CUDA_CHECK_LAUNCH();
    }
fail:
    OP_LEAVE();
}

gd_status gd__gat_bip_aggregate_backward_cuda(const gd__nn_ctx *ctx, const gd_block *blk,
                                              const gd__nn_tensor *alpha, const gd__nn_tensor *h,
                                              const gd__nn_tensor *dout, gd__nn_tensor *dalpha,
                                              gd__nn_tensor *dh) {
    OP_ENTER();
    GD_CHECK(gd__gat_bip_aggregate_backward_check(ctx->device, blk, alpha, h, dout, dalpha, dh));
    GD_CHECK(float32_only("gat bipartite aggregate backward", h));
    if (blk->num_dst * alpha->cols > 0) {
        aggregate_backward_kernel<<<grid_for(blk->num_dst * alpha->cols, WARPS_PER_BLOCK),
                                    BLOCK_THREADS, 0, STREAM(ctx)>>>(
            blk->indptr, blk->indices, blk->num_dst, h->rows, blk->num_edges, 0, (int)alpha->cols,
            (int)(h->cols / alpha->cols), CF32(alpha), CF32(h), CF32(dout), F32(dalpha), F32(dh));
        GD_CUDA_CHECK_LAUNCH();
    }
fail:
    OP_LEAVE();
}

gd_status gd__gat_bip_edge_keys_cuda(const gd__nn_ctx *ctx, const gd_block *blk,
                                     const int64_t *src_ids, const int64_t *dst_ids,
                                     int64_t *keys) {
    OP_ENTER();
    GD_REQUIRE(blk && src_ids && dst_ids && (keys || blk->num_edges == 0), GD_ERR_INVALID_ARG,
               "gat bipartite edge keys: NULL argument");
    if (blk->num_dst > 0 && blk->num_edges > 0) {
        bip_edge_keys_kernel<<<grid_for(blk->num_dst, BLOCK_THREADS), BLOCK_THREADS, 0,
                               STREAM(ctx)>>>(blk->indptr, blk->indices, blk->num_dst,
                                              blk->num_src, (const long long *)src_ids,
                                              (const long long *)dst_ids, (long long *)keys);
        GD_CUDA_CHECK_LAUNCH();
    }
fail:
    OP_LEAVE();
}
