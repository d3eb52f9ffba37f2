/*
 * What the CUDA files of the nn backend share: the launch shape, the grid-stride loops, the
 * float4 tests, the context's work buffer, the device enter/leave of every op, and the ops that
 * live in their own files. ops_cuda.cu holds the op table, the context and the elementwise ops
 * and Adam; agg_cuda.cu the neighbour aggregation; loss_cuda.cu softmax cross-entropy and
 * accuracy. A new model's ops (attention, relational aggregation) go in a file of their own
 * beside these and join the table in ops_cuda.cu. CUDA only.
 */
#ifndef GD_NN_OPS_CUDA_CUH
#define GD_NN_OPS_CUDA_CUH

#include "core/cuda.h"
#include "core/dev_error.h"
#include "nn/internal.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#define BLOCK_THREADS 256
#define WARPS_PER_BLOCK (BLOCK_THREADS / 32)
#define FULL_MASK 0xffffffffu
#define MAX_GRID 65536

/* Check a cuBLAS call inside a function with st and fail:, naming the call and the status. */
#define GD_CUBLAS_CHECK(call)                                                                      \
    do {                                                                                           \
        cublasStatus_t bs_ = (call);                                                               \
        if (bs_ != CUBLAS_STATUS_SUCCESS) {                                                        \
            st = gd__error(bs_ == CUBLAS_STATUS_ALLOC_FAILED ? GD_ERR_NO_MEMORY : GD_ERR_CUDA,     \
                           "%s failed: %s (%s)", #call, cublasGetStatusString(bs_),                \
                           cublasGetStatusName(bs_));                                              \
            goto fail;                                                                             \
        }                                                                                          \
    } while (0)

/*
 * The context's device work buffer: the loss accumulators of softmax cross-entropy (zeroed by
 * each call) and the record of the first label out of range (kept until reported; its values
 * are the row, the label and the number of classes), then, at
 * WORK_HEAD_BYTES, the partial column sums of the bias gradient (WORK_PARTIALS doubles, written
 * before they are read by each call). Ops on one context run in stream order, so they never
 * use it at the same time.
 */
typedef struct {
    double loss_sum;
    unsigned long long count;
    gd__dev_error err;
} nn_work;
#define WORK_HEAD_BYTES 256
#define WORK_PARTIALS 65536
#define WORK_BYTES (WORK_HEAD_BYTES + WORK_PARTIALS * sizeof(double))
static_assert(sizeof(nn_work) <= WORK_HEAD_BYTES, "the work buffer's head outgrew its room");
/* The one kind of error the work buffer's record holds. */
#define ERR_LABEL_RANGE 1u

#define STREAM(ctx) ((cudaStream_t)(ctx)->stream)
#define BLAS(ctx) ((cublasHandle_t)(ctx)->blas)
#define WORK(ctx) ((nn_work *)(ctx)->work)
#define PARTIALS(ctx) ((double *)((char *)(ctx)->work + WORK_HEAD_BYTES))

/* Blocks for a grid-stride loop over n items, one per thread (n > 0). */
static inline unsigned grid_for(long long n, int per_block) {
    const long long b = (n + per_block - 1) / per_block;
    return (unsigned)(b < MAX_GRID ? b : MAX_GRID);
}

#define FOR_EACH(i, n)                                                                             \
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < (n);                  \
         i += (long long)gridDim.x * blockDim.x)

/* The same with a warp per item (lanes threadIdx.x & 31 share it). */
#define FOR_EACH_WARP(i, n)                                                                        \
    for (long long i = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5; i < (n);           \
         i += ((long long)gridDim.x * blockDim.x) >> 5)

/* Whether p can be read and written as float4s (cudaMalloc'd buffers and their views can). */
static inline int aligned16(const void *p) {
    return ((uintptr_t)p & 15u) == 0;
}

/* A tensor of n elements at p moves as n / 4 float4s. */
static inline int vec4(const void *p, long long n) {
    return aligned16(p) && n % 4 == 0;
}

/*
 * Every op makes the context's device current for its calls and restores the caller's:
 * OP_ENTER at the start, OP_LEAVE on both paths (after fail:).
 */
#define OP_ENTER()                                                                                 \
    gd_status st = GD_OK;                                                                          \
    int prev_ = -1;                                                                                \
    GD_CHECK(gd__cuda_enter_device(ctx->device, &prev_))
#define OP_LEAVE()                                                                                 \
    gd__cuda_leave_device(ctx->device, prev_);                                                     \
    return st

/* ---- ops defined in agg_cuda.cu and loss_cuda.cu, entries of the op table */

gd_status gd__nn_cuda_mean_agg(const gd__nn_ctx *ctx, const gd_block *blk, const gd__nn_tensor *x,
                               gd__nn_tensor *out);
gd_status gd__nn_cuda_mean_agg_backward(const gd__nn_ctx *ctx, const gd_block *blk,
                                        const gd__nn_tensor *dout, gd__nn_tensor *dx);
gd_status gd__nn_cuda_softmax_xent(const gd__nn_ctx *ctx, const gd__nn_tensor *z,
                                   const int64_t *labels, double scale, gd__nn_tensor *loss,
                                   gd__nn_tensor *dz);
gd_status gd__nn_cuda_accuracy(const gd__nn_ctx *ctx, const gd__nn_tensor *z, const int64_t *labels,
                               int64_t *correct);

#endif /* GD_NN_OPS_CUDA_CUH */
