/*
 * The CUDA side of layer-wise inference (infer.c): the full-neighbour mean aggregation kernel,
 * and the few stream, event and copy calls the C driver needs, each checked.
 *
 * The aggregation reads neighbour rows by global id straight from the activation table, which
 * is GPU memory or pinned host memory mapped for the GPU (zero-copy over the link): the same
 * kernel serves both. A warp owns a destination node; its lanes hold 8 columns each (256 per
 * pass), load 32 of the node's indices at once and broadcast them with shuffles, and add the
 * rows edge by edge, so every column is summed in edge order from 0 and then multiplied by
 * (float)(1 / degree): the float operations of the CPU reference (gd__infer_agg_cpu) in the
 * same order, hence the same bits. The 8 independent column loads per edge keep enough reads
 * in flight for the link's latency; a hub's list is walked by one warp, in pieces when the
 * driver splits it.
 */
#include "core/cuda.h"
#include "train/infer.h"

#include <cuda_runtime.h>

#define AGG_THREADS 256
#define AGG_COLS_PER_LANE 8
#define AGG_COLS_PER_PASS (32 * AGG_COLS_PER_LANE)
#define AGG_MAX_BLOCKS (1 << 20)
#define FULL_MASK 0xffffffffu

template <typename I>
__global__ void __launch_bounds__(AGG_THREADS)
    agg_kernel(const float *__restrict__ table, long long cols,
               const long long *__restrict__ indptr, const I *__restrict__ idx, long long nd,
               long long e_begin, long long e_end, int first, int last, float *__restrict__ agg) {
    const int lane = threadIdx.x & 31;
    const long long warps = ((long long)gridDim.x * blockDim.x) >> 5;
    for (long long d = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5; d < nd;
         d += warps) {
        const long long g0 = indptr[d], g1 = indptr[d + 1];
        const long long a = g0 > e_begin ? g0 : e_begin, b = g1 < e_end ? g1 : e_end;
        const float inv = g1 > g0 ? (float)(1.0 / (double)(g1 - g0)) : 0.0f;
        float *o = agg + d * cols;
        for (long long c0 = 0; c0 < cols; c0 += AGG_COLS_PER_PASS) {
            float acc[AGG_COLS_PER_LANE];
#pragma unroll
            for (int k = 0; k < AGG_COLS_PER_LANE; k++) {
                const long long c = c0 + lane + 32 * k;
                acc[k] = first || c >= cols ? 0.0f : o[c];
            }
            for (long long base = a; base < b; base += 32) {
                /* Warp-uniform: every lane takes part in the shuffles. */
                const int cnt = b - base < 32 ? (int)(b - base) : 32;
                const long long mine = lane < cnt ? (long long)idx[base - e_begin + lane] : 0;
                for (int t = 0; t < cnt; t++) {
                    const long long r = __shfl_sync(FULL_MASK, mine, t);
                    const float *x = table + r * cols + c0 + lane;
#pragma unroll
                    for (int k = 0; k < AGG_COLS_PER_LANE; k++)
                        if (c0 + lane + 32 * k < cols) acc[k] += x[32 * k];
                }
            }
#pragma unroll
            for (int k = 0; k < AGG_COLS_PER_LANE; k++) {
                const long long c = c0 + lane + 32 * k;
                if (c < cols) o[c] = last ? acc[k] * inv : acc[k];
            }
        }
    }
}

extern "C" gd_status gd__infer_cuda_agg(void *stream, const float *table, int64_t cols,
                                        const int64_t *indptr, const void *indices,
                                        gd_dtype index_dtype, int64_t num_dst, int64_t e_begin,
                                        int64_t e_end, int first, int last, float *agg) {
    gd_status st = GD_OK;
    GD_REQUIRE(index_dtype == GD_DTYPE_INT32 || index_dtype == GD_DTYPE_INT64, GD_ERR_INVALID_ARG,
               "inference aggregation: indices are %s; expected int32 or int64",
               gd_dtype_name(index_dtype));
    GD_REQUIRE(num_dst >= 0 && cols >= 0 && e_begin <= e_end, GD_ERR_INVALID_ARG,
               "inference aggregation: %lld nodes of %lld columns over edges [%lld, %lld)",
               (long long)num_dst, (long long)cols, (long long)e_begin, (long long)e_end);
    if (num_dst == 0 || cols == 0) return GD_OK;
    {
        const long long warps_per_block = AGG_THREADS / 32;
        long long blocks = (num_dst + warps_per_block - 1) / warps_per_block;
        if (blocks > AGG_MAX_BLOCKS) blocks = AGG_MAX_BLOCKS;
        cudaStream_t s = (cudaStream_t)stream;
        if (index_dtype == GD_DTYPE_INT32)
            agg_kernel<int><<<(unsigned)blocks, AGG_THREADS, 0, s>>>(
                table, cols, (const long long *)indptr, (const int *)indices, num_dst, e_begin,
                e_end, first, last, agg);
        else
            agg_kernel<long long><<<(unsigned)blocks, AGG_THREADS, 0, s>>>(
                table, cols, (const long long *)indptr, (const long long *)indices, num_dst,
                e_begin, e_end, first, last, agg);
        GD_CUDA_CHECK_LAUNCH();
    }
fail:
    return st;
}
