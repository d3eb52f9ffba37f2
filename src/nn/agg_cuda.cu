/*
 * The CUDA neighbour aggregation of the nn backend: the mean over each destination's sampled
 * in-edges, forward and backward, a warp per destination node with the lanes across the
 * feature columns (float4s when the width allows). The backward scatters with atomicAdd, so its
 * float32 sums are not bit-reproducible from run to run; the forward sums in edge order, as the
 * CPU does, and equals it bit for bit. CUDA only.
 */
#include "nn/ops_cuda.cuh"

/* A warp per destination node; each lane owns columns lane, lane + 32, ... */
__global__ void mean_agg_kernel(const int *__restrict__ indptr, const int *__restrict__ indices,
                                long long nd, const float *__restrict__ x, float *__restrict__ out,
                                long long cols) {
    const int lane = threadIdx.x & 31;
    FOR_EACH_WARP(d, nd) {
        const int e0 = indptr[d], e1 = indptr[d + 1];
        /* The same order and rounding as the CPU: sum in edge order, then times (float)1/deg. */
        const float inv = e1 > e0 ? (float)(1.0 / (double)(e1 - e0)) : 0.0f;
        float *o = out + d * cols;
        for (long long j = lane; j < cols; j += 32) {
            float s = 0.0f;
#pragma unroll 4
            for (int e = e0; e < e1; e++) s += x[(long long)indices[e] * cols + j];
            o[j] = s * inv;
        }
    }
}

/*
 * The same with float4s (cols4 = cols / 4): a row of 100 floats is one load per lane for 25
 * lanes instead of four rounds of loads. Each of the four columns is still summed in edge
 * order, so the result equals mean_agg_kernel's (and the CPU's) bit for bit.
 */
__global__ void mean_agg4_kernel(const int *__restrict__ indptr, const int *__restrict__ indices,
                                 long long nd, const float4 *__restrict__ x,
                                 float4 *__restrict__ out, int cols4) {
    const int lane = threadIdx.x & 31;
    FOR_EACH_WARP(d, nd) {
        const int e0 = indptr[d], e1 = indptr[d + 1];
        const float inv = e1 > e0 ? (float)(1.0 / (double)(e1 - e0)) : 0.0f;
        float4 *o = out + d * cols4;
        for (int j = lane; j < cols4; j += 32) {
            float4 s = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll 4
            for (int e = e0; e < e1; e++) {
                const float4 v = x[(long long)indices[e] * cols4 + j];
                s.x += v.x, s.y += v.y, s.z += v.z, s.w += v.w;
            }
            o[j] = make_float4(s.x * inv, s.y * inv, s.z * inv, s.w * inv);
        }
    }
}

/* The scatter of the backward: destinations sharing a source add with atomics. */
__global__ void mean_agg_backward_kernel(const int *__restrict__ indptr,
                                         const int *__restrict__ indices, long long nd,
                                         const float *__restrict__ dout, float *dx,
                                         long long cols) {
    const int lane = threadIdx.x & 31;
    FOR_EACH_WARP(d, nd) {
        const int e0 = indptr[d], e1 = indptr[d + 1];
        if (e1 == e0) continue;
        const float inv = (float)(1.0 / (double)(e1 - e0));
        const float *g = dout + d * cols;
        for (long long j = lane; j < cols; j += 32) {
            const float v = g[j] * inv;
            for (int e = e0; e < e1; e++) atomicAdd(dx + (long long)indices[e] * cols + j, v);
        }
    }
}

/*
 * The same with float4s. Hopper (sm_90) adds a float4 in global memory with one atomic
 * instruction, a quarter of the atomic traffic; older GPUs add its four floats one by one.
 */
__device__ __forceinline__ void atomic_add4(float4 *p, float4 v) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    atomicAdd(p, v);
#else
    float *f = (float *)p;
    atomicAdd(f, v.x);
    atomicAdd(f + 1, v.y);
    atomicAdd(f + 2, v.z);
    atomicAdd(f + 3, v.w);
#endif
}

__global__ void mean_agg_backward4_kernel(const int *__restrict__ indptr,
                                          const int *__restrict__ indices, long long nd,
                                          const float4 *__restrict__ dout, float4 *dx, int cols4) {
    const int lane = threadIdx.x & 31;
    FOR_EACH_WARP(d, nd) {
        const int e0 = indptr[d], e1 = indptr[d + 1];
        if (e1 == e0) continue;
        const float inv = (float)(1.0 / (double)(e1 - e0));
        const float4 *g = dout + d * cols4;
        for (int j = lane; j < cols4; j += 32) {
            const float4 a = g[j];
            const float4 v = make_float4(a.x * inv, a.y * inv, a.z * inv, a.w * inv);
            for (int e = e0; e < e1; e++) atomic_add4(dx + (long long)indices[e] * cols4 + j, v);
        }
    }
}

/* The mean aggregation kernels and their float4 versions, forward and backward. */
typedef void (*agg_kernel_fn)(const int *, const int *, long long, const float *, float *,
                              long long);
typedef void (*agg4_kernel_fn)(const int *, const int *, long long, const float4 *, float4 *, int);

/*
 * Launch an aggregation of in into out over blk's destination nodes, a warp per node: the
 * float4 kernel where both tensors allow it, else the scalar one. The caller's device is set.
 */
static gd_status launch_agg(const gd__nn_ctx *ctx, const gd_block *blk, agg4_kernel_fn k4,
                            agg_kernel_fn k, const void *in, void *out, long long cols) {
    gd_status st = GD_OK;
    const unsigned grid = grid_for(blk->num_dst, WARPS_PER_BLOCK);
    if (vec4(in, cols) && vec4(out, cols) && cols / 4 <= INT_MAX)
        k4<<<grid, BLOCK_THREADS, 0, STREAM(ctx)>>>(blk->indptr, blk->indices, blk->num_dst,
                                                    (const float4 *)in, (float4 *)out,
                                                    (int)(cols / 4));
    else
        k<<<grid, BLOCK_THREADS, 0, STREAM(ctx)>>>(blk->indptr, blk->indices, blk->num_dst,
                                                   (const float *)in, (float *)out, cols);
    GD_CUDA_CHECK_LAUNCH();
fail:
    return st;
}

gd_status gd__nn_cuda_mean_agg(const gd__nn_ctx *ctx, const gd_block *blk, const gd__nn_tensor *x,
                               gd__nn_tensor *out) {
    OP_ENTER();
    if (blk->num_dst > 0 && x->cols > 0)
        GD_CHECK(
            launch_agg(ctx, blk, mean_agg4_kernel, mean_agg_kernel, x->data, out->data, x->cols));
fail:
    OP_LEAVE();
}

gd_status gd__nn_cuda_mean_agg_backward(const gd__nn_ctx *ctx, const gd_block *blk,
                                        const gd__nn_tensor *dout, gd__nn_tensor *dx) {
    OP_ENTER();
    if (blk->num_edges > 0 && dout->cols > 0)
        GD_CHECK(launch_agg(ctx, blk, mean_agg_backward4_kernel, mean_agg_backward_kernel,
                            dout->data, dx->data, dout->cols));
fail:
    OP_LEAVE();
}
