/*
 * What the CUDA files of the nn backend share: the launch shape, the grid-stride loops, the
 * float4 tests, the context's work buffer, the device enter/leave of every op, and the ops that
 * live in their own files. ops_cuda.cu holds the op table, the context and the elementwise ops
 * and Adam; agg_cuda.cu the neighbour aggregation; loss_cuda.cu softmax cross-entropy and
 * accuracy; grouped_cuda.cu the grouped GEMM and bias gradient. A new model's ops (attention,
 * relational aggregation) go in a file of their own beside these and join the table in
 * ops_cuda.cu. CUDA only.
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

/* ---- the bias gradient's column sums, shared by bias_grad and its grouped form */

/*
 * Rows per chunk of the bias gradient: chunks of at least BIAS_CHUNK_ROWS rows, at most
 * BIAS_BLOCKS blocks in all (a few per SM of a large GPU), and partial sums that fit the
 * `partials` doubles given. One chunk sums straight into db. cols > 0.
 */
#define BIAS_CHUNK_ROWS 512
#define BIAS_BLOCKS 512

static inline long long bias_chunks(long long rows, long long cols, long long partials) {
    const long long col_blocks = (cols + 31) / 32;
    long long chunks = (rows + BIAS_CHUNK_ROWS - 1) / BIAS_CHUNK_ROWS;
    if (chunks > BIAS_BLOCKS / col_blocks) chunks = BIAS_BLOCKS / col_blocks;
    if (chunks > partials / cols) chunks = partials / cols;
    return chunks < 1 ? 1 : chunks;
}

/*
 * Column sums over the rows [r0, r1) of chunk `by`, columns from 32 * bx: block (32, 32),
 * threadIdx.x a column, threadIdx.y strides over the chunk's rows; the 32 partial sums of a
 * column (double, as the CPU) are added in shared memory. With one chunk (part NULL) the sum
 * goes to db (accumulate: db +=); with several each chunk's sum goes to part[chunk][column]
 * and bias_grad_finish adds them in chunk order, so the result does not depend on scheduling.
 */
static __device__ __forceinline__ void bias_grad_block(const float *__restrict__ dy, float *db,
                                                       double *part, long long rows,
                                                       long long cols, long long chunk_rows,
                                                       int accumulate, unsigned bx, unsigned by) {
    __shared__ double sum[32][33];
    const long long j = (long long)bx * 32 + threadIdx.x;
    const long long r0 = (long long)by * chunk_rows;
    const long long r1 = r0 + chunk_rows < rows ? r0 + chunk_rows : rows;
    double s = 0.0;
    if (j < cols)
        for (long long i = r0 + threadIdx.y; i < r1; i += 32) s += (double)dy[i * cols + j];
    sum[threadIdx.y][threadIdx.x] = s;
    __syncthreads();
    if (threadIdx.y == 0 && j < cols) {
        double t = 0.0;
        for (int k = 0; k < 32; k++) t += sum[k][threadIdx.x];
        if (part)
            part[(long long)by * cols + j] = t;
        else
            db[j] = (float)(accumulate ? (double)db[j] + t : t);
    }
}

/* Column j of db from the chunks' partial sums, added in chunk order. */
static __device__ __forceinline__ void bias_grad_finish(const double *__restrict__ part,
                                                        int chunks, float *db, long long cols,
                                                        long long j, int accumulate) {
    double t = 0.0;
    for (int c = 0; c < chunks; c++) t += part[(long long)c * cols + j];
    db[j] = (float)(accumulate ? (double)db[j] + t : t);
}

/* ---- ops defined in agg_cuda.cu, loss_cuda.cu and grouped_cuda.cu, entries of the op table */

gd_status gd__nn_cuda_mean_agg(const gd__nn_ctx *ctx, const gd_block *blk, const gd__nn_tensor *x,
                               gd__nn_tensor *out);
gd_status gd__nn_cuda_mean_agg_backward(const gd__nn_ctx *ctx, const gd_block *blk,
                                        const gd__nn_tensor *dout, gd__nn_tensor *dx);
gd_status gd__nn_cuda_softmax_xent(const gd__nn_ctx *ctx, const gd__nn_tensor *z,
                                   const int64_t *labels, double scale, gd__nn_tensor *loss,
                                   gd__nn_tensor *dz);
gd_status gd__nn_cuda_accuracy(const gd__nn_ctx *ctx, const gd__nn_tensor *z, const int64_t *labels,
                               int64_t *correct);
gd_status gd__nn_cuda_grouped_init(const gd__nn_ctx *ctx, gd__nn_grouped *plan);
void gd__nn_cuda_grouped_release(const gd__nn_ctx *ctx, gd__nn_grouped *plan);
gd_status gd__nn_cuda_gemm_grouped(const gd__nn_ctx *ctx, gd__nn_grouped *plan, int count,
                                   const gd__nn_gemm_group *g);
gd_status gd__nn_cuda_bias_grad_grouped(const gd__nn_ctx *ctx, int count,
                                        const gd__nn_bias_grad_group *g);

#endif /* GD_NN_OPS_CUDA_CUH */
